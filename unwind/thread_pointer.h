// A thread's pthread_t (glibc's pthread_self()) from its thread pointer, the register the
// kernel keeps per thread for TLS: what lets another process match a thread it stopped with
// the pthread_t a program recorded for it (CPython 3.10's thread states keep only that).
//
// glibc places `struct pthread` (its thread descriptor, which pthread_t points to) by the
// architecture's TLS variant:
//   x86_64 (TLS_TCB_AT_TP): fs_base points at struct pthread itself, whose first member is the
//     TCB header (its `self` is the pthread_t): pthread_self() == fs_base.
//   aarch64 (TLS_DTV_AT_TP): TPIDR_EL0 points at the 16-byte TCB (dtv, private) that follows
//     struct pthread (TLS_PRE_TCB_SIZE is sizeof(struct pthread); THREAD_SELF is
//     `(struct pthread *) __builtin_thread_pointer () - 1`, sysdeps/aarch64/nptl/tls.h):
//     pthread_self() == TPIDR_EL0 - sizeof(struct pthread).
// sizeof(struct pthread) changes between glibc releases; glibc exports it for libthread_db as
// the uint32 `_thread_db_sizeof_pthread` (GLIBC_PRIVATE, in libc.so.6 since 2.34), which the
// caller reads from the target's own libc.
#ifndef HANGWATCH_UNWIND_THREAD_POINTER_H_
#define HANGWATCH_UNWIND_THREAD_POINTER_H_

#include <cstdint>

namespace hangwatch::unwind {

// The name of glibc's export holding sizeof(struct pthread).
inline constexpr const char kGlibcPthreadSizeSymbol[] = "_thread_db_sizeof_pthread";

// pthread_self() of the thread whose thread pointer is `thread_pointer`, for this build's
// architecture; `pthread_size` is the target glibc's sizeof(struct pthread) (unused on
// x86_64). 0 when it cannot be known (no thread pointer; aarch64 without the size).
inline uint64_t PthreadSelfFromThreadPointer(uint64_t thread_pointer, uint64_t pthread_size) {
#if defined(__aarch64__)
  if (thread_pointer == 0 || pthread_size == 0 || pthread_size > thread_pointer) return 0;
  return thread_pointer - pthread_size;
#else
  (void)pthread_size;
  return thread_pointer;
#endif
}

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_THREAD_POINTER_H_
