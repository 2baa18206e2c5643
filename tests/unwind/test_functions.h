// Helpers shared by the capture tests: functions that must keep their own frames and symbols
// under -O2, ASan and TSan, and the address range of such a function.
#ifndef HANGWATCH_TESTS_UNWIND_TEST_FUNCTIONS_H_
#define HANGWATCH_TESTS_UNWIND_TEST_FUNCTIONS_H_

#include <cstddef>
#include <cstdint>

#include "tests/keep_frame.h"

// Keeps a call out of tail position, so that the caller's frame stays on the stack.
#define HW_TEST_NO_TAIL_CALL() asm volatile("" ::: "memory")

namespace hangwatch::unwind::testing {

struct CodeRange {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  bool Contains(uintptr_t pc) const { return pc >= lo && pc < hi; }
};

// The [start, start + st_size) of the exported symbol containing `fn` (the test binaries are
// linked with -rdynamic). Returns an empty range if unknown.
CodeRange RangeOf(const void* fn);

template <typename F>
CodeRange RangeOfFunction(F* fn) {
  return RangeOf(reinterpret_cast<const void*>(fn));
}

}  // namespace hangwatch::unwind::testing

#endif  // HANGWATCH_TESTS_UNWIND_TEST_FUNCTIONS_H_
