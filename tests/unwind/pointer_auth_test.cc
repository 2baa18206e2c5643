// Pointer-authentication stripping and the frame walk over an arm64 stack whose return
// addresses are signed (arm64e layout: frame record = {saved x29, saved x30}, x29 -> record).
#include "unwind/pointer_auth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace hangwatch::unwind {
namespace {

// A macOS arm64 user address has 47 significant bits; the signature sits above them.
constexpr unsigned kMacAddressBits = 47;
uintptr_t StripMac(uintptr_t value) { return StripPointerAuthBits(value, kMacAddressBits); }

// Signs `addr` the way it looks after pacibsp: a signature in bits [47, 55) and, here, a
// nonzero top byte as well, so both parts must be cleared.
constexpr uintptr_t Sign(uintptr_t addr, uintptr_t salt) {
  return addr | (((salt * 0x9e37u) & 0xff) << 47) | (uintptr_t{0xa5} << 56);
}

// Stack bytes at a fictional target address, filled word by word.
class FakeStack {
 public:
  FakeStack(uintptr_t base, size_t size) : base_(base), bytes_(size, 0) {}
  void Put(uintptr_t addr, uintptr_t value) {
    ASSERT_GE(addr, base_);
    ASSERT_LE(addr - base_ + sizeof(value), bytes_.size());
    std::memcpy(bytes_.data() + (addr - base_), &value, sizeof(value));
  }
  // Writes an arm64 frame record {caller's fp, return address} at `fp`.
  void Record(uintptr_t fp, uintptr_t caller_fp, uintptr_t ret) {
    Put(fp, caller_fp);
    Put(fp + sizeof(uintptr_t), ret);
  }
  MemoryView view() const { return MemoryView{base_, bytes_.size(), bytes_.data()}; }

