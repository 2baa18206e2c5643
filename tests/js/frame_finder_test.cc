// js/frame_finder.h over a fake memory reader: V8-shaped frames in a stack copy the test lays
// out (saved frame pointer, return address, context, function, bytecode array and offset) and
// heap objects with node 20's field offsets; a frame counts only when its function and its
// SharedFunctionInfo are what their maps say.
#include "js/frame_finder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace hangwatch::js {
namespace {

constexpr uint16_t kJsFunctionType = 2066;
constexpr uint16_t kSfiType = 262;
constexpr uint16_t kStringType = 8;

V8Metadata Node20Metadata() {
  V8Metadata m;
  m.heap_object_tag = 1;
  m.heap_object_tag_mask = 3;
  m.smi_tag = 0;
  m.smi_tag_mask = 1;
  m.smi_shift = 32;
  m.tagged_size = 8;
  m.fp_function = -16;
  m.fp_context = -8;
  m.fp_bytecode_array = -32;
  m.fp_bytecode_offset = -40;
  m.type_js_function = kJsFunctionType;
  m.type_shared_function_info = kSfiType;
  m.heap_object_map = 0;
  m.map_instance_type = 12;
  m.js_function_shared = 24;
  m.sfi_name_or_scope_info = 16;
  m.sfi_script_or_debug_info = 32;
  m.bytecode_array_data = 54;
  return m;
}

// A heap of 64 KiB at kHeapBase: objects written where the test says.
class FakeHeap final : public MemoryReader {
 public:
  static constexpr uint64_t kHeapBase = 0x100000;
  FakeHeap() : bytes_(64 * 1024) {}
  bool Read(uint64_t addr, void* out, size_t n) const override {
    if (addr < kHeapBase || addr + n > kHeapBase + bytes_.size()) return false;
    std::memcpy(out, bytes_.data() + (addr - kHeapBase), n);
    return true;
  }
  void Put(uint64_t addr, uint64_t word) {
    std::memcpy(bytes_.data() + (addr - kHeapBase), &word, sizeof(word));
  }
  void Put16(uint64_t addr, uint16_t v) { std::memcpy(bytes_.data() + (addr - kHeapBase), &v, 2); }
  // A map of `type` at `at`; returns its tagged pointer.
  uint64_t Map(uint64_t at, uint16_t type) {
    Put16(at + 12, type);
    return at + 1;
  }

 private:
  std::vector<unsigned char> bytes_;
};

uint64_t Smi(int64_t v) { return static_cast<uint64_t>(v) << 32; }

class FrameFinderTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kStackBase = 0x7ff000;
  static constexpr uintptr_t kJitPc0 = 0x5000100, kJitPc1 = 0x5000200, kNativePc = 0x400100;

  void SetUp() override {
    function_map_ = heap_.Map(0x100000, kJsFunctionType);
    sfi_map_ = heap_.Map(0x100100, kSfiType);
    string_map_ = heap_.Map(0x100200, kStringType);
    // Two functions, each with its SharedFunctionInfo.
    sfi_a_ = Sfi(0x101000, 0x10aaa1);
    sfi_b_ = Sfi(0x102000, 0x10bbb1);
    function_a_ = Function(0x103000, sfi_a_);
    function_b_ = Function(0x104000, sfi_b_);
    stack_.assign(512, 0);
  }
  uint64_t Sfi(uint64_t at, uint64_t name) {
    heap_.Put(at, sfi_map_);
    heap_.Put(at + 16, name);
    heap_.Put(at + 32, 0x10ccc1);
    return at + 1;
  }
  uint64_t Function(uint64_t at, uint64_t sfi) {
    heap_.Put(at, function_map_);
    heap_.Put(at + 24, sfi);
    return at + 1;
  }
  void PutStack(uint64_t addr, uint64_t word) {
    std::memcpy(stack_.data() + (addr - kStackBase), &word, 8);
  }
  // A JS frame with frame pointer `fp` returning to `ret`.
  void PutFrame(uint64_t fp, uint64_t caller_fp, uintptr_t ret, uint64_t function) {
    PutStack(fp, caller_fp);
    PutStack(fp + 8, ret);
    PutStack(fp - 8, 0x10ddd1);  // a context: any heap object pointer
    PutStack(fp - 16, function);
  }
  unwind::MemoryView View() const {
    return unwind::MemoryView{kStackBase, stack_.size(), stack_.data()};
  }

  FakeHeap heap_;
  V8Metadata m_ = Node20Metadata();
  std::vector<unsigned char> stack_;
  uint64_t function_map_ = 0, sfi_map_ = 0, string_map_ = 0;
  uint64_t sfi_a_ = 0, sfi_b_ = 0, function_a_ = 0, function_b_ = 0;
};

