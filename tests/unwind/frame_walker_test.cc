// WalkFramePointers over fake stacks: known chains, adversarial chains, and 100,000 random ones
// laid out in memory fenced by PROT_NONE pages, so that a read even one byte outside the view
// crashes the test instead of passing silently.
#include "unwind/frame_walker.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

using hangwatch::unwind::MemoryView;
using hangwatch::unwind::Registers;
using hangwatch::unwind::WalkFramePointers;
using hangwatch::unwind::WalkResult;

namespace {

constexpr size_t kWord = sizeof(uintptr_t);

// A fake stack: `pages` readable pages between two PROT_NONE guard pages. The view maps target
// addresses [base, base + size) onto exactly the readable pages.
class FencedStack {
 public:
  FencedStack(size_t pages, uintptr_t base) : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    size_ = pages * page_;
    mapping_ = mmap(nullptr, size_ + 2 * page_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
      std::abort();
    }
    data_ = static_cast<unsigned char*>(mapping_) + page_;
    if (mprotect(data_, size_, PROT_READ | PROT_WRITE) != 0) {
      std::abort();
    }
    base_ = base;
  }
  ~FencedStack() { munmap(mapping_, size_ + 2 * page_); }

  MemoryView view() const { return MemoryView{base_, size_, data_}; }
  uintptr_t base() const { return base_; }
  size_t size() const { return size_; }
  void Put(uintptr_t addr, uintptr_t value) {
    ASSERT_TRUE(view().Contains(addr, kWord));
    std::memcpy(data_ + (addr - base_), &value, kWord);
  }
  unsigned char* data() { return data_; }

 private:
  size_t page_;
  size_t size_ = 0;
  void* mapping_ = nullptr;
  unsigned char* data_ = nullptr;
  uintptr_t base_ = 0;
};

// An independent, deliberately naive model of the walk's contract, to compare against.
std::vector<uintptr_t> ReferenceWalk(const MemoryView& view, const Registers& regs,
                                     size_t max_frames, bool* truncated) {
  std::vector<uintptr_t> out;
  *truncated = false;
  if (max_frames == 0) {
    *truncated = true;
    return out;
  }
  auto read = [&](unsigned __int128 addr, uintptr_t* value) {
    const unsigned __int128 lo = view.base;
    const unsigned __int128 hi = lo + view.size;
    if (addr < lo || addr + kWord > hi) {
      return false;
    }
    std::memcpy(value, view.data + static_cast<size_t>(addr - lo), kWord);
    return true;
  };
  auto record = [&](uintptr_t fp, uintptr_t* next, uintptr_t* ret) {
    return fp % kWord == 0 && read(fp, next) &&
           read(static_cast<unsigned __int128>(fp) + kWord, ret);
  };
  out.push_back(regs.pc);
  uintptr_t fp = regs.fp, next = 0, ret = 0;
  bool ok = record(fp, &next, &ret);
  if (regs.lr != 0 && (!ok || regs.lr != ret)) {
    if (out.size() == max_frames) {
      *truncated = true;
      return out;
    }
    out.push_back(regs.lr);
  }
  while (ok && ret != 0) {
    if (out.size() == max_frames) {
      *truncated = true;
      break;
    }
    out.push_back(ret);
    if (next <= fp) {
      break;
    }
    fp = next;
    ok = record(fp, &next, &ret);
  }
  return out;
}

std::vector<uintptr_t> Walk(const MemoryView& view, const Registers& regs, size_t max_frames,
                            WalkResult* result) {
  std::vector<uintptr_t> frames(max_frames + 1, 0xdeadbeef);
  *result = WalkFramePointers(view, regs, frames.data(), max_frames);
  EXPECT_LE(result->num_frames, max_frames);
  EXPECT_EQ(frames[max_frames], 0xdeadbeefu) << "wrote past max_frames";
  frames.resize(result->num_frames);
  return frames;
}

