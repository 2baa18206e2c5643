#include "unwind/ptrace_capture.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace hangwatch::unwind {
namespace {

constexpr uintptr_t kPageSize = 4096;  // iovec granularity for partial stack reads

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Reads a small /proc file into buf (NUL-terminated). Returns bytes read, or -1 with errno set.
// A relative `path` is looked up from `dir_fd`.
ssize_t ReadSmallFile(const char* path, char* buf, size_t size, int dir_fd = AT_FDCWD) {
  int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  while (used + 1 < size) {
    ssize_t n = read(fd, buf + used, size - 1 - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  buf[used] = '\0';
  return static_cast<ssize_t>(used);
}

// Reads a whole /proc file of any size (maps can be large).
bool ReadProcFile(const char* path, std::string* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

struct StatFields {
  char state = '?';
  uint64_t utime = 0;  // clock ticks
  uint64_t stime = 0;
  const char* comm = nullptr;  // inside the parsed text, not NUL-terminated
  size_t comm_size = 0;
};

// Parses /proc/.../stat: "pid (comm) state ppid ... utime(14) stime(15) ...". The comm may
// contain spaces and parentheses, so the fields start after the LAST ')'.
bool ParseStat(const char* text, StatFields* out) {
  const char* open_paren = std::strchr(text, '(');
  const char* close_paren = std::strrchr(text, ')');
  if (open_paren == nullptr || close_paren == nullptr || close_paren < open_paren ||
      close_paren[1] != ' ') {
    return false;
  }
  out->comm = open_paren + 1;
  out->comm_size = static_cast<size_t>(close_paren - open_paren - 1);
  const char* p = close_paren + 2;
  out->state = *p;
  // Field 3 is the state; skip to field 14.
  int field = 3;
  while (*p != '\0' && field < 14) {
    if (*p == ' ') ++field;
    ++p;
  }
  if (field != 14) return false;
  char* end = nullptr;
  out->utime = std::strtoull(p, &end, 10);
  if (end == p || *end != ' ') return false;
  out->stime = std::strtoull(end + 1, &end, 10);
  return true;
}

// Name, state and CPU time, read while the thread still runs (a stopped tracee reads as 't').
// The name comes from stat, which shows the same task name as /proc/.../comm: one file less
// per thread. `task_fd` is /proc/PID/task (or -1): relative lookups skip the walk through
// /proc/PID, a good share of the cost of these small reads.
void ReadThreadInfo(pid_t pid, int task_fd, PtraceThread* t) {
  char path[64];
  char buf[1024];
  if (task_fd >= 0) {
    std::snprintf(path, sizeof(path), "%d/stat", t->tid);
  } else {
    std::snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, t->tid);
  }
  StatFields stat;
  if (ReadSmallFile(path, buf, sizeof(buf), task_fd) > 0 && ParseStat(buf, &stat)) {
    t->name.assign(stat.comm, stat.comm_size);
    t->state = stat.state;
    static const long ticks = sysconf(_SC_CLK_TCK);
    if (ticks > 0) {
      t->cpu_ns = (stat.utime + stat.stime) * (1000000000u / static_cast<uint64_t>(ticks));
    }
  }
  // schedstat's first field is the time spent on the CPU in ns (CONFIG_SCHED_INFO).
  if (task_fd >= 0) {
    std::snprintf(path, sizeof(path), "%d/schedstat", t->tid);
  } else {
    std::snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, t->tid);
  }
  if (ReadSmallFile(path, buf, sizeof(buf), task_fd) > 0) {
    char* end = nullptr;
    uint64_t ns = std::strtoull(buf, &end, 10);
    if (end != buf) {
      t->cpu_ns = ns;
      t->cpu_ns_exact = true;
    }
  }
}

// Thread ids listed in /proc/PID/task. Returns false (errno set) when the directory is gone.
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

struct Mapping {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// Readable mappings of /proc/PID/maps, sorted (the kernel lists them in address order).
std::vector<Mapping> ReadReadableMappings(pid_t pid) {
  std::vector<Mapping> out;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/maps", pid);
  std::string text;
  if (!ReadProcFile(path, &text)) return out;
  // "lo-hi perms offset dev inode path": only lo, hi and the read permission matter here.
  const char* p = text.c_str();
  const char* end = p + text.size();
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (eol == nullptr) eol = end;
    char* q = nullptr;
    unsigned long lo = std::strtoul(p, &q, 16);
    if (q != p && *q == '-') {
      const char* h = q + 1;
      unsigned long hi = std::strtoul(h, &q, 16);
      if (q != h && *q == ' ' && q + 1 < eol && q[1] == 'r' && lo < hi) {
        out.push_back({static_cast<uintptr_t>(lo), static_cast<uintptr_t>(hi)});
      }
    }
    p = eol + 1;
  }
  return out;
}

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

// Registers of a stopped tracee. Returns false (errno set) on failure.
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
#else
#error "ptrace_capture: unsupported architecture"
#endif
  return true;
}

// Copies [sp, min(sp + budget, stack top)) into t->stack (already sized to the budget). Remote
// iovecs are split at page boundaries so that an unmapped page ends the copy there (the kernel
// reports partial transfers per iovec) instead of failing it.
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

// For a thread that never stopped (uninterruptible sleep): /proc/PID/task/TID/syscall gives
// "nr args... sp pc" while it is blocked, and its stack cannot change while it stays blocked.
void ReadBlockedRegisters(pid_t pid, const std::vector<Mapping>& maps, PtraceThread* t) {
  char path[64];
  char buf[512];
  std::snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, t->tid);
  if (ReadSmallFile(path, buf, sizeof(buf)) <= 0) return;
  long nr = 0;
  unsigned long a[6] = {};
  unsigned long sp = 0;
  unsigned long pc = 0;
  if (std::sscanf(buf, "%ld %lx %lx %lx %lx %lx %lx %lx %lx", &nr, &a[0], &a[1], &a[2], &a[3],
                  &a[4], &a[5], &sp, &pc) != 9) {
    return;
  }
  t->syscall_nr = nr;
  t->regs.sp = sp;
  t->regs.pc = pc;
  t->regs.fp = 0;  // unknown: only CFI can walk from here
  // For CFI: pc and sp are known, every other register is not (0).
  std::memset(t->dwarf_regs, 0, sizeof(t->dwarf_regs));
#if defined(__x86_64__)
  t->dwarf_regs[7] = sp;
  t->dwarf_regs[16] = pc;
  t->num_dwarf_regs = 17;
#elif defined(__aarch64__)
  t->dwarf_regs[31] = sp;
  t->dwarf_regs[32] = pc;
  t->num_dwarf_regs = 33;
#endif
  CopyStack(t->tid, maps, t);
}