TEST_F(FrameFinderTest, JsFramesAreFoundByTheSlotOfTheNextReturnAddress) {
  // frame 0 (JIT, fn b, fp 0x7ff040) <- frame 1 (JIT, fn a, fp 0x7ff080, interpreted)
  // <- frame 2 (native).
  PutFrame(kStackBase + 0x40, kStackBase + 0x80, kJitPc1, function_b_);
  PutFrame(kStackBase + 0x80, kStackBase + 0x100, kNativePc, function_a_);
  PutStack(kStackBase + 0x80 - 32, 0x105001);      // its BytecodeArray
  PutStack(kStackBase + 0x80 - 40, Smi(53 + 17));  // bytecode offset 17
  const uintptr_t pcs[] = {kJitPc0, kJitPc1, kNativePc};
  FrameFinder finder(m_, heap_, 16);
  JsFrame frames[16];
  ASSERT_EQ(finder.Find(pcs, 3, View(), frames), 2u);
  EXPECT_EQ(frames[0].index, 0u);
  EXPECT_EQ(frames[0].sfi, sfi_b_);
  EXPECT_EQ(frames[0].bytecode_offset, -1);
  EXPECT_EQ(frames[0].sfi_name_or_scope, 0x10bbb1u);
  EXPECT_EQ(frames[1].index, 1u);
  EXPECT_EQ(frames[1].sfi, sfi_a_);
  EXPECT_EQ(frames[1].bytecode_array, 0x105001u);
  EXPECT_EQ(frames[1].bytecode_offset, 17);
  // The same frame as the innermost (interrupted in a bytecode handler, not calling): its offset
  // slot is not trusted.
  const uintptr_t leaf_pcs[] = {kJitPc1, kNativePc};
  const unwind::MemoryView from_frame_a{kStackBase + 0x48, stack_.size() - 0x48,
                                        stack_.data() + 0x48};
  ASSERT_EQ(finder.Find(leaf_pcs, 2, from_frame_a, frames), 1u);
  EXPECT_EQ(frames[0].sfi, sfi_a_);
  EXPECT_EQ(frames[0].bytecode_offset, -1);
  EXPECT_EQ(frames[0].bytecode_array, 0u);
}

TEST_F(FrameFinderTest, ARecursionsRepeatedReturnAddressesAreTakenInOrder) {
  // Three frames of one function, returning twice to the same pc, then to native code.
  PutFrame(kStackBase + 0x20, kStackBase + 0x60, kJitPc1, function_a_);
  PutFrame(kStackBase + 0x60, kStackBase + 0xa0, kJitPc1, function_a_);
  PutFrame(kStackBase + 0xa0, kStackBase + 0x100, kNativePc, function_b_);
  const uintptr_t pcs[] = {kJitPc0, kJitPc1, kJitPc1, kNativePc};
  FrameFinder finder(m_, heap_, 16);
  JsFrame frames[16];
  ASSERT_EQ(finder.Find(pcs, 4, View(), frames), 3u);
  EXPECT_EQ(frames[0].sfi, sfi_a_);
  EXPECT_EQ(frames[1].sfi, sfi_a_);
  EXPECT_EQ(frames[2].sfi, sfi_b_);
  EXPECT_EQ(frames[2].index, 2u);
}

TEST_F(FrameFinderTest, ObjectsThatAreNotWhatTheirMapsSayGiveNoFrame) {
  PutFrame(kStackBase + 0x40, kStackBase + 0x80, kJitPc1, function_b_);
  PutFrame(kStackBase + 0x80, kStackBase + 0x100, kNativePc, function_a_);
  const uintptr_t pcs[] = {kJitPc0, kJitPc1, kNativePc};
  FrameFinder finder(m_, heap_, 16);
  JsFrame frames[16];
  // Function b moved by the GC: its old copy's map word is a forwarding address (untagged).
  heap_.Put(function_b_ - 1, 0x104800);
  // Function a's shared is a string, not a SharedFunctionInfo.
  heap_.Put(sfi_a_ - 1, string_map_);
  EXPECT_EQ(finder.Find(pcs, 3, View(), frames), 0u);
  // A function slot holding a Smi, or an address outside the heap: no read at all succeeds.
  heap_.Put(sfi_a_ - 1, sfi_map_);
  PutStack(kStackBase + 0x80 - 16, Smi(5));
  PutStack(kStackBase + 0x40 - 16, 0x9000001);
  EXPECT_EQ(finder.Find(pcs, 3, View(), frames), 0u);
}

TEST_F(FrameFinderTest, PcsTheFilterRefusesAreNotLookedAt) {
  PutFrame(kStackBase + 0x40, kStackBase + 0x80, kJitPc1, function_b_);
  PutFrame(kStackBase + 0x80, kStackBase + 0x100, kNativePc, function_a_);
  const uintptr_t pcs[] = {kJitPc0, kJitPc1, kNativePc};
  FrameFinder finder(m_, heap_, 16);
  finder.set_code_filter([](const void*, uintptr_t pc) { return pc == kJitPc1; }, nullptr);
  JsFrame frames[16];
  ASSERT_EQ(finder.Find(pcs, 3, View(), frames), 1u);
  EXPECT_EQ(frames[0].index, 1u);
}

TEST_F(FrameFinderTest, AReturnAddressBeyondTheCopyEndsTheSearch) {
  PutFrame(kStackBase + 0x40, kStackBase + 0x80, kJitPc1, function_b_);
  const uintptr_t pcs[] = {kJitPc0, kJitPc1, 0x777777};  // frame 2's slot is not in the copy
  FrameFinder finder(m_, heap_, 16);
  JsFrame frames[16];
  ASSERT_EQ(finder.Find(pcs, 3, View(), frames), 1u);
  EXPECT_EQ(finder.Find(pcs, 3, unwind::MemoryView{kStackBase, 8, stack_.data()}, frames), 0u);
  EXPECT_EQ(finder.Find(pcs, 0, View(), frames), 0u);
}

}  // namespace
}  // namespace hangwatch::js
