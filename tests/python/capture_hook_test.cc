// PythonCaptureHook (python/capture_hook.h) over structures laid out like CPython 3.11's in
// this test's own memory: a thread state, its C frame, a data stack chunk holding a chain of
// frames. What it records, that it reads the chain from one copy of the chunk, and that bad
// pointers end the chain (or give none) instead of faulting.
#include "python/capture_hook.h"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "python/python_layout.h"

namespace hangwatch::python {
namespace {

constexpr size_t kChunkBytes = 16 * 1024;
constexpr size_t kFrameStride = 128;  // a frame and its locals in the chunk

template <typename T>
void Put(unsigned char* base, size_t offset, T v) {
  std::memcpy(base + offset, &v, sizeof(T));
}
uint64_t Addr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

class FakeThread {
 public:
  explicit FakeThread(int frames) : layout_(*TableLayout(11)) {
    tstate_.assign(512, 0);
    cframe_.assign(64, 0);
    chunk_.assign(kChunkBytes, 0);
    code_.assign(512, 0);
    Put<uint64_t>(tstate_.data(), layout_.tstate_cframe, Addr(cframe_.data()));
    Put<uint64_t>(tstate_.data(), layout_.tstate_datastack_chunk, Addr(chunk_.data()));
    Put<uint64_t>(chunk_.data(), 8, kChunkBytes);  // _PyStackChunk.size
    // Frames from the outermost (lowest) up; the innermost is the current frame.
    uint64_t previous = 0;
    for (int i = 0; i < frames; ++i) {
      unsigned char* f = chunk_.data() + 24 + static_cast<size_t>(i) * kFrameStride;
      Put<uint64_t>(f, layout_.frame_previous, previous);
      Put<uint64_t>(f, layout_.frame_code, Addr(code_.data()));
      // prev_instr: instruction i (code units of 2 bytes from co_code_adaptive).
      Put<uint64_t>(f, layout_.frame_instr, Addr(code_.data()) + layout_.code_adaptive + 2 * i);
      Put<uint8_t>(f, layout_.frame_is_entry, i == 0 ? 1 : 0);
      previous = Addr(f);
    }
    innermost_ = previous;
    Put<uint64_t>(cframe_.data(), layout_.cframe_current_frame, innermost_);
    Put<uint64_t>(tstate_.data(), layout_.tstate_datastack_top,
                  Addr(chunk_.data()) + 24 + static_cast<size_t>(frames) * kFrameStride);
  }

  const PythonLayout& layout() const { return layout_; }
  uint64_t tstate() const { return Addr(tstate_.data()); }
  uint64_t code() const { return Addr(code_.data()); }
  uint64_t innermost() const { return innermost_; }
  unsigned char* frame_bytes(uint64_t addr) { return chunk_.data() + (addr - Addr(chunk_.data())); }

 private:
  PythonLayout layout_;
  std::vector<unsigned char> tstate_, cframe_, chunk_, code_;
  uint64_t innermost_ = 0;
};

struct Recorded {
  std::vector<PythonFrame> frames;
  ChainEnd end = ChainEnd::kComplete;
};

Recorded Capture(PythonCaptureHook& hook, size_t capacity = 1 + 2 * 64) {
  std::vector<uint64_t> words(capacity);
  const size_t n = hook.Read(gettid(), unwind::MemoryView{}, words.data(), words.size());
  Recorded r;
  r.frames.resize(64);
  r.frames.resize(DecodeCaptureWords(words.data(), n, r.frames.data(), 64, &r.end));
  return r;
}

TEST(PythonCaptureHook, RecordsTheChainInnermostFirstFromOneCopyOfTheChunk) {
  FakeThread t(5);
  PythonCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(gettid(), t.tstate());
  for (int round = 0; round < 2; ++round) {  // the second reads the chunk with the tstate
    const Recorded r = Capture(hook);
    ASSERT_EQ(r.frames.size(), 5u);
    EXPECT_EQ(r.end, ChainEnd::kComplete);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(r.frames[i].code, t.code());
      EXPECT_EQ(r.frames[i].instr, static_cast<int64_t>(4 - i));
      EXPECT_EQ(r.frames[i].entry, i == 4);
    }
    EXPECT_TRUE(hook.last_used_copy()) << round;
  }
}

TEST(PythonCaptureHook, OtherThreadsAndTooLittleRoomRecordNothing) {
  FakeThread t(3);
  PythonCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(gettid(), t.tstate());
  std::vector<uint64_t> words(16);
  EXPECT_EQ(hook.Read(gettid() + 1, unwind::MemoryView{}, words.data(), words.size()), 0u);
  EXPECT_EQ(hook.Read(gettid(), unwind::MemoryView{}, words.data(), 2), 0u);
  // Room for one frame: the chain is cut (kFull), the innermost kept.
  const Recorded r = Capture(hook, CaptureWords(1));
  ASSERT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.end, ChainEnd::kFull);
  EXPECT_EQ(r.frames[0].instr, 2);
}

// A thread's outermost Python frame began a native call of the eval loop (3.11: is_entry). A
// chain that ends at a frame without that mark (read while frames were pushed or popped) lost
// its outer frames: the frames read are recorded, and the capture says the chain is partial.
TEST(PythonCaptureHook, AChainEndingAtAFrameThatBeganNoCallIsPartial) {
  FakeThread t(3);
  // The middle frame's previous is null, as if read before the push set it: the walk stops
  // there, at a frame without the entry mark.
  unsigned char* middle = t.frame_bytes(t.innermost() - kFrameStride);
  Put<uint64_t>(middle, t.layout().frame_previous, 0);
  PythonCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(gettid(), t.tstate());
  Recorded r = Capture(hook);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.end, ChainEnd::kNoEntry);
  EXPECT_FALSE(r.frames[1].entry);
  // Ending at the entry frame is whole.
  Put<uint8_t>(middle, t.layout().frame_is_entry, 1);
  r = Capture(hook);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.end, ChainEnd::kComplete);
}

TEST(PythonCaptureHook, ACycleIsBounded) {
  FakeThread t(4);
  // The outermost frame's previous points back at the innermost.
  unsigned char* outermost = t.frame_bytes(t.innermost() - 3 * kFrameStride);
  Put<uint64_t>(outermost, t.layout().frame_previous, t.innermost());
  PythonCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(gettid(), t.tstate());
  const Recorded r = Capture(hook);
  EXPECT_EQ(r.frames.size(), 64u);
  EXPECT_EQ(r.end, ChainEnd::kFull);
}

TEST(PythonCaptureHook, UnmappedPointersEndTheChainWithoutAFault) {
  // A page that is mapped, then unmapped: reading it would fault.
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  munmap(page, 4096);
  FakeThread t(3);
  // The middle frame's previous into the unmapped page.
  unsigned char* middle = t.frame_bytes(t.innermost() - kFrameStride);
  Put<uint64_t>(middle, t.layout().frame_previous, Addr(page));
  PythonCaptureHook hook(t.layout(), 64, 64 * 1024);
  hook.Watch(gettid(), t.tstate());
  Recorded r = Capture(hook);
  EXPECT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.end, ChainEnd::kUnreadable);
  // A thread state in the unmapped page: no frames at all.
  hook.Watch(gettid(), Addr(page));
  r = Capture(hook);
  EXPECT_TRUE(r.frames.empty());
}

}  // namespace
}  // namespace hangwatch::python