std::mutex g_late_mu;
std::vector<pid_t> g_late;  // seized threads that had not stopped when we gave up

// Tracks seized threads so that every exit path detaches them.
class Attachments {
 public:
  explicit Attachments(PtraceSnapshot* snap) : snap_(snap) {}
  ~Attachments() { DetachAll(); }

  // Resumes one thread (if we stopped it) and records how long it was stopped.
  void Detach(PtraceThread& t) {
    const size_t i = static_cast<size_t>(&t - snap_->threads.data());
    if (!seized_[i]) return;
    if (stopped_[i]) {
      ptrace(PTRACE_DETACH, t.tid, nullptr,
             reinterpret_cast<void*>(static_cast<uintptr_t>(t.pending_signal)));
      t.paused_ns = NowNs() - stop_ns_[i];
      stopped_[i] = false;
    } else if (t.status == PtraceThreadStatus::kNotStopped) {
      std::lock_guard<std::mutex> lock(g_late_mu);
      g_late.push_back(t.tid);
    }
    seized_[i] = false;
  }

  void DetachAll() {
    for (PtraceThread& t : snap_->threads) Detach(t);
  }

  void Resize() {
    seized_.resize(snap_->threads.size(), false);
    stopped_.resize(snap_->threads.size(), false);
    stop_ns_.resize(snap_->threads.size(), 0);
  }
  bool seized(const PtraceThread& t) const { return seized_[&t - snap_->threads.data()]; }
  void set_seized(const PtraceThread& t) { seized_[&t - snap_->threads.data()] = true; }
  void set_stopped(const PtraceThread& t) {
    stopped_[&t - snap_->threads.data()] = true;
    stop_ns_[&t - snap_->threads.data()] = NowNs();
  }
  void clear_stopped(const PtraceThread& t) { stopped_[&t - snap_->threads.data()] = false; }
  bool stopped(const PtraceThread& t) const { return stopped_[&t - snap_->threads.data()]; }

