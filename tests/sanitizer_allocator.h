// HANGWATCH_TEST_SANITIZER_ALLOCATOR is defined when AddressSanitizer or ThreadSanitizer
// replaces malloc. Their allocators abort the process when a mapping fails (where malloc returns
// null), so the tests that run a process out of address space skip under them; the hooks they
// offer differ from glibc's too (tests/unwind/capture_alloc_test.cc).
#ifndef HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_
#define HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HANGWATCH_TEST_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HANGWATCH_TEST_SANITIZER_ALLOCATOR 1
#endif
#endif

#endif  // HANGWATCH_TESTS_SANITIZER_ALLOCATOR_H_
