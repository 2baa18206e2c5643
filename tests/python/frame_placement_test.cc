// PlacePythonFrames (python/frame_placement.h): Python frames in place of the eval-loop frames,
// one group per native call; and CopyReader (python/copy_reader.h): reads from the copy or the
// fallback.
#include "python/frame_placement.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "python/copy_reader.h"

namespace hangwatch::python {
namespace {

using M = NativeMark;

// "n0 p0 p1 n2": native i / Python i, in order.
std::string Place(const std::vector<M>& marks, const std::vector<bool>& entries,
                  size_t capacity = 64, size_t* unplaced = nullptr) {
  std::vector<PythonFrame> py(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) py[i].entry = entries[i];
  std::vector<PlacedFrame> out(capacity);
  const Placement p =
      PlacePythonFrames(marks.data(), marks.size(), py.data(), py.size(), out.data(), capacity);
  if (unplaced != nullptr) *unplaced = p.unplaced;
  std::string s;
  for (size_t i = 0; i < p.size; ++i) {
    if (!s.empty()) s += " ";
    s += (out[i].python ? "p" : "n") + std::to_string(out[i].index);
  }
  return s;
}

TEST(FramePlacement, EachEvalLoopFrameTakesOneGroup) {
  // Two native eval-loop calls: p0 p1 (p1 entry) replace n1, p2 (entry) replaces n3.
  EXPECT_EQ(
      Place({M::kOther, M::kEvalLoop, M::kOther, M::kEvalLoop, M::kOther}, {false, true, true}),
      "n0 p0 p1 n2 p2 n4");
}

TEST(FramePlacement, TheInterruptedEvalLoopIsReplacedToo) {
  EXPECT_EQ(Place({M::kEvalLoop, M::kOther}, {true}), "p0 n1");
}

TEST(FramePlacement, InlinedEntriesGoWithTheirReplacedFrame) {
  EXPECT_EQ(
      Place({M::kEvalLoop, M::kSameAsPrevious, M::kOther, M::kOther, M::kSameAsPrevious}, {true}),
      "p0 n2 n3 n4");
}

TEST(FramePlacement, LeftoverGroupsGoAfterTheNativeFrames) {
  size_t unplaced = 0;
  EXPECT_EQ(Place({M::kOther, M::kEvalLoop}, {true, false, true}, 64, &unplaced), "n0 p0 p1 p2");
  EXPECT_EQ(unplaced, 2u);
}

TEST(FramePlacement, EvalLoopFramesBeyondThePythonFramesStay) {
  EXPECT_EQ(Place({M::kEvalLoop, M::kEvalLoop, M::kSameAsPrevious}, {true}), "p0 n1 n2");
}

TEST(FramePlacement, CapacityCutsTheOutermost) {
  EXPECT_EQ(Place({M::kOther, M::kEvalLoop, M::kOther}, {false, true}, 3), "n0 p0 p1");
}

TEST(FramePlacement, InEvalLoopTakesReturnAddressesAsTheCallBefore) {
  EXPECT_TRUE(InEvalLoop(0x1000, true, 0x1000, 0x2000));
  EXPECT_FALSE(InEvalLoop(0x1000, false, 0x1000, 0x2000));  // the call was at 0xfff
  EXPECT_TRUE(InEvalLoop(0x2000, false, 0x1000, 0x2000));
  EXPECT_FALSE(InEvalLoop(0x1800, true, 0, 0));  // unknown eval loop
}

class ArrayReader : public MemoryReader {
 public:
  ArrayReader(uint64_t base, std::vector<unsigned char> bytes)
      : base_(base), bytes_(std::move(bytes)) {}
  bool Read(uint64_t addr, void* out, size_t n) const override {
    ++reads;
    if (addr < base_ || addr - base_ + n > bytes_.size()) return false;
    std::memcpy(out, bytes_.data() + (addr - base_), n);
    return true;
  }
  mutable int reads = 0;

 private:
  uint64_t base_;
  std::vector<unsigned char> bytes_;
};

TEST(CopyReader, ServesReadsInsideTheCopyWithoutTheFallback) {
  std::vector<unsigned char> bytes(256);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i);
  ArrayReader memory(0x1000, bytes);
  CopyReader copy(memory, 64);
  ASSERT_TRUE(copy.Load(0x1010, 1000));  // clamped to the capacity
  EXPECT_EQ(copy.copy_size(), 64u);
  EXPECT_EQ(memory.reads, 1);
  unsigned char b[8];
  ASSERT_TRUE(copy.Read(0x1010 + 56, b, 8));  // the copy's last 8 bytes
  EXPECT_EQ(b[0], 0x10 + 56);
  EXPECT_EQ(memory.reads, 1);
  ASSERT_TRUE(copy.Read(0x1010 + 60, b, 8));  // straddles the end: the fallback
  EXPECT_EQ(b[0], 0x10 + 60);
  EXPECT_EQ(memory.reads, 2);
  EXPECT_FALSE(copy.Read(0x5000, b, 8));
  EXPECT_FALSE(copy.Load(0x5000, 8));  // failed: no copy kept
  EXPECT_EQ(copy.copy_size(), 0u);
}

}  // namespace
}  // namespace hangwatch::python