 private:
  PtraceSnapshot* snap_;
  std::vector<bool> seized_;
  std::vector<bool> stopped_;
  std::vector<uint64_t> stop_ns_;  // when each thread's stop was seen
};

// Blocks, in the calling thread, the termination signals for the window (the destructor
// restores the mask, which delivers whatever arrived meanwhile, after the target was released)
// and SIGCHLD, which the kernel sends the tracer whenever a tracee stops: waiting for it with
// sigtimedwait sleeps exactly until there is something to reap, instead of spinning on a CPU
// that the threads we wait for may need in order to reach their stop.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
    sigemptyset(&chld_);
    sigaddset(&chld_, SIGCHLD);
    sigset_t pending;
    chld_was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGCHLD) == 1;
  }
  ~BlockSignals() {
    // Drop the SIGCHLDs our tracees caused (unless one was already pending or the caller
    // blocks it anyway); a real child's exit is still reported by waitpid.
    if (!chld_was_pending_ && sigismember(&old_, SIGCHLD) != 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&chld_, nullptr, &zero) == SIGCHLD) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  bool TerminationPending() const {
    sigset_t pending;
    if (sigpending(&pending) != 0) return false;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      if (sigismember(&pending, s) == 1 && sigismember(&old_, s) != 1) return true;
    }
    return false;
  }
  // Sleeps until a SIGCHLD is pending (consuming it) or `ns` have passed.
  void WaitForChild(uint64_t ns) const {
    timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
    sigtimedwait(&chld_, nullptr, &ts);
  }

 private:
  sigset_t old_;
  sigset_t chld_;
  bool chld_was_pending_ = false;
};

// Runs the calling thread under SCHED_FIFO (lowest real-time priority) for the stop window, when
// allowed (root, CAP_SYS_NICE or RLIMIT_RTPRIO): on a busy machine the tracer otherwise waits
// for a CPU after every SIGCHLD and before detaching, and the target stays stopped meanwhile.
// The window is bounded (stop_timeout_ms) and the tracer sleeps while it waits, so this cannot
// starve anything. The destructor restores the previous policy.
class RealtimeWindow {
 public:
  explicit RealtimeWindow(bool enable) {
    if (!enable || pthread_getschedparam(pthread_self(), &policy_, &param_) != 0) return;
    if (policy_ != SCHED_OTHER && policy_ != SCHED_BATCH) return;  // already special: leave it
    sched_param fifo{};
    fifo.sched_priority = sched_get_priority_min(SCHED_FIFO);
    active_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
  }
  ~RealtimeWindow() { End(); }
  void End() {
    if (active_) pthread_setschedparam(pthread_self(), policy_, &param_);
    active_ = false;
  }

 private:
  int policy_ = SCHED_OTHER;
  sched_param param_{};
  bool active_ = false;
};

pid_t TracerOf(pid_t pid) {
  char path[64];
  char buf[4096];
  std::snprintf(path, sizeof(path), "/proc/%d/status", pid);
  if (ReadSmallFile(path, buf, sizeof(buf)) <= 0) return 0;
  const char* p = std::strstr(buf, "\nTracerPid:");
  if (p == nullptr) return 0;
  return static_cast<pid_t>(std::strtol(p + 11, nullptr, 10));
}

bool ProcessGone(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d", pid);
  return access(path, F_OK) != 0;
}

}  // namespace

