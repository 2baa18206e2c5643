// A library built like a distribution's: -O2 -fomit-frame-pointer (tests/cfi/CMakeLists.txt).
#ifndef HANGWATCH_TESTS_CFI_NOFP_LIB_H_
#define HANGWATCH_TESTS_CFI_NOFP_LIB_H_

extern "C" {
// std::sort over `n` ints with a comparator that calls `less` (which may stall).
void nofp_sort(int* values, int n, bool (*less)(int, int));
// Calls cb(arg) from a few frames deep inside the library.
void nofp_invoke(void (*cb)(void*), void* arg, int depth);
}

#endif  // HANGWATCH_TESTS_CFI_NOFP_LIB_H_
