// deny_process_vm_readv PROGRAM [ARGS...]: runs PROGRAM with process_vm_readv refused (ENOSYS,
// as qemu-user and some seccomp policies refuse it), for the agent's tests in such a process.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tests/deny_syscall.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: deny_process_vm_readv PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!hangwatch::testing::DenySyscall(SYS_process_vm_readv, ENOSYS)) {
    std::fprintf(stderr, "deny_process_vm_readv: seccomp: %s\n", std::strerror(errno));
    return 3;
  }
  execv(argv[1], argv + 1);
  std::fprintf(stderr, "deny_process_vm_readv: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
