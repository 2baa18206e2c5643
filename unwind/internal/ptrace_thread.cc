// Per-thread reads and copies of a ptrace snapshot (see ptrace_thread.h).
#include "unwind/internal/ptrace_thread.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "unwind/proc_files.h"

namespace hangwatch::unwind::internal {
namespace {

constexpr uintptr_t kPageSize = 4096;  // iovec granularity for partial stack reads

StackBounds BoundsOf(const std::vector<Mapping>& maps, uintptr_t sp) {
  auto it = std::upper_bound(maps.begin(), maps.end(), sp,
                             [](uintptr_t a, const Mapping& m) { return a < m.lo; });
  if (it == maps.begin()) return {};
  --it;
  if (sp >= it->hi) return {};
  // Adjacent readable mappings (a stack that grew, split by mprotect) count as one stack.
  uintptr_t hi = it->hi;
  for (auto next = it + 1; next != maps.end() && next->lo == hi; ++next) hi = next->hi;
  return {it->lo, hi};
}

}  // namespace

std::vector<Mapping> ReadReadableMappings(pid_t pid) {
  std::vector<Mapping> out;
  char buf[16384];
  const bool whole = ReadMaps(pid, buf, sizeof(buf), [&out](const MapsLine& m) {
    if (m.readable()) out.push_back({static_cast<uintptr_t>(m.lo), static_cast<uintptr_t>(m.hi)});
  });
  if (!whole) out.clear();
  return out;
}

bool ListTasks(pid_t pid, std::vector<pid_t>* out) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task", pid);
  DIR* dir = opendir(path);
  if (dir == nullptr) return false;
  out->clear();
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) out->push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  std::sort(out->begin(), out->end());
  return true;
}

// The name comes from stat, which shows the same task name as /proc/.../comm: one file less per
// thread. With `task_fd` open, relative lookups skip the walk through /proc/PID, a good share of
// the cost of these small reads.
void ReadThreadInfo(pid_t pid, int task_fd, PtraceThread* t) {
  char path[64];
  char buf[1024];
  auto path_of = [&](const char* leaf) {
    if (task_fd >= 0) {
      std::snprintf(path, sizeof(path), "%d/%s", t->tid, leaf);
    } else {
      TaskPath(pid, t->tid, leaf, path, sizeof(path));
    }
    return path;
  };
  TaskStat stat;
  ssize_t n = ReadProcFileAt(task_fd, path_of("stat"), buf, sizeof(buf));
  if (n > 0 && ParseTaskStat(buf, static_cast<size_t>(n), &stat) && stat.has_cpu_ticks) {
    t->name.assign(stat.comm, stat.comm_size);
    t->state = stat.state;
    static const long ticks = sysconf(_SC_CLK_TCK);
    if (ticks > 0) {
      t->cpu_ns =
          (stat.utime_ticks + stat.stime_ticks) * (1000000000u / static_cast<uint64_t>(ticks));
    }
  }
  // schedstat's first field is the time spent on the CPU in ns (CONFIG_SCHED_INFO).
  n = ReadProcFileAt(task_fd, path_of("schedstat"), buf, sizeof(buf));
  SchedStat sched;
  if (n > 0 && ParseSchedStat(buf, static_cast<size_t>(n), &sched) >= 1) {
    t->cpu_ns = sched.cpu_ns;
    t->cpu_ns_exact = true;
  }
}

void ReadSyscallBefore(pid_t pid, int task_fd, PtraceThread* t) {
  if (!ProcSyscallLinesAreOurs()) return;  // the host's calls, under an emulator
  char path[64];
  char buf[256];
  if (task_fd >= 0) {
    std::snprintf(path, sizeof(path), "%d/syscall", t->tid);
  } else {
    TaskPath(pid, t->tid, "syscall", path, sizeof(path));
  }
  const ssize_t n = ReadProcFileAt(task_fd, path, buf, sizeof(buf));
  TaskSyscall sys;
  if (n > 0 && ParseTaskSyscall(buf, static_cast<size_t>(n), &sys)) t->syscall_before = sys;
}

