// HW_TEST_ASAN and HW_TEST_TSAN: 1 in a test compiled under AddressSanitizer or
// ThreadSanitizer, else 0, whichever compiler built it (GCC says __SANITIZE_ADDRESS__; clang 14,
// which builds the ASan tree, says only __has_feature(address_sanitizer)).
#ifndef HANGWATCH_TESTS_SANITIZERS_H_
#define HANGWATCH_TESTS_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define HW_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HW_TEST_ASAN 1
#endif
#endif
#if !defined(HW_TEST_ASAN)
#define HW_TEST_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define HW_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HW_TEST_TSAN 1
#endif
#endif
#if !defined(HW_TEST_TSAN)
#define HW_TEST_TSAN 0
#endif

#endif  // HANGWATCH_TESTS_SANITIZERS_H_
