// HANGWATCH_TEST_SANITIZER_ALLOCATOR is defined when AddressSanitizer or ThreadSanitizer
// replaces malloc. Their allocators abort the process when a mapping fails (where malloc returns
// null), so the tests that run a process out of address space skip under them; the hooks they
// offer differ from glibc's too (tests/unwind/capture_alloc_test.cc).
#ifndef HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_
#define HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_

#include "tests/sanitizers.h"

#if HW_TEST_ASAN || HW_TEST_TSAN
#define HANGWATCH_TEST_SANITIZER_ALLOCATOR 1
#endif

#endif  // HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_
