// The floor under any ptrace snapshot tool, for bench/snapshot_vs_eustack.sh: a static C
// program that does only what cannot be avoided: list the threads, PTRACE_SEIZE and
// PTRACE_INTERRUPT each, wait for its stop, read its registers (PTRACE_GETREGSET) and the stack
// words at sp (process_vm_readv, kStackBytes), PTRACE_DETACH. No /proc facts, no modules, no
// unwinding, no symbols, no output but one line. Like hangwatch's stop window, it runs under
// SCHED_FIFO when allowed (otherwise, with busy target threads on every CPU, waking up for
// each stopped thread costs more than everything else). `snapshot_floor --exit` returns at
// once: the cost of exec'ing a static binary alone.
//
// Built by the script with `cc -O2 -static`; not part of the CMake build.
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxThreads = 1024, kStackBytes = 16384 };

static unsigned char stack_copy[kStackBytes];

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--exit") == 0) return 0;
  if (argc != 2) {
    fprintf(stderr, "usage: snapshot_floor PID | --exit\n");
    return 2;
  }
  const pid_t pid = (pid_t)atoi(argv[1]);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", pid);
  DIR* dir = opendir(path);
  if (dir == NULL) {
    perror(path);
    return 2;
  }
  pid_t tids[kMaxThreads];
  int n = 0;
  for (struct dirent* e; (e = readdir(dir)) != NULL && n < kMaxThreads;) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(dir);

  struct sched_param fifo = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
  sched_setscheduler(0, SCHED_FIFO, &fifo);  // best effort
  int seized = 0;
  for (int i = 0; i < n; ++i) {
    if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) != 0) {
      perror("PTRACE_SEIZE");
      break;
    }
    ++seized;
  }
  for (int i = 0; i < seized; ++i) ptrace(PTRACE_INTERRUPT, tids[i], 0, 0);
  size_t bytes = 0;
  int frames = 0;
  for (int i = 0; i < seized; ++i) {
    int status = 0;
    if (waitpid(tids[i], &status, __WALL) != tids[i] || !WIFSTOPPED(status)) continue;
    struct user_regs_struct regs;
    struct iovec iov = {&regs, sizeof(regs)};
    if (ptrace(PTRACE_GETREGSET, tids[i], (void*)NT_PRSTATUS, &iov) != 0) continue;
#if defined(__x86_64__)
    unsigned long sp = regs.rsp;
#elif defined(__aarch64__)
    unsigned long sp = regs.sp;
#endif
    struct iovec local = {stack_copy, sizeof(stack_copy)};
    struct iovec remote = {(void*)sp, sizeof(stack_copy)};
    ssize_t got = process_vm_readv(tids[i], &local, 1, &remote, 1, 0);
    if (got > 0) bytes += (size_t)got;
    ++frames;
  }
  for (int i = 0; i < seized; ++i) ptrace(PTRACE_DETACH, tids[i], 0, 0);
  printf("%d threads, %d stopped and read, %zu stack bytes\n", n, frames, bytes);
  return seized == n ? 0 : 2;
}
