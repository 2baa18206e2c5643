// RubyCaptureHook (ruby/capture_hook.h) over structures laid out like Ruby 3.1's in this test's
// own memory: a thread, its execution context, a VM stack with control frames at its end and
// their environments' flags below them (one escaped to the heap). What it records (iseq, pc,
// FINISH; C frames left out), that a second capture of an unchanged stack takes one read, that
// changed flags are seen, and that bad pointers give no frames (or end them) instead of faulting.
#include "ruby/capture_hook.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "ruby/ruby_layout.h"
#include "unwind/self_memory.h"

namespace hangwatch::ruby {
namespace {

constexpr size_t kStackValues = 4096;
uint64_t Addr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

struct FakeFrame {
  uint64_t iseq = 0;
  uint64_t pc = 0;
  uint64_t flags = 0;  // ep[0]
  bool heap_env = false;
};

class FakeThread {
 public:
  // `frames` innermost first.
  explicit FakeThread(const std::vector<FakeFrame>& frames) : stack_(kStackValues, 0) {
    EXPECT_EQ(LayoutForVersion(3, 1, &layout_), "");
    thread_.assign(128, 0);
    ec_.assign(64, 0);
    heap_env_.assign(4, 0);
    Put(thread_.data(), layout_.thread_ec, Addr(ec_.data()));
    Put(ec_.data(), layout_.ec_vm_stack, Addr(stack_.data()));
    Put(ec_.data(), layout_.ec_vm_stack_size, kStackValues);
    const size_t words = layout_.cfp_size / 8;
    const size_t first = kStackValues - frames.size() * words;  // the innermost frame's value
    Put(ec_.data(), layout_.ec_cfp, Addr(&stack_[first]));
    for (size_t i = 0; i < frames.size(); ++i) {
      auto* f = reinterpret_cast<unsigned char*>(&stack_[first + i * words]);
      Put(f, layout_.cfp_iseq, frames[i].iseq);
      Put(f, layout_.cfp_pc, frames[i].pc);
      // Environments: the outermost frame's lowest in the VM stack, as Ruby pushes them.
      uint64_t* ep = frames[i].heap_env ? &heap_env_[1] : &stack_[8 + 16 * (frames.size() - i)];
      *ep = frames[i].flags;
      Put(f, layout_.cfp_ep, Addr(ep));
      eps_.push_back(ep);
      cfps_.push_back(f);
    }
  }
  static void Put(unsigned char* base, size_t offset, uint64_t v) {
    std::memcpy(base + offset, &v, sizeof(v));
  }

  const RubyLayout& layout() const { return layout_; }
  uint64_t thread() const { return Addr(thread_.data()); }
  unsigned char* ec() { return ec_.data(); }
  uint64_t* ep(size_t i) { return eps_[i]; }
  // Frame i's environment pointer replaced.
  void SetEp(size_t i, uint64_t addr) { Put(cfps_[i], layout_.cfp_ep, addr); }

 private:
  RubyLayout layout_;
  std::vector<unsigned char> thread_, ec_;
  std::vector<uint64_t> stack_, heap_env_;
  std::vector<uint64_t*> eps_;
  std::vector<unsigned char*> cfps_;
};

// One capture through the hook, decoded.
std::vector<RubyFrame> Capture(RubyCaptureHook& hook, FramesEnd* end) {
  uint64_t words[CaptureWords(64)];
  const unwind::MemoryView empty;
  const size_t n = hook.Read(getpid(), empty, words, CaptureWords(64));
  std::vector<RubyFrame> out(64);
  out.resize(DecodeCaptureWords(words, n, out.data(), out.size(), end));
  return out;
}

class RubyCaptureHookTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(unwind::PrepareSelfMemory(), unwind::SelfMemoryMethod::kNone); }
};

