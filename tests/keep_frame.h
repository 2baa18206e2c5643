// HW_TEST_KEEP_FRAME: a test function that must keep its own frame and symbol under -O2 and the
// sanitizers, with GCC and clang (the ASan tree is built with clang). Used where a test asserts
// on the frames or the fingerprint of a stack it made.
#ifndef HANGWATCH_TESTS_KEEP_FRAME_H_
#define HANGWATCH_TESTS_KEEP_FRAME_H_

// noinline alone lets GCC clone a function (foo.constprop.0) whose code is outside foo's symbol;
// noipa forbids that too. Clang has no noipa (and names no clone after the function it came
// from): noinline is its whole spelling.
#if defined(__clang__)
#define HW_TEST_KEEP_FRAME __attribute__((noinline, used))
#else
#define HW_TEST_KEEP_FRAME __attribute__((noinline, noipa, used))
#endif

#endif  // HANGWATCH_TESTS_KEEP_FRAME_H_
