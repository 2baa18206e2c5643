// DenySyscall: a seccomp filter on the calling thread (and what it forks and executes) under
// which one system call fails with an errno instead of running, as a container's or a
// sandbox's policy makes it: the tests of what the agent does where process_vm_readv is
// refused (unwind/self_memory.h). Irreversible for the process; call it in a child.
#ifndef HANGWATCH_TESTS_DENY_SYSCALL_H_
#define HANGWATCH_TESTS_DENY_SYSCALL_H_

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cstddef>

namespace hangwatch::testing {

// False when the filter could not be installed (no seccomp; errno says why).
inline bool DenySyscall(long nr, int error) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K,
               SECCOMP_RET_ERRNO | (static_cast<unsigned>(error) & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_DENY_SYSCALL_H_