TEST(FrameWalkerTest, FollowsAWellFormedChainToItsEnd) {
  FencedStack stack(1, 0x7ffd0000);
  const uintptr_t b = stack.base();
  // Three records, increasing, the outermost with a zero return address (chain end).
  stack.Put(b + 0x100, b + 0x200);
  stack.Put(b + 0x108, 0x401111);
  stack.Put(b + 0x200, b + 0x300);
  stack.Put(b + 0x208, 0x402222);
  stack.Put(b + 0x300, 0);
  stack.Put(b + 0x308, 0);
  Registers regs{.pc = 0x400000, .sp = b + 0x80, .fp = b + 0x100, .lr = 0};
  WalkResult result;
  const auto frames = Walk(stack.view(), regs, 64, &result);
  EXPECT_EQ(frames, (std::vector<uintptr_t>{0x400000, 0x401111, 0x402222}));
  EXPECT_FALSE(result.truncated);
}

TEST(FrameWalkerTest, StopsAtLoopsBackwardPointersMisalignmentAndBounds) {
  FencedStack stack(1, 0x10000);
  const uintptr_t b = stack.base();
  const Registers regs{.pc = 1, .sp = b, .fp = b + 0x100, .lr = 0};
  struct Case {
    const char* name;
    uintptr_t next_fp;
    size_t expected_frames;  // pc + the first record's return address (+ what follows)
  } cases[] = {
      {"self loop", b + 0x100, 2},
      {"backward", b + 0x40, 2},
      {"misaligned", b + 0x203, 2},
      {"past the end", b + stack.size(), 2},
      {"last word: record straddles the end", b + stack.size() - kWord, 2},
      {"wraps around", UINTPTR_MAX - 7, 2},
      {"null", 0, 2},
  };
  for (const Case& c : cases) {
    std::memset(stack.data(), 0, stack.size());
    stack.Put(b + 0x100, c.next_fp);
    stack.Put(b + 0x108, 0x4444);
    WalkResult result;
    const auto frames = Walk(stack.view(), regs, 64, &result);
    EXPECT_EQ(frames.size(), c.expected_frames) << c.name;
    EXPECT_FALSE(result.truncated) << c.name;
  }
  // A first fp outside the view, misaligned, or in the last word: only the pc.
  for (uintptr_t fp : {uintptr_t{0}, b - 16, b + 1, b + stack.size() - kWord, b + stack.size()}) {
    WalkResult result;
    Registers r = regs;
    r.fp = fp;
    EXPECT_EQ(Walk(stack.view(), r, 64, &result).size(), 1u) << std::hex << fp;
  }
}

TEST(FrameWalkerTest, LinkRegisterAddsTheLeafCallerOnce) {
  FencedStack stack(1, 0x20000);
  const uintptr_t b = stack.base();
  stack.Put(b + 0x100, 0);
  stack.Put(b + 0x108, 0x5555);
  WalkResult result;
  // lr differs from the record's return address: interrupted leaf, lr is its caller.
  auto frames = Walk(stack.view(), {.pc = 1, .sp = b, .fp = b + 0x100, .lr = 0x7777}, 64, &result);
  EXPECT_EQ(frames, (std::vector<uintptr_t>{1, 0x7777, 0x5555}));
  // lr equals it: not repeated.
  frames = Walk(stack.view(), {.pc = 1, .sp = b, .fp = b + 0x100, .lr = 0x5555}, 64, &result);
  EXPECT_EQ(frames, (std::vector<uintptr_t>{1, 0x5555}));
}

TEST(FrameWalkerTest, TruncatesAtMaxFrames) {
  FencedStack stack(4, 0x30000);
  const uintptr_t b = stack.base();
  for (uintptr_t fp = b; fp + 32 <= b + stack.size(); fp += 16) {
    stack.Put(fp, fp + 16);
    stack.Put(fp + 8, 0x1000 + fp);
  }
  WalkResult result;
  const auto frames = Walk(stack.view(), {.pc = 1, .sp = b, .fp = b, .lr = 0}, 100, &result);
  EXPECT_EQ(frames.size(), 100u);
  EXPECT_TRUE(result.truncated);
  Walk(stack.view(), {.pc = 1, .sp = b, .fp = b, .lr = 0}, 0, &result);
  EXPECT_EQ(result.num_frames, 0u);
}

