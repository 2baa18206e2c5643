#include "tests/cfi/nofp_lib.h"

#include <algorithm>

namespace {

// noinline so that the library's own frames (without frame records) are on the stack.
__attribute__((noinline)) void Invoke(void (*cb)(void*), void* arg, int depth) {
  if (depth > 0) {
    Invoke(cb, arg, depth - 1);
    asm volatile("" ::: "memory");  // not a tail call
    return;
  }
  cb(arg);
  asm volatile("" ::: "memory");
}

}  // namespace

extern "C" void nofp_sort(int* values, int n, bool (*less)(int, int)) {
  std::sort(values, values + n, [less](int a, int b) { return less(a, b); });
  asm volatile("" ::: "memory");
}

extern "C" void nofp_invoke(void (*cb)(void*), void* arg, int depth) {
  Invoke(cb, arg, depth);
  asm volatile("" ::: "memory");
}
