#include "cause/syscall_decode.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cause/append_format.h"
#include "unwind/self_memory.h"

namespace hangwatch::cause {
namespace {

struct Row {
  long nr;
  SyscallDesc desc;
};

// One row per blocking call worth naming; SYS_ numbers absent on an architecture (aarch64 has no
// poll, select, open, pause or epoll_wait: only their p-/at- forms) are left out by #ifdef.
const Row kRows[] = {
    {SYS_futex, {"futex", SyscallWait::kFutex, 3, {"addr", "op", "val"}}},
    {SYS_nanosleep, {"nanosleep", SyscallWait::kSleep, 1, {"req"}}},
    {SYS_clock_nanosleep, {"clock_nanosleep", SyscallWait::kSleep, 3, {"clock", "flags", "req"}}},
#ifdef SYS_pause
    {SYS_pause, {"pause", SyscallWait::kSleep, 0, {}}},
#endif
    {SYS_wait4, {"wait4", SyscallWait::kChild, 3, {"pid", "status", "options"}}},
    {SYS_waitid, {"waitid", SyscallWait::kChild, 4, {"idtype", "id", "info", "options"}}},
    {SYS_read, {"read", SyscallWait::kFile, 3, {"fd", "buf", "count"}}},
    {SYS_write, {"write", SyscallWait::kFile, 3, {"fd", "buf", "count"}}},
    {SYS_pread64, {"pread64", SyscallWait::kFile, 4, {"fd", "buf", "count", "offset"}}},
    {SYS_pwrite64, {"pwrite64", SyscallWait::kFile, 4, {"fd", "buf", "count", "offset"}}},
    {SYS_readv, {"readv", SyscallWait::kFile, 3, {"fd", "iov", "iovcnt"}}},
    {SYS_writev, {"writev", SyscallWait::kFile, 3, {"fd", "iov", "iovcnt"}}},
    {SYS_fsync, {"fsync", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_fdatasync, {"fdatasync", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_sync_file_range, {"sync_file_range", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_openat, {"openat", SyscallWait::kFile, 3, {"dirfd", "path", "flags"}}},
#ifdef SYS_open
    {SYS_open, {"open", SyscallWait::kFile, 2, {"path", "flags"}}},
#endif
    {SYS_statx, {"statx", SyscallWait::kFile, 3, {"dirfd", "path", "flags"}}},
    {SYS_newfstatat, {"newfstatat", SyscallWait::kFile, 3, {"dirfd", "path", "buf"}}},
    {SYS_fstat, {"fstat", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_fallocate, {"fallocate", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_ftruncate, {"ftruncate", SyscallWait::kFile, 2, {"fd", "length"}}},
    {SYS_flock, {"flock", SyscallWait::kFile, 2, {"fd", "op"}}},
    {SYS_fcntl, {"fcntl", SyscallWait::kFile, 2, {"fd", "cmd"}}},
    {SYS_recvfrom, {"recvfrom", SyscallWait::kFile, 3, {"fd", "buf", "len"}}},
    {SYS_recvmsg, {"recvmsg", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_sendto, {"sendto", SyscallWait::kFile, 3, {"fd", "buf", "len"}}},
    {SYS_sendmsg, {"sendmsg", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_connect, {"connect", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_accept, {"accept", SyscallWait::kFile, 1, {"fd"}}},
    {SYS_accept4, {"accept4", SyscallWait::kFile, 1, {"fd"}}},
#ifdef SYS_poll
    {SYS_poll, {"poll", SyscallWait::kDescriptors, 3, {"fds", "nfds", "timeout"}}},
#endif
    {SYS_ppoll, {"ppoll", SyscallWait::kDescriptors, 3, {"fds", "nfds", "timeout"}}},
#ifdef SYS_select
    {SYS_select, {"select", SyscallWait::kDescriptors, 1, {"nfds"}}},
#endif
    {SYS_pselect6, {"pselect6", SyscallWait::kDescriptors, 1, {"nfds"}}},
#ifdef SYS_epoll_wait
    {SYS_epoll_wait,
     {"epoll_wait", SyscallWait::kDescriptors, 4, {"epfd", "events", "max", "timeout"}}},
#endif
    {SYS_epoll_pwait,
     {"epoll_pwait", SyscallWait::kDescriptors, 4, {"epfd", "events", "max", "timeout"}}},
    {SYS_rt_sigtimedwait, {"rt_sigtimedwait", SyscallWait::kOther, 1, {"set"}}},
    {SYS_rt_sigsuspend, {"rt_sigsuspend", SyscallWait::kOther, 0, {}}},
    {SYS_msgrcv, {"msgrcv", SyscallWait::kOther, 1, {"msqid"}}},
    {SYS_semop, {"semop", SyscallWait::kOther, 1, {"semid"}}},
    {SYS_io_getevents, {"io_getevents", SyscallWait::kOther, 1, {"ctx"}}},
    {SYS_io_uring_enter, {"io_uring_enter", SyscallWait::kOther, 1, {"fd"}}},
    {SYS_mmap, {"mmap", SyscallWait::kOther, 2, {"addr", "length"}}},
    {SYS_munmap, {"munmap", SyscallWait::kOther, 2, {"addr", "length"}}},
    {SYS_madvise, {"madvise", SyscallWait::kOther, 3, {"addr", "length", "advice"}}},
    {SYS_ioctl, {"ioctl", SyscallWait::kOther, 2, {"fd", "request"}}},
};

uint64_t TimespecNs(const timespec& ts) {
  if (ts.tv_sec < 0 || ts.tv_nsec < 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// A sleep's timespec, read (guarded) from the sleeping thread's memory.
void ReadSleep(pid_t pid, uint64_t addr, DecodedWait* w) {
  timespec ts{};
  if (addr != 0 && ReadProcess(pid, addr, &ts, sizeof(ts))) w->sleep_ns = TimespecNs(ts);
}

const char* FutexOpName(uint32_t op) {
  switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
      return "WAIT";
    case FUTEX_WAIT_BITSET:
      return "WAIT_BITSET";
    case FUTEX_LOCK_PI:
      return "LOCK_PI";
#ifdef FUTEX_LOCK_PI2
    case FUTEX_LOCK_PI2:
      return "LOCK_PI2";
#endif
    case FUTEX_WAIT_REQUEUE_PI:
      return "WAIT_REQUEUE_PI";
    default:
      return nullptr;
  }
}

}  // namespace

bool ReadProcess(pid_t pid, uint64_t addr, void* out, size_t size) {
  if (addr == 0) {
    errno = EFAULT;
    return false;
  }
  if (size == 0) return true;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), size};
  const ssize_t n = pid == 0 ? unwind::ReadSelfV(&local, 1, &remote, 1)
                             : process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(size)) return true;
  if (n >= 0) errno = EFAULT;
  return false;
}

bool IsRestartSyscall(int64_t nr) { return nr == SYS_restart_syscall; }

int64_t RestartedCall(const char* wchan, const uint64_t args[6]) {
  if (wchan == nullptr || wchan[0] == '\0' || std::strcmp(wchan, "0") == 0) return -1;
  // futex_wait_queue_me (before 5.16), futex_wait_queue, futex_do_wait (6.17 on).
  if (std::strncmp(wchan, "futex", 5) == 0) return SYS_futex;
#ifdef SYS_poll
  // poll_schedule_timeout, do_sys_poll: poll, the only call of the poll family restarted
  // through restart_syscall (ppoll and select restart as themselves, epoll_wait returns EINTR).
  if (std::strncmp(wchan, "poll_schedule_timeout", 21) == 0 ||
      std::strncmp(wchan, "do_sys_poll", 11) == 0 || std::strncmp(wchan, "do_poll", 7) == 0) {
    return SYS_poll;
  }
#endif
  // The other calls restarted this way are the sleeps, and a restarted sleep's kernel frames
  // are all scheduler or inlined ones (wchan "do_syscall_64", or "hrtimer_nanosleep" and
  // "do_nanosleep" on other kernels). Only a relative sleep restarts this way (an absolute one
  // restarts as itself): clock_nanosleep(clock, 0, req, rem) has a clock id (small, or negative
  // for a CPU clock) and zero flags where nanosleep(req, rem) starts with a pointer.
  const bool clock_id = args[0] < 64 || static_cast<int64_t>(args[0]) < 0;
  if (clock_id && args[1] == 0 && args[2] >= 4096) return SYS_clock_nanosleep;
  if (!clock_id && args[0] >= 4096) return SYS_nanosleep;
  return -1;
}

bool TellRestartedCall(pid_t pid, pid_t tid, unwind::TaskSyscall* sys) {
  if (sys->fields != 9 || !IsRestartSyscall(sys->nr)) return false;
  char path[64];
  char wchan[64];
  unwind::TaskPath(pid, tid, "wchan", path, sizeof(path));
  const ssize_t n = unwind::ReadProcFile(path, wchan, sizeof(wchan));
  if (n <= 0) return false;
  const int64_t nr = RestartedCall(wchan, sys->args);
  if (nr < 0) return false;
  sys->nr = nr;
  return true;
}

SyscallDesc DescribeSyscall(int64_t nr) {
  for (const Row& row : kRows) {
    if (row.nr == nr) return row.desc;
  }
  return SyscallDesc{};
}

DecodedWait DecodeWait(const unwind::TaskSyscall& sys) { return DecodeWaitOf(0, sys); }

DecodedWait DecodeWaitOf(pid_t pid, const unwind::TaskSyscall& sys) {
  DecodedWait w;
  if (sys.fields != 9 || sys.nr < 0) return w;
  w.nr = sys.nr;
  std::memcpy(w.args, sys.args, sizeof(w.args));
  const SyscallDesc d = DescribeSyscall(sys.nr);
  w.name = d.name;
  w.wait = d.name != nullptr ? d.wait : SyscallWait::kUnknown;
  const uint64_t* a = sys.args;
  switch (w.wait) {
    case SyscallWait::kFutex:
      w.futex_addr = a[0];
      w.futex_op = static_cast<uint32_t>(a[1]);
      w.futex_val = static_cast<uint32_t>(a[2]);
      break;
    case SyscallWait::kSleep:
      if (sys.nr == SYS_nanosleep) {
        ReadSleep(pid, a[0], &w);
      } else if (sys.nr == SYS_clock_nanosleep) {
        // TIMER_ABSTIME: a deadline, not a length; left unknown.
        if ((a[1] & TIMER_ABSTIME) == 0) ReadSleep(pid, a[2], &w);
      } else {
        w.sleep_forever = true;  // pause
      }
      break;
    case SyscallWait::kChild:
      if (sys.nr == SYS_wait4) {
        w.child = static_cast<int32_t>(static_cast<uint32_t>(a[0]));
      } else if (a[0] == P_PID) {
        w.child = static_cast<int32_t>(static_cast<uint32_t>(a[1]));
      } else if (a[0] == P_PGID) {
        w.child = -static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(a[1])));
      }
      break;
    case SyscallWait::kFile:
#ifdef SYS_open
      if (sys.nr == SYS_open) {
        w.path_addr = a[0];
        break;
      }
#endif
      w.fd = static_cast<int32_t>(static_cast<uint32_t>(a[0]));
      if (sys.nr == SYS_openat || sys.nr == SYS_statx || sys.nr == SYS_newfstatat) {
        w.path_addr = a[1];
      }
      break;
    case SyscallWait::kDescriptors: {
      // poll / ppoll (nfds in a[1]) and select / pselect6 (nfds in a[0]) without descriptors
      // are sleeps; epoll_wait always has its epoll descriptor.
      bool is_poll = sys.nr == SYS_ppoll;
      bool is_select = sys.nr == SYS_pselect6;
#ifdef SYS_poll
      is_poll = is_poll || sys.nr == SYS_poll;
#endif
#ifdef SYS_select
      is_select = is_select || sys.nr == SYS_select;
#endif
      if ((is_poll && a[1] == 0) || (is_select && a[0] == 0)) {
        w.wait = SyscallWait::kSleep;
#ifdef SYS_poll
        if (sys.nr == SYS_poll) {
          const int ms = static_cast<int32_t>(static_cast<uint32_t>(a[2]));
          if (ms < 0)
            w.sleep_forever = true;
          else
            w.sleep_ns = static_cast<uint64_t>(ms) * 1'000'000u;
        }
#endif
        if (sys.nr == SYS_ppoll) {
          if (a[2] == 0)
            w.sleep_forever = true;
          else
            ReadSleep(pid, a[2], &w);
        }
      } else if (!is_poll && !is_select) {
        w.fd = static_cast<int32_t>(static_cast<uint32_t>(a[0]));  // the epoll descriptor
      }
      break;
    }
    default:
      break;
  }
  return w;
}

size_t FormatCall(const DecodedWait& w, char* out, size_t size) {
  if (size == 0) return 0;
  out[0] = '\0';
  size_t n = 0;
  if (w.name == nullptr) {
    AppendFormat(out, size, &n, "syscall %lld(0x%llx, 0x%llx, 0x%llx)",
                 static_cast<long long>(w.nr), static_cast<unsigned long long>(w.args[0]),
                 static_cast<unsigned long long>(w.args[1]),
                 static_cast<unsigned long long>(w.args[2]));
  } else if (w.wait == SyscallWait::kFutex) {
    const char* op = FutexOpName(w.futex_op);
    if (op != nullptr) {
      AppendFormat(out, size, &n, "futex(0x%llx, %s)",
                   static_cast<unsigned long long>(w.futex_addr), op);
    } else {
      AppendFormat(out, size, &n, "futex(0x%llx, op %u)",
                   static_cast<unsigned long long>(w.futex_addr), w.futex_op);
    }
  } else {
    const SyscallDesc d = DescribeSyscall(w.nr);
    AppendFormat(out, size, &n, "%s(", w.name);
    for (int i = 0; i < d.nargs && i < 6; ++i) {
      const char* sep = i > 0 ? ", " : "";
      const char* arg = d.args[i];
      // Descriptors, process ids and timeouts: C ints, so the register's low 32 bits, signed.
      if (std::strcmp(arg, "fd") == 0 || std::strcmp(arg, "dirfd") == 0 ||
          std::strcmp(arg, "epfd") == 0 || std::strcmp(arg, "pid") == 0 ||
          std::strcmp(arg, "id") == 0 || std::strcmp(arg, "timeout") == 0) {
        AppendFormat(out, size, &n, "%s%s %d", sep, arg,
                     static_cast<int32_t>(static_cast<uint32_t>(w.args[i])));
      } else if (std::strcmp(arg, "count") == 0 || std::strcmp(arg, "nfds") == 0 ||
                 std::strcmp(arg, "len") == 0) {
        AppendFormat(out, size, &n, "%s%s %lld", sep, arg,
                     static_cast<long long>(static_cast<int64_t>(w.args[i])));
      } else {
        AppendFormat(out, size, &n, "%s%s 0x%llx", sep, arg,
                     static_cast<unsigned long long>(w.args[i]));
      }
    }
    AppendFormat(out, size, &n, ")");
  }
  return n;
}

}  // namespace hangwatch::cause