// 100,000 chains drawn from a distribution that favours the dangerous cases: pointers into the
// view (aligned or not, forward, backward, self), to its last bytes, just outside it, wrapping
// values; views placed at address 0 and at the very top of the address space. The result must
// match the reference model exactly; any read outside the view hits a guard page.
TEST(FrameWalkerTest, RandomAndAdversarialChainsNeverEscapeTheView) {
  std::mt19937_64 rng(20261121);
  const uintptr_t kBases[] = {0x0, 0x7ffc12340000, UINTPTR_MAX - 4 * 4096 + 1, 0x1000};
  std::vector<FencedStack*> stacks;
  for (uintptr_t base : kBases) {
    stacks.push_back(new FencedStack(4, base));
  }

  auto pick = [&](const FencedStack& s, uintptr_t fp) -> uintptr_t {
    const uintptr_t b = s.base();
    const uintptr_t size = s.size();
    switch (rng() % 24) {
      case 0:
        return rng();  // anything
      case 1:
        return 0;
      case 2:
        return fp;  // self loop
      case 3:
        return fp - 8 * (1 + rng() % 8);  // backward
      case 4:
      case 5:
      case 6:
        return fp + 16 * (1 + rng() % 16);  // forward, plausible
      case 7:
        return fp + 1 + rng() % 15;  // forward, misaligned
      case 8:
        return b + size - kWord * (rng() % 3);  // the last words and one past the end
      case 9:
        return b - kWord * (rng() % 3);  // just below the view
      case 10:
        return b + (rng() % size);  // anywhere inside, any alignment
      case 11:
        return UINTPTR_MAX - (rng() % 32);  // wrap-around bait
      default:
        return fp + 16 * (1 + rng() % 4);  // mostly good records, so that walks get long
    }
  };

  size_t long_walks = 0;
  size_t truncated_walks = 0;
  for (int iteration = 0; iteration < 100'000; ++iteration) {
    FencedStack& s = *stacks[static_cast<size_t>(iteration) % stacks.size()];
    const uintptr_t b = s.base();
    // Lay out a chain from a random start, mixing good records with adversarial ones.
    auto* words = reinterpret_cast<uintptr_t*>(s.data());
    const size_t num_words = s.size() / kWord;
    if (iteration % 64 == 0) {
      for (size_t i = 0; i < num_words; ++i) {
        words[i] = rng() % 4 == 0 ? rng() : 0;
      }
    }
    uintptr_t fp = b + kWord * 2 * (rng() % (num_words / 4));
    const uintptr_t start = fp;
    for (int k = 0; k < 40; ++k) {
      const uintptr_t next = pick(s, fp);
      if (s.view().Contains(fp, 2 * kWord) && fp % kWord == 0) {
        words[(fp - b) / kWord] = next;
        words[(fp - b) / kWord + 1] = rng() % 50 == 0 ? 0 : (rng() | 1);
      }
      fp = next;
    }
    Registers regs;
    regs.pc = rng();
    regs.sp = b;
    regs.fp = rng() % 8 == 0 ? pick(s, start) : start;
    regs.lr = rng() % 4 == 0 ? rng() : 0;
    const size_t max_frames = 1 + rng() % 300;

    WalkResult result;
    const auto frames = Walk(s.view(), regs, max_frames, &result);
    bool expected_truncated = false;
    const auto expected = ReferenceWalk(s.view(), regs, max_frames, &expected_truncated);
    ASSERT_EQ(frames, expected) << "iteration " << iteration;
    ASSERT_EQ(result.truncated, expected_truncated) << "iteration " << iteration;
    long_walks += frames.size() >= 10 ? 1 : 0;
    truncated_walks += result.truncated ? 1 : 0;
  }
  for (FencedStack* s : stacks) {
    delete s;
  }
  // The distribution must actually produce long walks, not just stop at the first record.
  EXPECT_GT(long_walks, 2'000u);
  EXPECT_GT(truncated_walks, 500u);
}

}  // namespace