 private:
  uintptr_t base_;
  std::vector<unsigned char> bytes_;
};

static_assert(sizeof(uintptr_t) == 8, "the fixtures model a 64-bit stack");

constexpr uintptr_t kStackBase = 0x16f5f0000;  // where dyld puts the main stack on arm64 macOS
constexpr uintptr_t kPc = 0x100003f10;
constexpr uintptr_t kCaller1 = 0x100003e7c;
constexpr uintptr_t kCaller2 = 0x100003d00;
constexpr uintptr_t kCaller3 = 0x18a2c60b4;  // in the shared cache (libdyld start)

TEST(StripPointerAuthBits, KeepsPlainUserAddresses) {
  EXPECT_EQ(StripPointerAuthBits(kPc, kMacAddressBits), kPc);
  EXPECT_EQ(StripPointerAuthBits(0x7ffffdffffff, kMacAddressBits), uintptr_t{0x7ffffdffffff});
}

TEST(StripPointerAuthBits, ClearsSignatureAndTopByte) {
  const uintptr_t signed_ret = Sign(kCaller1, 3);
  ASSERT_NE(signed_ret, kCaller1);
  EXPECT_EQ(StripPointerAuthBits(signed_ret, kMacAddressBits), kCaller1);
  EXPECT_EQ(StripPointerAuthBits(uintptr_t{0x2d} << 56 | kCaller1, 48), kCaller1);  // tag only
  // iOS: 36-bit user addresses, signature starting at bit 36.
  EXPECT_EQ(StripPointerAuthBits(uintptr_t{0x7f3} << 36 | 0x1'0000'8000, 36),
            uintptr_t{0x1'0000'8000} & ((uintptr_t{1} << 36) - 1));
}

TEST(StripPointerAuthBits, FullWidthIsIdentity) {
  EXPECT_EQ(StripPointerAuthBits(~uintptr_t{0}, 64), ~uintptr_t{0});
  EXPECT_EQ(StripPointerAuthBits(~uintptr_t{0}, 200), ~uintptr_t{0});
  EXPECT_EQ(StripPointerAuthBits(~uintptr_t{0}, 0), uintptr_t{0});
}

TEST(StripPointerAuth, HostRule) {
  // A plain code address of this process is never changed, whatever the host.
  const auto self = reinterpret_cast<uintptr_t>(&StripMac);
  EXPECT_EQ(StripPointerAuth(self), self);
#if defined(__aarch64__) && !defined(__APPLE__)
  EXPECT_EQ(UserAddressBits(), 48u);
  EXPECT_EQ(StripPointerAuth(uintptr_t{0x007b} << 48 | self), self);
#elif defined(__x86_64__)
  EXPECT_EQ(UserAddressBits(), 0u);
  EXPECT_EQ(StripPointerAuth(uintptr_t{0x007b} << 48 | self), uintptr_t{0x007b} << 48 | self);
#endif
}

// main -> f1 -> f2 -> interrupted in f3, which has already pushed its frame record: lr is the
// same (signed) return address as the one in f3's record and must appear once.
TEST(WalkFramePointersStripped, SignedChainWithSavedLrReportsEachCallerOnce) {
  FakeStack stack(kStackBase, 0x400);
  const uintptr_t fp3 = kStackBase + 0x40;
  const uintptr_t fp2 = kStackBase + 0x100;
  const uintptr_t fp1 = kStackBase + 0x200;
  stack.Record(fp3, fp2, Sign(kCaller1, 1));
  stack.Record(fp2, fp1, Sign(kCaller2, 2));
  stack.Record(fp1, 0, Sign(kCaller3, 3));  // outermost: caller fp 0 ends the chain

  Registers regs;
  regs.pc = kPc;
  regs.sp = kStackBase + 0x30;
  regs.fp = fp3;
  regs.lr = Sign(kCaller1, 1);

  uintptr_t frames[16] = {};
  const WalkResult result = WalkFramePointersStripped(stack.view(), regs, frames, 16, &StripMac);
  ASSERT_EQ(result.num_frames, 4u);
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(frames[0], kPc);
  EXPECT_EQ(frames[1], kCaller1);
  EXPECT_EQ(frames[2], kCaller2);
  EXPECT_EQ(frames[3], kCaller3);
}

// The plain walker, given the same signed stack, cannot tell that lr and the saved return
// address are one frame: this is the failure the stripped walk exists for.
TEST(WalkFramePointersStripped, PlainWalkerWouldDuplicateTheSignedCaller) {
  FakeStack stack(kStackBase, 0x100);
  const uintptr_t fp = kStackBase + 0x40;
  stack.Record(fp, 0, Sign(kCaller1, 5));
  Registers regs{kPc, kStackBase + 0x30, fp, Sign(kCaller1, 9)};  // lr re-signed differently
  uintptr_t frames[8] = {};
  const WalkResult plain = WalkFramePointers(stack.view(), regs, frames, 8);
  EXPECT_EQ(plain.num_frames, 3u);
  const WalkResult stripped = WalkFramePointersStripped(stack.view(), regs, frames, 8, &StripMac);
  ASSERT_EQ(stripped.num_frames, 2u);
  EXPECT_EQ(frames[1], kCaller1);
}

// Interrupted in a leaf (no frame record of its own): lr is its caller and comes before the
// callers found in the chain.
TEST(WalkFramePointersStripped, LeafFunctionReportsLrAsFirstCaller) {
  FakeStack stack(kStackBase, 0x400);
  const uintptr_t fp2 = kStackBase + 0x100;
  const uintptr_t fp1 = kStackBase + 0x200;
  stack.Record(fp2, fp1, Sign(kCaller2, 2));
  stack.Record(fp1, 0, Sign(kCaller3, 3));
  Registers regs{kPc, kStackBase + 0xf0, fp2, Sign(kCaller1, 1)};

  uintptr_t frames[16] = {};
  const WalkResult result = WalkFramePointersStripped(stack.view(), regs, frames, 16, &StripMac);
  ASSERT_EQ(result.num_frames, 4u);
  EXPECT_EQ(frames[0], kPc);
  EXPECT_EQ(frames[1], kCaller1);
  EXPECT_EQ(frames[2], kCaller2);
  EXPECT_EQ(frames[3], kCaller3);
}

TEST(WalkFramePointersStripped, MisalignedOrOutsideFpStillReportsLr) {
  FakeStack stack(kStackBase, 0x100);
  stack.Record(kStackBase + 0x40, 0, Sign(kCaller1, 1));
  uintptr_t frames[8] = {};
  // fp misaligned by 4: the record is not trusted, even though the bytes there match lr.
  Registers misaligned{kPc, kStackBase, kStackBase + 0x44, Sign(kCaller1, 1)};
  WalkResult result = WalkFramePointersStripped(stack.view(), misaligned, frames, 8, &StripMac);
  ASSERT_EQ(result.num_frames, 2u);
  EXPECT_EQ(frames[1], kCaller1);
  // fp outside the copied slice.
  Registers outside{kPc, kStackBase, kStackBase + 0x1000, Sign(kCaller2, 1)};
  result = WalkFramePointersStripped(stack.view(), outside, frames, 8, &StripMac);
  ASSERT_EQ(result.num_frames, 2u);
  EXPECT_EQ(frames[1], kCaller2);
}

TEST(WalkFramePointersStripped, LoopingChainEndsAndTruncationIsReported) {
  FakeStack stack(kStackBase, 0x200);
  const uintptr_t a = kStackBase + 0x40;
  const uintptr_t b = kStackBase + 0x80;
  stack.Record(a, b, Sign(kCaller1, 1));
  stack.Record(b, a, Sign(kCaller2, 2));  // points back down: garbage, the walk must stop
  Registers regs{kPc, kStackBase, a, 0};
  uintptr_t frames[16] = {};
  WalkResult result = WalkFramePointersStripped(stack.view(), regs, frames, 16, &StripMac);
  EXPECT_EQ(result.num_frames, 3u);
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(frames[2], kCaller2);

  result = WalkFramePointersStripped(stack.view(), regs, frames, 2, &StripMac);
  EXPECT_EQ(result.num_frames, 2u);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(frames[1], kCaller1);
}

TEST(WalkFramePointersStripped, DefaultStripIsTheHostRule) {
  FakeStack stack(kStackBase, 0x100);
  stack.Record(kStackBase + 0x40, 0, kCaller1);
  Registers regs{kPc, kStackBase, kStackBase + 0x40, kCaller1};
  uintptr_t frames[8] = {};
  const WalkResult result = WalkFramePointersStripped(stack.view(), regs, frames, 8);
  ASSERT_EQ(result.num_frames, 2u);
  EXPECT_EQ(frames[0], StripPointerAuth(kPc));
  EXPECT_EQ(frames[1], StripPointerAuth(kCaller1));
}

}  // namespace
}  // namespace hangwatch::unwind