TEST_F(RubyCaptureHookTest, RecordsRubyFramesWithFinishAndSkipsCFrames) {
  FakeThread t({{0x1000, 0x2008, 0x11110001, false},
                {0, 0, 0x55550081, false},  // a C method's frame: no iseq, no pc
                {0x3000, 0x4010, 0x22220001 | kFrameFlagFinish, false},
                {0x5000, 0x6018, 0x66660081, false},  // a C block's (iseq and CFRAME set)
                {0x7000, 0x8020, 0x11110001 | kFrameFlagFinish, true}});
  RubyCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(getpid(), t.thread());
  FramesEnd end = FramesEnd::kUnreadable;
  std::vector<RubyFrame> f = Capture(hook, &end);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(end, FramesEnd::kComplete);
  EXPECT_EQ(f[0].iseq, 0x1000u);
  EXPECT_EQ(f[0].pc, 0x2008u);
  EXPECT_FALSE(f[0].finish);
  EXPECT_EQ(f[1].iseq, 0x3000u);
  EXPECT_TRUE(f[1].finish);
  EXPECT_EQ(f[2].iseq, 0x7000u);
  EXPECT_TRUE(f[2].finish);
  EXPECT_FALSE(hook.last_one_read());
  // Unchanged: one read, the same frames.
  f = Capture(hook, &end);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_TRUE(hook.last_used_copy());
  EXPECT_TRUE(hook.last_one_read());
  // Flags changed (in the VM stack and on the heap) are seen at the next capture.
  *t.ep(0) |= kFrameFlagFinish;
  *t.ep(4) &= ~kFrameFlagFinish;
  f = Capture(hook, &end);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_TRUE(f[0].finish);
  EXPECT_FALSE(f[2].finish);
}

TEST_F(RubyCaptureHookTest, OnlyTheWatchedThread) {
  FakeThread t({{0x1000, 0x2008, 0x11110001, false}});
  RubyCaptureHook hook(t.layout(), 64, 64 * 1024);
  uint64_t words[CaptureWords(4)];
  const unwind::MemoryView empty;
  EXPECT_EQ(hook.Read(getpid(), empty, words, CaptureWords(4)), 0u);  // none watched
  hook.Watch(getpid(), t.thread());
  EXPECT_EQ(hook.Read(getpid() + 1, empty, words, CaptureWords(4)), 0u);
  EXPECT_EQ(hook.Read(getpid(), empty, words, CaptureWords(4)), CaptureWords(1));
}

TEST_F(RubyCaptureHookTest, MoreFramesThanRoomEndFull) {
  std::vector<FakeFrame> frames;
  for (int i = 0; i < 10; ++i) frames.push_back({0x1000u + 8u * i, 0x2008, 0x11110001, false});
  FakeThread t(frames);
  RubyCaptureHook hook(t.layout(), 4, 64 * 1024);
  hook.Watch(getpid(), t.thread());
  FramesEnd end = FramesEnd::kComplete;
  EXPECT_EQ(Capture(hook, &end).size(), 4u);
  EXPECT_EQ(end, FramesEnd::kFull);
}

TEST_F(RubyCaptureHookTest, BadPointersGiveNoFramesOrEndThem) {
  // An unmapped page: as garbage a pointer can be, without faulting the reader.
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  FakeThread t({{0x1000, 0x2008, 0x11110001, false}, {0x3000, 0x4010, 0x11110001, false}});
  RubyLayout layout = t.layout();
  {
    RubyCaptureHook hook(layout, 64, 64 * 1024);
    hook.Watch(getpid(), Addr(page));  // the thread itself unreadable
    FramesEnd end = FramesEnd::kComplete;
    EXPECT_TRUE(Capture(hook, &end).empty());
    EXPECT_EQ(end, FramesEnd::kUnreadable);
  }
  {
    RubyCaptureHook hook(layout, 64, 64 * 1024);
    hook.Watch(getpid(), t.thread());
    FakeThread::Put(t.ec(), layout.ec_vm_stack_size, uint64_t{1} << 40);  // no VM stack
    FramesEnd end = FramesEnd::kComplete;
    EXPECT_TRUE(Capture(hook, &end).empty());
    EXPECT_EQ(end, FramesEnd::kBadStack);
    FakeThread::Put(t.ec(), layout.ec_vm_stack_size, kStackValues);
  }
  {
    // The outer frame's environment gone (on an unmapped page): the chain ends before it.
    FakeThread u({{0x1000, 0x2008, 0x11110001, false}, {0x3000, 0x4010, 0x11110001, true}});
    RubyCaptureHook hook(layout, 64, 64 * 1024);
    hook.Watch(getpid(), u.thread());
    FramesEnd end = FramesEnd::kComplete;
    ASSERT_EQ(Capture(hook, &end).size(), 2u);
    u.SetEp(1, Addr(page));
    std::vector<RubyFrame> f = Capture(hook, &end);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].iseq, 0x1000u);
    EXPECT_EQ(end, FramesEnd::kUnreadable);
  }
  munmap(page, 4096);
}

}  // namespace
}  // namespace hangwatch::ruby