const char* PtraceThreadStatusName(PtraceThreadStatus status) {
  switch (status) {
    case PtraceThreadStatus::kCaptured:
      return "captured";
    case PtraceThreadStatus::kVanished:
      return "vanished";
    case PtraceThreadStatus::kZombie:
      return "zombie";
    case PtraceThreadStatus::kNotStopped:
      return "did not stop";
    case PtraceThreadStatus::kFailed:
      return "failed";
  }
  return "?";
}

size_t PtraceSnapshot::CountWithStatus(PtraceThreadStatus s) const {
  return static_cast<size_t>(std::count_if(threads.begin(), threads.end(),
                                           [s](const PtraceThread& t) { return t.status == s; }));
}

PtraceSnapshot CapturePtraceSnapshot(pid_t pid, const PtraceCaptureOptions& options) {
  const uint64_t call_start = NowNs();
  PtraceSnapshot snap;
  snap.pid = pid;
  auto fail = [&](PtraceError e, int err) {
    snap.error = e;
    snap.error_errno = err;
    snap.capture_ns = NowNs() - call_start;
    return snap;
  };
  if (pid <= 0) return fail(PtraceError::kNoSuchProcess, ESRCH);
  if (pid == getpid()) return fail(PtraceError::kIsSelf, EINVAL);

  std::vector<pid_t> tids;
  if (!ListTasks(pid, &tids)) {
    return errno == ENOENT ? fail(PtraceError::kNoSuchProcess, ENOENT)
                           : fail(PtraceError::kSystem, errno);
  }
  if (tids.empty()) {
    return ProcessGone(pid) ? fail(PtraceError::kNoSuchProcess, ESRCH)
                            : fail(PtraceError::kZombie, 0);
  }
  if (tids.size() > options.max_threads) {
    snap.omitted = tids.size() - options.max_threads;
    tids.resize(options.max_threads);
  }

  // ---- before the stop: per-thread facts, stack mappings, buffers, PTRACE_SEIZE ----
  snap.threads.reserve(std::min(options.max_threads, tids.size() + 64));
  char task_path[64];
  std::snprintf(task_path, sizeof(task_path), "/proc/%d/task", pid);
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) close(fd);
    }
  } task_dir{open(task_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  auto add_thread = [&](pid_t tid, bool during_stop) {
    PtraceThread t;
    t.tid = tid;
    t.created_during_stop = during_stop;
    ReadThreadInfo(pid, task_dir.fd, &t);
    t.stack.resize(options.stack_bytes);
    snap.threads.push_back(std::move(t));
  };
  for (pid_t tid : tids) add_thread(tid, false);
  // A zombie process: the leader exited and no live thread is left (a thread whose stat could
  // not be read counts as gone).
  if (std::none_of(snap.threads.begin(), snap.threads.end(), [](const PtraceThread& t) {
        return t.state != 'Z' && t.state != 'X' && t.state != '?';
      })) {
    snap.threads.clear();
    return ProcessGone(pid) ? fail(PtraceError::kNoSuchProcess, ESRCH)
                            : fail(PtraceError::kZombie, 0);
  }
  std::vector<Mapping> maps = ReadReadableMappings(pid);

  BlockSignals signals;
  Attachments attached(&snap);
  attached.Resize();

  // Seizes one thread. Returns false with snap.error set when the whole snapshot must stop.
  auto seize = [&](PtraceThread& t) -> bool {
    if (t.state == 'Z' || t.state == 'X') {
      t.status = PtraceThreadStatus::kZombie;
      return true;
    }
    if (ptrace(PTRACE_SEIZE, t.tid, nullptr, nullptr) == 0) {
      attached.set_seized(t);
      return true;
    }
    int err = errno;
    if (err == ESRCH) {
      t.status = PtraceThreadStatus::kVanished;
      return true;
    }
    if (err == EPERM) {
      pid_t tracer = TracerOf(pid);
      if (tracer != 0 && tracer != getpid()) {
        snap.tracer_pid = tracer;
        snap.error = PtraceError::kAlreadyTraced;
      } else {
        snap.error = ProcessGone(pid) ? PtraceError::kExited : PtraceError::kPermission;
      }
      snap.error_errno = err;
      return false;
    }
    t.status = PtraceThreadStatus::kFailed;
    t.error_errno = err;
    return true;
  };
  // A fatal error (EPERM...) usually comes from the first thread. Threads seized before it
  // still go through the window below: the kernel detaches only stopped tracees, so they are
  // interrupted, waited for and detached like the others, just without being copied.
  bool abort = false;
  for (PtraceThread& t : snap.threads) {
    if (!seize(t)) {
      abort = true;
      break;
    }
  }

  // ---- the stop window ----
  RealtimeWindow realtime(options.realtime_window);
  const uint64_t window_start = NowNs();
  const uint64_t deadline =
      window_start + static_cast<uint64_t>(options.stop_timeout_ms) * 1000000u;
  std::vector<size_t> pending;
  auto interrupt = [&](size_t i) {
    PtraceThread& t = snap.threads[i];
    if (!attached.seized(t)) return;
    if (ptrace(PTRACE_INTERRUPT, t.tid, nullptr, nullptr) == 0) {
      pending.push_back(i);
    } else {
      t.status = PtraceThreadStatus::kVanished;
    }
  };
  for (size_t i = 0; i < snap.threads.size(); ++i) interrupt(i);

  bool cancelled = false;
  uint64_t last_stop = window_start;
  auto copy_thread = [&](PtraceThread& t) {
    if (!ReadRegisters(&t)) {
      t.status = errno == ESRCH ? PtraceThreadStatus::kVanished : PtraceThreadStatus::kFailed;
      t.error_errno = errno;
      t.stack.clear();
      return;
    }
    CopyStack(t.tid, maps, &t);
    t.status = PtraceThreadStatus::kCaptured;
  };
  auto wait_pending = [&]() {
    while (!pending.empty()) {
      bool progress = false;
      for (size_t k = 0; k < pending.size();) {
        PtraceThread& t = snap.threads[pending[k]];
        int status = 0;
        pid_t r = waitpid(t.tid, &status, __WALL | WNOHANG);
        bool done = false;
        if (r == t.tid) {
          if (WIFSTOPPED(status)) {
            // PTRACE_EVENT_STOP: our interrupt or a group-stop (stays a group-stop after we
            // detach). Event 0: a signal-delivery-stop: keep the signal to re-inject it.
            if ((status >> 16) == 0) t.pending_signal = WSTOPSIG(status);
            attached.set_stopped(t);
            last_stop = NowNs();
            if (!options.stop_all && !abort) {
              // One thread at a time: copy it and let it go right away.
              copy_thread(t);
              attached.Detach(t);
            }
          } else {  // WIFEXITED / WIFSIGNALED
            t.status = PtraceThreadStatus::kVanished;
          }
          done = true;
        } else if (r < 0 && errno != EINTR) {
          t.status = PtraceThreadStatus::kVanished;  // ECHILD: gone and reaped elsewhere
          done = true;
        }
        if (done) {
          pending[k] = pending.back();
          pending.pop_back();
          progress = true;
        } else {
          ++k;
        }
      }
      if (pending.empty()) break;
      if (signals.TerminationPending()) {
        cancelled = true;
        break;
      }
      const uint64_t now = NowNs();
      if (now >= deadline) break;
      if (!progress) {
        // A thread that stopped may have been killed since (SIGKILL ends a ptrace-stop). Reap
        // it: an unreaped zombie thread would keep the leader's own exit from ever being
        // reported, and this wait from ending before the deadline.
        for (PtraceThread& t : snap.threads) {
          int status = 0;
          if (attached.stopped(t) && waitpid(t.tid, &status, __WALL | WNOHANG) == t.tid &&
              (WIFEXITED(status) || WIFSIGNALED(status))) {
            attached.clear_stopped(t);
            t.status = PtraceThreadStatus::kVanished;
            progress = true;
          }
        }
      }
      if (!progress) {
        // At most 1 ms per sleep: SIGCHLD is not sent when the caller ignores it
        // (SIG_IGN / SA_NOCLDSTOP), and termination signals are checked between sleeps.
        signals.WaitForChild(std::min<uint64_t>(deadline - now, 1000000u));
      }
    }
    for (size_t i : pending) snap.threads[i].status = PtraceThreadStatus::kNotStopped;
    pending.clear();
  };
  wait_pending();

  // Threads created before their creator stopped: seize and stop them too, until stable.
  for (int round = 0; round < options.relist_rounds && !cancelled && !abort; ++round) {
    std::vector<pid_t> now;
    if (!ListTasks(pid, &now)) break;
    size_t before = snap.threads.size();
    for (pid_t tid : now) {
      bool known = std::any_of(snap.threads.begin(), snap.threads.end(),
                               [tid](const PtraceThread& t) { return t.tid == tid; });
      if (!known && snap.threads.size() < options.max_threads) add_thread(tid, true);
    }
    if (snap.threads.size() == before) break;
    attached.Resize();
    bool ok = true;
    for (size_t i = before; i < snap.threads.size() && ok; ++i) ok = seize(snap.threads[i]);
    if (!ok) {
      snap.error = PtraceError::kOk;  // a late thread we may not trace: skip it, keep the rest
      snap.error_errno = 0;
    }
    for (size_t i = before; i < snap.threads.size(); ++i) interrupt(i);
    wait_pending();
  }

  // Copy registers and stacks of every stopped thread.
  if (!cancelled && !abort) {
    for (PtraceThread& t : snap.threads) {
      if (attached.stopped(t)) copy_thread(t);
    }
  }
  const uint64_t stop_latency = last_stop - window_start;
  attached.DetachAll();
  snap.stopped_ns = NowNs() - window_start;
  realtime.End();
  for (const PtraceThread& t : snap.threads) {
    snap.max_thread_pause_ns = std::max(snap.max_thread_pause_ns, t.paused_ns);
  }
  snap.stop_latency_ns = stop_latency;

  // ---- after the stop ----
  for (PtraceThread& t : snap.threads) {
    if (t.status == PtraceThreadStatus::kNotStopped && !cancelled) {
      ReadBlockedRegisters(pid, maps, &t);
    }
    if (t.status != PtraceThreadStatus::kCaptured && t.status != PtraceThreadStatus::kNotStopped) {
      t.stack.clear();
    }
    if (t.status == PtraceThreadStatus::kNotStopped && t.regs.sp == 0) t.stack.clear();
  }
  ReleaseLateStoppers();
  std::sort(snap.threads.begin(), snap.threads.end(),
            [](const PtraceThread& a, const PtraceThread& b) { return a.tid < b.tid; });

  if (abort) return fail(snap.error, snap.error_errno);
  if (cancelled) return fail(PtraceError::kCancelled, EINTR);
  if (snap.CountWithStatus(PtraceThreadStatus::kCaptured) == 0 &&
      snap.CountWithStatus(PtraceThreadStatus::kNotStopped) == 0) {
    // Nothing captured although it was alive when we started: it exited under us (it may be
    // a zombie by now, or already reaped).
    return fail(PtraceError::kExited, ESRCH);
  }
  snap.capture_ns = NowNs() - call_start;
  return snap;
}

size_t ReleaseLateStoppers() {
  std::lock_guard<std::mutex> lock(g_late_mu);
  for (size_t k = 0; k < g_late.size();) {
    int status = 0;
    pid_t tid = g_late[k];
    pid_t r = waitpid(tid, &status, __WALL | WNOHANG);
    bool release = false;
    if (r == tid && WIFSTOPPED(status)) {
      int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));
      release = true;
    } else if (r == tid || (r < 0 && errno == ECHILD)) {
      release = true;  // exited
    }
    if (release) {
      g_late[k] = g_late.back();
      g_late.pop_back();
    } else {
      ++k;
    }
  }
  return g_late.size();
}

}  // namespace hangwatch::unwind
