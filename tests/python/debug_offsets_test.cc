// python/debug_offsets.h: 3.13's layout from its own _Py_DebugOffsets. The values below are
// those of pyenv's 3.13.0 on x86_64, as its _PyRuntime holds them; the live interpreters are
// read by frame_chain_test.
#include "python/debug_offsets.h"

#include <cstring>

#include "gtest/gtest.h"

namespace hangwatch::python {
namespace {

DebugOffsets313 Python3130() {
  DebugOffsets313 d;
  std::memset(&d, 0, sizeof(d));
  std::memcpy(d.cookie, "xdebugpy", 8);
  d.version = 0x030d00f0;
  d.runtime_state = {283320, 608, 632};
  d.interpreter_state = {194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0, 7768, 7760};
  d.thread_state = {304, 0, 8, 16, 72, 152, 160, 232, 32};
  d.interpreter_frame = {80, 8, 0, 56, 72, 70};
  d.code_object = {208, 112, 120, 128, 136, 68, 52, 96, 104, 200};
  d.pyobject = {16, 8};
  d.type_object = {416, 24, 88, 168};
  d.tuple_object = {32, 24, 16};
  d.list_object = {40, 24, 16};
  d.dict_object = {48, 32, 40};
  d.float_object = {24, 16};
  d.long_object = {32, 16, 24};
  d.bytes_object = {40, 16, 32};
  d.unicode_object = {64, 32, 16, 40};
  d.gc = {240, 200};
  return d;
}

TEST(DebugOffsets, Python3130) {
  PythonLayout l;
  ASSERT_EQ(LayoutFromDebugOffsets(Python3130(), 13, &l), "");
  EXPECT_EQ(l.minor, 13);
  EXPECT_EQ(l.runtime_interpreters_head, 632u);
  // Far into PyInterpreterState (which starts with the eval loop's state): a fixed bound on
  // offsets, rather than the structure's own size, rejected it.
  EXPECT_EQ(l.interp_threads_head, 7344u);
  EXPECT_EQ(l.interp_next, 7264u);
  EXPECT_EQ(l.tstate_frame, 72u);
  EXPECT_EQ(l.tstate_cframe, kNoField);
  EXPECT_EQ(l.tstate_native_thread_id, 160u);
  EXPECT_EQ(l.frame_code, 0u);
  EXPECT_EQ(l.frame_previous, 8u);
  EXPECT_EQ(l.frame_instr, 56u);
  EXPECT_EQ(l.frame_owner, 70u);
  EXPECT_EQ(l.owner_cstack, 3);
  EXPECT_EQ(l.frame_size, 71u);
  EXPECT_FALSE(l.frame_objects);
  EXPECT_EQ(l.code_adaptive, 200u);
  EXPECT_EQ(l.code_qualname, 128u);
  EXPECT_EQ(l.unicode_ascii_data, 40u);
  EXPECT_EQ(l.unicode_compact_data, 56u);
  EXPECT_EQ(l.bytes_data, 32u);
}

TEST(DebugOffsets, OtherVersionsAreNotRead) {
  PythonLayout l;
  EXPECT_EQ(LayoutFromDebugOffsets(Python3130(), 14, &l),
            "no reader for this version's _Py_DebugOffsets (3.13 only)");
  DebugOffsets313 d = Python3130();
  d.version = 0x030e00f0;
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l), "_Py_DebugOffsets' version is not 3.13");
}

TEST(DebugOffsets, GarbageIsNoLayout) {
  PythonLayout l;
  l.minor = 99;
  DebugOffsets313 d = Python3130();
  d.cookie[0] = 'y';
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l), "_Py_DebugOffsets has no \"xdebugpy\" cookie");
  d = Python3130();
  d.free_threaded = 1;
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l), "a free-threaded build (not read)");
  d = Python3130();
  d.interpreter_state.threads_head = d.interpreter_state.size - 4;  // the pointer overruns
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l),
            "_Py_DebugOffsets puts threads.head outside its structure");
  d = Python3130();
  d.thread_state.size = 1u << 30;
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l),
            "_Py_DebugOffsets gives PyThreadState an implausible size");
  d = Python3130();
  d.code_object.co_code_adaptive = ~uint64_t{0};
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l),
            "_Py_DebugOffsets puts co_code_adaptive outside its structure");
  // A frame whose fields lie past what FrameChainReader reads in one go.
  d = Python3130();
  d.interpreter_frame.size = 4096;
  d.interpreter_frame.owner = 2000;
  EXPECT_EQ(LayoutFromDebugOffsets(d, 13, &l),
            "_Py_DebugOffsets puts the frame's fields beyond its first 128 bytes");
  EXPECT_EQ(l.minor, 99);  // untouched on failure
}

}  // namespace
}  // namespace hangwatch::python
