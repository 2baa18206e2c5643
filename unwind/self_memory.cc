#include "unwind/self_memory.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

namespace hangwatch::unwind {
namespace {

// The method, the process it was chosen in, and the /proc/self/mem descriptor of the fallback.
// Written by PrepareSelfMemory only; read with single atomic loads by the readers (a reader
// racing a PrepareSelfMemory sees either method, both of which read this process).
std::atomic<SelfMemoryMethod> g_method{SelfMemoryMethod::kProcessVmReadv};
std::atomic<pid_t> g_pid{0};
std::atomic<int> g_mem_fd{-1};

// pread of the fallback over the two iovec lists, with process_vm_readv's result: bytes copied
// until the first failure or short read.
ssize_t PreadV(int fd, const iovec* local, size_t local_count, const iovec* remote,
               size_t remote_count) {
  size_t li = 0, ri = 0, lo = 0, ro = 0;
  size_t total = 0;
  while (li < local_count && ri < remote_count) {
    const size_t lleft = local[li].iov_len - lo;
    const size_t rleft = remote[ri].iov_len - ro;
    if (lleft == 0) {
      ++li, lo = 0;
      continue;
    }
    if (rleft == 0) {
      ++ri, ro = 0;
      continue;
    }
    const size_t n = std::min(lleft, rleft);
    const uintptr_t from = reinterpret_cast<uintptr_t>(remote[ri].iov_base) + ro;
    // /proc/PID/mem takes the address as the offset; past the signed range it cannot be read.
    if (from > static_cast<uintptr_t>(INT64_MAX) - n) break;
    const ssize_t got =
        pread(fd, static_cast<char*>(local[li].iov_base) + lo, n, static_cast<off_t>(from));
    if (got <= 0) break;
    total += static_cast<size_t>(got);
    if (static_cast<size_t>(got) < n) break;
    lo += n;
    ro += n;
  }
  if (total == 0 && (local_count > 0 && remote_count > 0)) {
    // Nothing read: a failure, unless nothing was asked.
    size_t asked = 0;
    for (size_t i = 0; i < remote_count; ++i) asked += remote[i].iov_len;
    if (asked > 0) return -1;
  }
  return static_cast<ssize_t>(total);
}

bool ProbeProcessVmReadv(pid_t pid) {
  const uint64_t probe = 0x73656c666d656d21;  // "selfmem!"
  uint64_t copy = 0;
  iovec local{&copy, sizeof(copy)};
  iovec remote{const_cast<uint64_t*>(&probe), sizeof(probe)};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(copy) && copy == probe;
}

bool ProbeProcSelfMem(int fd) {
  const uint64_t probe = 0x2170726f636d656d;
  uint64_t copy = 0;
  return pread(fd, &copy, sizeof(copy), static_cast<off_t>(reinterpret_cast<uintptr_t>(&probe))) ==
             sizeof(copy) &&
         copy == probe;
}

// pthread_atfork's child handler (async-signal-safe: atomic stores). The pid chosen for is the
// parent's, and a /proc/self/mem descriptor would read the parent's memory: readers take
// getpid() again, the fallback fails until PrepareSelfMemory opens this process's own.
void ForgetParentAfterFork() {
  g_pid.store(0, std::memory_order_release);
  SelfMemoryMethod expected = SelfMemoryMethod::kProcSelfMem;
  g_method.compare_exchange_strong(expected, SelfMemoryMethod::kNone, std::memory_order_acq_rel);
}

}  // namespace

SelfMemoryMethod PrepareSelfMemory() {
  static const bool fork_handler = pthread_atfork(nullptr, nullptr, ForgetParentAfterFork) == 0;
  (void)fork_handler;
  const pid_t pid = getpid();
  if (g_pid.load(std::memory_order_acquire) == pid) {
    return g_method.load(std::memory_order_acquire);
  }
  SelfMemoryMethod method = SelfMemoryMethod::kNone;
  int fd = -1;
  if (ProbeProcessVmReadv(pid)) {
    method = SelfMemoryMethod::kProcessVmReadv;
  } else {
    const int saved = errno;
    fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ProbeProcSelfMem(fd)) {
      method = SelfMemoryMethod::kProcSelfMem;
    } else {
      if (fd >= 0) close(fd);
      fd = -1;
      errno = saved;  // the refusal of the preferred call is the reason to report
    }
  }
  // The new descriptor is published before the method that uses it; the old one (a parent
  // process's memory, after fork) is closed only after.
  const int old = g_mem_fd.exchange(fd, std::memory_order_acq_rel);
  g_method.store(method, std::memory_order_release);
  g_pid.store(pid, std::memory_order_release);
  if (old >= 0) close(old);
  return method;
}

const char* SelfMemoryMethodName(SelfMemoryMethod method) {
  switch (method) {
    case SelfMemoryMethod::kProcessVmReadv:
      return "process_vm_readv";
    case SelfMemoryMethod::kProcSelfMem:
      return "/proc/self/mem";
    case SelfMemoryMethod::kNone:
      break;
  }
  return "none";
}

ssize_t ReadSelfV(const iovec* local, size_t local_count, const iovec* remote,
                  size_t remote_count) {
  switch (g_method.load(std::memory_order_acquire)) {
    case SelfMemoryMethod::kProcessVmReadv: {
      pid_t pid = g_pid.load(std::memory_order_relaxed);
      if (pid == 0) pid = getpid();  // before PrepareSelfMemory
      return process_vm_readv(pid, local, local_count, remote, remote_count, 0);
    }
    case SelfMemoryMethod::kProcSelfMem: {
      const int fd = g_mem_fd.load(std::memory_order_acquire);
      if (fd < 0) break;
      return PreadV(fd, local, local_count, remote, remote_count);
    }
    case SelfMemoryMethod::kNone:
      break;
  }
  errno = ENOSYS;
  return -1;
}

bool ReadSelf(uintptr_t addr, void* out, size_t n) {
  if (n == 0) return true;
  if (addr == 0 || addr + n < addr) return false;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ReadSelfV(&local, 1, &remote, 1) == static_cast<ssize_t>(n);
}

}  // namespace hangwatch::unwind