// PTRACE_GETREGSET with NT_PRSTATUS, into the frame-walk registers and DWARF numbering.
bool ReadRegisters(PtraceThread* t) {
  user_regs_struct r{};
  iovec iov{&r, sizeof(r)};
  if (ptrace(PTRACE_GETREGSET, t->tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return false;
  }
#if defined(__x86_64__)
  t->regs.pc = r.rip;
  t->regs.sp = r.rsp;
  t->regs.fp = r.rbp;
  t->regs.lr = 0;
  const uint64_t dwarf[] = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8,
                            r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip};
  static_assert(sizeof(dwarf) / sizeof(dwarf[0]) <= kMaxDwarfRegisters);
  std::memcpy(t->dwarf_regs, dwarf, sizeof(dwarf));
  t->num_dwarf_regs = sizeof(dwarf) / sizeof(dwarf[0]);
  t->syscall_nr = static_cast<int64_t>(r.orig_rax);
  t->thread_pointer = r.fs_base;
#elif defined(__aarch64__)
  t->regs.pc = r.pc;
  t->regs.sp = r.sp;
  t->regs.fp = r.regs[29];
  t->regs.lr = r.regs[30];
  for (size_t i = 0; i < 31; ++i) t->dwarf_regs[i] = r.regs[i];
  t->dwarf_regs[31] = r.sp;
  t->dwarf_regs[32] = r.pc;
  t->num_dwarf_regs = 33;
  t->syscall_nr = -1;
  // TPIDR_EL0, the thread pointer, is a register set of its own (arch/arm64: NT_ARM_TLS, whose
  // first word it is). Left 0 when the kernel does not give it.
  uint64_t tls[2] = {};
  iovec tls_iov{tls, sizeof(tls)};
  if (ptrace(PTRACE_GETREGSET, t->tid, reinterpret_cast<void*>(NT_ARM_TLS), &tls_iov) == 0 &&
      tls_iov.iov_len >= sizeof(tls[0])) {
    t->thread_pointer = tls[0];
  }
#else
#error "ptrace_capture: unsupported architecture"
#endif
  return true;
}

// Remote iovecs are split at page boundaries so that an unmapped page ends the copy there (the
// kernel reports partial transfers per iovec) instead of failing it.
void CopyStack(pid_t tid, const std::vector<Mapping>& maps, PtraceThread* t) {
  uintptr_t start = t->regs.sp & ~static_cast<uintptr_t>(sizeof(uintptr_t) - 1);
  t->stack_base = start;
  t->stack_bounds = BoundsOf(maps, start);
  size_t budget = t->stack.size();
  if (t->stack_bounds.hi > start) budget = std::min<size_t>(budget, t->stack_bounds.hi - start);
  if (start == 0 || budget == 0) {
    t->stack.clear();
    return;
  }
  constexpr size_t kMaxIov = 64;  // IOV_MAX is 1024; 64 pages = 256 KiB per call
  size_t copied = 0;
  while (copied < budget) {
    iovec remote[kMaxIov];
    size_t n = 0;
    size_t batch = 0;
    uintptr_t addr = start + copied;
    while (n < kMaxIov && copied + batch < budget) {
      uintptr_t a = addr + batch;
      size_t chunk = std::min<size_t>(kPageSize - (a % kPageSize), budget - copied - batch);
      remote[n++] = iovec{reinterpret_cast<void*>(a), chunk};
      batch += chunk;
    }
    iovec local{t->stack.data() + copied, batch};
    ssize_t got = process_vm_readv(tid, &local, 1, remote, n, 0);
    if (got <= 0) break;
    copied += static_cast<size_t>(got);
    if (static_cast<size_t>(got) < batch) break;  // hit an unreadable page
  }
  t->stack.resize(copied);
}

// /proc/PID/task/TID/syscall gives "nr args... sp pc" while the thread is blocked, and its stack
// cannot change while it stays blocked.
void ReadBlockedRegisters(pid_t pid, const std::vector<Mapping>& maps, PtraceThread* t) {
  if (!ProcSyscallLinesAreOurs()) return;  // the host's registers, under an emulator
  char path[64];
  char buf[512];
  TaskPath(pid, t->tid, "syscall", path, sizeof(path));
  const ssize_t n = ReadProcFile(path, buf, sizeof(buf));
  TaskSyscall sys;
  if (n <= 0 || !ParseTaskSyscall(buf, static_cast<size_t>(n), &sys) || sys.fields != 9) return;
  t->syscall_nr = sys.nr;
  t->regs.sp = sys.sp;
  t->regs.pc = sys.pc;
  t->regs.fp = 0;  // unknown: only CFI can walk from here
  // For CFI: pc and sp are known, every other register is not (0).
  std::memset(t->dwarf_regs, 0, sizeof(t->dwarf_regs));
#if defined(__x86_64__)
  t->dwarf_regs[7] = sys.sp;
  t->dwarf_regs[16] = sys.pc;
  t->num_dwarf_regs = 17;
#elif defined(__aarch64__)
  t->dwarf_regs[31] = sys.sp;
  t->dwarf_regs[32] = sys.pc;
  t->num_dwarf_regs = 33;
#endif
  CopyStack(t->tid, maps, t);
}

}  // namespace hangwatch::unwind::internal
