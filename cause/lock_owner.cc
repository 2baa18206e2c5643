#include "cause/lock_owner.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "unwind/proc_files.h"

namespace hangwatch::cause {
namespace {

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
constexpr bool kKnownLayouts = true;
#else
constexpr bool kKnownLayouts = false;  // musl, 32-bit: no owner, ever
#endif

// pthread_mutex_t (glibc, 64-bit): int __lock; unsigned __count; int __owner; unsigned __nusers;
// int __kind; ...
constexpr size_t kMutexOwnerWord = 2;                            // __owner, at byte 8
constexpr uint32_t kKindRobust = 16;                             // PTHREAD_MUTEX_ROBUST_NORMAL_NP
constexpr uint32_t kKindPi = 32;                                 // PTHREAD_MUTEX_PRIO_INHERIT_NP
constexpr uint32_t kKindPp = 64;                                 // PTHREAD_MUTEX_PRIO_PROTECT_NP
constexpr uint32_t kKindFlags = 16 | 32 | 64 | 128 | 256 | 512;  // + pshared, elision bits

// pthread_rwlock_t (glibc, 64-bit): __readers, __writers, __wrphase_futex, __writers_futex,
// __pad3, __pad4, then the writer's tid and the flags (their places differ: x86 has its own
// header, aarch64 the generic one).
constexpr uint64_t kRwWrphaseOffset = 8;
constexpr uint64_t kRwWritersFutexOffset = 12;
constexpr uint32_t kRwReadersWrlocked = 2;  // PTHREAD_RWLOCK_WRLOCKED in __readers
#if defined(__x86_64__)
constexpr uint64_t kRwCurWriterOffset = 24;
#else
constexpr uint64_t kRwCurWriterOffset = 28;
#endif
constexpr size_t kRwReadSize = 32;

// pthread_cond_t (glibc >= 2.25): __wseq(8) __g1_start(8) __g_refs[2] __g_size[2]
// __g1_orig_size __wrefs __g_signals[2]; a waiter of group g waits on __g_signals[g] for 0,
// after adding 2 to __g_refs[g] and 8 to __wrefs.
constexpr uint64_t kCondSignalsOffset = 40;
constexpr uint64_t kCondRefsOffset = 16;
constexpr uint64_t kCondWrefsOffset = 36;

// `pid` 0: this process.
bool Read32s(pid_t pid, uint64_t addr, uint32_t* out, size_t n) {
  return ReadProcess(pid, addr, out, n * sizeof(uint32_t));
}

pid_t TidOf(uint32_t word) { return static_cast<pid_t>(word & FUTEX_TID_MASK); }

// A mutex the waiter waits on at its __lock word, or kUnknown.
LockInfo TryMutex(pid_t pid, const DecodedWait& w) {
  LockInfo info;
  uint32_t m[5];  // __lock, __count, __owner, __nusers, __kind
  if (!Read32s(pid, w.futex_addr, m, 5)) return info;
  const uint32_t kind = m[4];
  const bool kind_ok = (kind & ~kKindFlags) <= 3 && (kind & kKindPp) == 0;
  const uint32_t cmd = w.futex_op & FUTEX_CMD_MASK;
  const bool pi_wait = cmd == FUTEX_LOCK_PI
#ifdef FUTEX_LOCK_PI2
                       || cmd == FUTEX_LOCK_PI2
#endif
      ;
  if (pi_wait) {
    // The kernel's contract: a PI futex word holds its owner's tid.
    info.addr = w.futex_addr;
    info.type = kind_ok && (kind & kKindRobust) != 0 && (kind & kKindPi) == 0
                    ? LockType::kRobustMutex
                    : LockType::kPiMutex;
    info.owner = TidOf(m[0]);
    return info;
  }
  if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return info;
  if (!kind_ok || m[0] == 0) return info;
  if ((kind & kKindRobust) != 0 && (kind & kKindPi) == 0) {
    // Robust: __lock holds the owner's tid (and FUTEX_WAITERS), and the waiter waits for the
    // value it saw; __owner agrees (or is PTHREAD_MUTEX_INCONSISTENT after an owner died).
    if (TidOf(w.futex_val) == 0 || TidOf(m[0]) != TidOf(w.futex_val)) return info;
    info.addr = w.futex_addr;
    info.type = LockType::kRobustMutex;
    info.owner = TidOf(m[0]);
    return info;
  }
  if ((kind & (kKindRobust | kKindPi)) != 0) return info;
  // Normal, recursive, error-checking, adaptive: lll_lock_wait waits for 2 on __lock; the
  // owner sets __owner and counts itself in __nusers right after taking it.
  if (w.futex_val != 2 || m[3] == 0) return info;
  static constexpr LockType kByKind[] = {LockType::kMutex, LockType::kRecursiveMutex,
                                         LockType::kErrorCheckMutex, LockType::kAdaptiveMutex};
  info.addr = w.futex_addr;
  info.type = kByKind[kind & 3];
  info.owner = static_cast<pid_t>(static_cast<int32_t>(m[kMutexOwnerWord]));
  if (info.owner < 0) info.owner = 0;
  return info;
}

// An rwlock whose __wrphase_futex or __writers_futex the waiter waits on.
LockInfo TryRwlock(pid_t pid, const DecodedWait& w) {
  LockInfo info;
  // glibc's rwlock waiters expect PTHREAD_RWLOCK_FUTEX_USED (2), or 1 | it (3), in the word
  // they wait on; a semaphore's or condition variable's waiter expects 0. Without this, zeroed
  // bytes around either (a stack) pass the layout checks below: a wrong lock type.
  if (w.futex_val != 2 && w.futex_val != 3) return info;
  for (uint64_t off : {kRwWrphaseOffset, kRwWritersFutexOffset}) {
    if (w.futex_addr < off) continue;
    const uint64_t base = w.futex_addr - off;
    uint32_t r[kRwReadSize / 4];
    if (!Read32s(pid, base, r, kRwReadSize / 4)) continue;
    const uint32_t pad3 = r[4], pad4 = r[5];
    // Both futex words hold 0..3 (1 | PTHREAD_RWLOCK_FUTEX_USED at most); the pads are zero.
    if (pad3 != 0 || pad4 != 0 || r[2] > 3 || r[3] > 3) continue;
#if defined(__x86_64__)
    const uint32_t shared = r[7];
    const uint32_t flags_ok = 1;
    if (shared > 1) continue;
#else
    const uint32_t b = r[6];  // __flags, __shared, __pad2, __pad1 (little-endian bytes)
    const uint32_t flags_ok = (b & 0xff) <= 2 && ((b >> 8) & 0xff) <= 1;
#endif
    if (!flags_ok) continue;
    info.addr = base;
    info.type = LockType::kRwlock;
    const pid_t writer = static_cast<pid_t>(static_cast<int32_t>(r[kRwCurWriterOffset / 4]));
    // Held by readers (no writer): no single owner.
    if ((r[0] & kRwReadersWrlocked) != 0 && writer > 0) info.owner = writer;
    return info;
  }
  return info;
}

// A semaphore (checked first: its word is followed by its waiters and its private flag, where a
// condition variable's neighbours are heap bytes that could pass for a condition variable's
// counters), else a condition variable.
LockInfo TryConditionOrSemaphore(pid_t pid, const DecodedWait& w) {
  LockInfo info;
  if (w.futex_val != 0) return info;
  // sem_t (64-bit): uint64 data (value | nwaiters << 32), int private (0 or FUTEX_PRIVATE_FLAG).
  uint32_t s[3];
  if (Read32s(pid, w.futex_addr, s, 3) && s[0] == 0 && s[1] >= 1 && s[1] < (1u << 20) &&
      (s[2] == 0 || s[2] == FUTEX_PRIVATE_FLAG)) {
    info.addr = w.futex_addr;
    info.type = LockType::kSemaphore;
    return info;
  }
  for (uint64_t g = 0; g < 2; ++g) {
    const uint64_t off = kCondSignalsOffset + 4 * g;
    if (w.futex_addr < off) continue;
    const uint64_t cond = w.futex_addr - off;
    uint32_t refs = 0, wrefs = 0;
    if (!Read32s(pid, cond + kCondRefsOffset + 4 * g, &refs, 1) ||
        !Read32s(pid, cond + kCondWrefsOffset, &wrefs, 1)) {
      continue;
    }
    if ((wrefs >> 3) >= 1 && refs >= 2 && (wrefs >> 3) < (1u << 20)) {
      info.addr = cond;
      info.type = LockType::kConditionVariable;
      return info;
    }
  }
  return info;
}

LockInfo ResolveOnce(pid_t pid, const DecodedWait& w) {
  LockInfo info = TryMutex(pid, w);
  if (info.type == LockType::kUnknown) info = TryRwlock(pid, w);
  if (info.type == LockType::kUnknown) info = TryConditionOrSemaphore(pid, w);
  if (info.type == LockType::kUnknown) info.addr = w.futex_addr;
  return info;
}

}  // namespace

const char* LockTypeName(LockType t) {
  switch (t) {
    case LockType::kMutex:
      return "mutex";
    case LockType::kRecursiveMutex:
      return "recursive mutex";
    case LockType::kErrorCheckMutex:
      return "error-checking mutex";
    case LockType::kAdaptiveMutex:
      return "adaptive mutex";
    case LockType::kRobustMutex:
      return "robust mutex";
    case LockType::kPiMutex:
      return "priority-inheritance mutex";
    case LockType::kRwlock:
      return "rwlock";
    case LockType::kConditionVariable:
      return "condition variable";
    case LockType::kSemaphore:
      return "semaphore";
    case LockType::kUnknown:
      break;
  }
  return "futex";
}

const char* LockTypeKey(LockType t) {
  switch (t) {
    case LockType::kMutex:
      return "mutex";
    case LockType::kRecursiveMutex:
      return "recursive_mutex";
    case LockType::kErrorCheckMutex:
      return "errorcheck_mutex";
    case LockType::kAdaptiveMutex:
      return "adaptive_mutex";
    case LockType::kRobustMutex:
      return "robust_mutex";
    case LockType::kPiMutex:
      return "pi_mutex";
    case LockType::kRwlock:
      return "rwlock";
    case LockType::kConditionVariable:
      return "condition_variable";
    case LockType::kSemaphore:
      return "semaphore";
    case LockType::kUnknown:
      break;
  }
  return "unknown";
}

bool IsThreadOfThisProcess(pid_t tid) {
  if (tid <= 0) return false;
  // Signal 0 checks without sending: ESRCH unless `tid` is a thread of this thread group.
  return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno == EPERM;
}

bool ReadThreadName(pid_t tid, char* out, size_t size) {
  if (size == 0) return false;
  out[0] = '\0';
  char path[64];
  unwind::TaskPath(0, tid, "comm", path, sizeof(path));
  char buf[32];
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
  if (n <= 0) return false;
  size_t len = static_cast<size_t>(n);
  while (len > 0 && buf[len - 1] == '\n') --len;
  len = len < size - 1 ? len : size - 1;
  std::memcpy(out, buf, len);
  out[len] = '\0';
  return true;
}

DecodedWait ReadThreadWait(pid_t tid, uint64_t* sp, char* state) {
  char path[64];
  char buf[256];
  if (state != nullptr) {
    unwind::TaskPath(0, tid, "stat", path, sizeof(path));
    const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
    *state = n > 0 ? unwind::ParseStatState(buf, static_cast<size_t>(n)) : '?';
  }
  // Under an emulator the line is the host's: another architecture's call numbers.
  if (!unwind::ProcSyscallLinesAreOurs()) return {};
  unwind::TaskPath(0, tid, "syscall", path, sizeof(path));
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
  unwind::TaskSyscall sys;
  if (n <= 0 || !unwind::ParseTaskSyscall(buf, static_cast<size_t>(n), &sys)) return {};
  if (sp != nullptr) *sp = sys.sp;
  TellRestartedCall(0, tid, &sys);  // a timed wait a stop restarted: told by its kernel wait
  return DecodeWait(sys);
}

LockInfo ResolveFutexWait(const DecodedWait& w) { return ResolveFutexWaitOf(0, w); }

bool IsThreadOf(pid_t pid, pid_t tid) {
  if (pid == 0) return IsThreadOfThisProcess(tid);
  if (tid <= 0) return false;
  return syscall(SYS_tgkill, pid, tid, 0) == 0 || errno == EPERM;
}

LockInfo ResolveFutexWaitOf(pid_t pid, const DecodedWait& w) {
  LockInfo info;
  info.addr = w.futex_addr;
  if (w.wait != SyscallWait::kFutex || w.futex_addr == 0) return info;
  if (!kKnownLayouts) return info;
  // Twice at most: an owner seen in the first read that let go before it was confirmed (it no
  // longer exists, or the lock names someone else) is looked for once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    info = ResolveOnce(pid, w);
    if (info.owner == 0) return info;
    if (IsThreadOf(pid, info.owner)) {
      const LockInfo again = ResolveOnce(pid, w);
      if (again.type == info.type && again.owner == info.owner) return info;
    }
    info.owner = 0;
    info.owner_released = true;
  }
  return info;
}

void FollowChain(pid_t waiter, const LockInfo& first, WaitChain* out, ChainReader* reader) {
  *out = WaitChain{};
  out->first = first;
  LockInfo cur = first;
  while (cur.owner != 0) {
    if (cur.owner == waiter) {
      out->deadlock = true;
      out->cycle_from = -1;
      return;
    }
    for (int i = 0; i < out->length; ++i) {
      if (out->links[i].tid == cur.owner) {
        out->deadlock = true;
        out->cycle_from = i;
        return;
      }
    }
    if (out->length == kMaxChain) {
      out->truncated = true;
      return;
    }
    ChainLink& link = out->links[out->length++];
    link.tid = cur.owner;
    if (reader != nullptr) {
      reader->ReadLink(out->length - 1, &link);
    } else {
      ReadThreadName(link.tid, link.name, sizeof(link.name));
      link.wait = ReadThreadWait(link.tid, &link.sp, &link.state);
    }
    if (link.wait.wait == SyscallWait::kFutex) link.wants = ResolveFutexWait(link.wait);
    cur = link.wants;
  }
}

}  // namespace hangwatch::cause
