#include "agent/samplers/wait_fd_cause.h"

#include <cstring>

#include "cause/fault.h"
#include "cause/fd_peer.h"
#include "cause/kernel_wait.h"
#include "cause/sched_pressure.h"
#include "cause/sock_diag.h"
#include "cause/wait_fds.h"
#include "unwind/proc_files.h"
#include "unwind/self_memory.h"

namespace hangwatch::agent {
namespace {

template <size_t N>
void CopyText(const char* from, char (&to)[N]) {
  const size_t n = strnlen(from, N - 1);
  std::memcpy(to, from, n);
  to[n] = '\0';
}

bool IsIpc(cause::FdKind k) {
  return k == cause::FdKind::kPipe || k == cause::FdKind::kFifo ||
         k == cause::FdKind::kUnixSocket || k == cause::FdKind::kTcp || k == cause::FdKind::kUdp ||
         k == cause::FdKind::kSocket;
}

bool IsFile(cause::FdKind k) {
  return k == cause::FdKind::kRegular || k == cause::FdKind::kBlockDevice ||
         k == cause::FdKind::kDirectory;
}

// The evidence of descriptor `d` into *out: ipc (the socket's path or the pipe, its ends, the
// peer processes) or io (the file's path). Other descriptors (a tty, an eventfd) give a path
// only.
void FillFromFd(const cause::FdDescription& d, WaitCause* out) {
  if (IsIpc(d.kind)) {
    out->kind = CauseKind::kIpc;
    CopyText(d.socket_path[0] != '\0' ? d.socket_path : d.path, out->path);
    if (d.local.family != 0)
      cause::FormatEndpoint(d.local, out->local_address, sizeof(out->local_address));
    if (d.remote.family != 0) {
      cause::FormatEndpoint(d.remote, out->remote_address, sizeof(out->remote_address));
    }
    out->num_peers = 0;
    for (size_t i = 0; i < d.peers.count && out->num_peers < kCauseMaxPeers; ++i) {
      WaitProcess& p = out->peers[out->num_peers++];
      p.pid = d.peers.peers[i].pid;
      CopyText(d.peers.peers[i].name, p.name);
    }
  } else if (IsFile(d.kind)) {
    out->kind = CauseKind::kIo;
    CopyText(d.path, out->path);
  } else if (out->path[0] == '\0') {
    CopyText(d.path, out->path);
  }
}

// The /proc scan for the other end of `d` stopped at a bound of its budget: the holders it
// lists (none, often) are only those found before it stopped.
bool ScanCutShort(const cause::FdDescription& d) { return IsIpc(d.kind) && !d.scan.complete; }

// The path argument at `addr` of this process (guarded reads, never past its page).
void ReadPathArgument(uint64_t addr, char (&out)[256]) {
  out[0] = '\0';
  const uint64_t page = 4096;
  const uint64_t first = page - (addr % page);
  size_t got = 0;
  while (got < sizeof(out) - 1) {
    const size_t want = std::min<size_t>(sizeof(out) - 1 - got, got == 0 ? first : page);
    if (!unwind::ReadSelf(addr + got, out + got, want)) break;
    if (memchr(out + got, '\0', want) != nullptr) return;
    got += want;
  }
  out[got] = '\0';
}

}  // namespace

FdWaitResolver::FdWaitResolver(const cause::ScanBudget& budget)
    : budget_(budget),
      scratch_(std::make_unique<cause::WaitFdsScratch>()),
      wait_fds_(std::make_unique<cause::WaitFds>()),
      fd_(std::make_unique<cause::FdDescription>()),
      kernel_(std::make_unique<cause::KernelWait>()),
      cached_(std::make_unique<WaitCause>()) {}

FdWaitResolver::~FdWaitResolver() = default;

void FdWaitResolver::Forget() {
  cached_valid_ = false;
  cause::ForgetPeers(&scratch_->peer);
}

void FdWaitResolver::CopyCached(const WaitCause& from, WaitCause* to) {
  to->kind = from.kind;
  std::memcpy(to->path, from.path, sizeof(to->path));
  std::memcpy(to->wchan, from.wchan, sizeof(to->wchan));
  std::memcpy(to->kernel_stack, from.kernel_stack, sizeof(to->kernel_stack));
  std::memcpy(to->fds, from.fds, sizeof(to->fds));
  to->num_fds = from.num_fds;
  std::memcpy(to->peers, from.peers, sizeof(to->peers));
  to->num_peers = from.num_peers;
  std::memcpy(to->local_address, from.local_address, sizeof(to->local_address));
  std::memcpy(to->remote_address, from.remote_address, sizeof(to->remote_address));
}

void FdWaitResolver::Resolve(pid_t tid, char state, const cause::DecodedWait& w, WaitCause* out) {
  const bool same = cached_valid_ && cached_tid_ == tid && cached_state_ == state &&
                    cached_nr_ == w.nr &&
                    std::memcmp(cached_args_, w.args, sizeof(cached_args_)) == 0;
  // A description whose scan was cut short is tried again on the next samples (a scan that ran
  // out of time on a loaded machine usually finishes on another try), a bounded number of times
  // so that a machine where it never fits pays a few budgets per hang, not one per sample.
  if (same && (cached_complete_ || redescriptions_ >= kMaxRedescriptions)) {
    CopyCached(*cached_, out);
    return;
  }
  redescriptions_ = same ? redescriptions_ + 1 : 0;
  cached_complete_ = Describe(tid, state, w, out);
  ++descriptions_;
  CopyCached(*out, cached_.get());
  cached_valid_ = true;
  cached_tid_ = tid;
  cached_state_ = state;
  cached_nr_ = w.nr;
  std::memcpy(cached_args_, w.args, sizeof(cached_args_));
}

bool FdWaitResolver::Describe(pid_t tid, char state, const cause::DecodedWait& w, WaitCause* out) {
  // A thread in uninterruptible sleep waits for I/O whatever the call; otherwise what the
  // descriptor is decides.
  out->kind = state == 'D' ? CauseKind::kIo : CauseKind::kOther;
  bool complete = true;
  if (w.wait == cause::SyscallWait::kDescriptors) {
    unwind::TaskSyscall sys;
    sys.fields = 9;
    sys.nr = w.nr;
    std::memcpy(sys.args, w.args, sizeof(sys.args));
    *wait_fds_ = cause::WaitFds{};
    if (cause::DescribeWaitFds(0, sys, budget_, scratch_.get(), wait_fds_.get())) {
      const cause::WaitFds& wf = *wait_fds_;
      out->num_fds = 0;
      for (size_t i = 0; i < wf.count && out->num_fds < kCauseMaxFds; ++i) {
        out->fds[out->num_fds++] = wf.fds[i].fd;
      }
      for (size_t i = 0; i < wf.count; ++i) complete = complete && !ScanCutShort(wf.described[i]);
      // The first descriptor with another side names it; a file otherwise.
      for (size_t i = 0; i < wf.count; ++i) {
        if (IsIpc(wf.described[i].kind)) {
          FillFromFd(wf.described[i], out);
          break;
        }
      }
      for (size_t i = 0; i < wf.count && out->kind != CauseKind::kIpc; ++i) {
        if (IsFile(wf.described[i].kind)) {
          FillFromFd(wf.described[i], out);
          break;
        }
      }
    }
  } else if (w.wait == cause::SyscallWait::kFile && w.fd >= 0) {
    out->fds[0] = w.fd;
    out->num_fds = 1;
    *fd_ = cause::FdDescription{};
    if (cause::DescribeFd(0, w.fd, budget_, &scratch_->peer, fd_.get())) FillFromFd(*fd_, out);
    complete = !ScanCutShort(*fd_);
  } else if (w.wait == cause::SyscallWait::kFile && w.path_addr != 0) {
    ReadPathArgument(w.path_addr, out->path);
    if (out->path[0] != '\0') out->kind = CauseKind::kIo;
  }
  if (out->kind == CauseKind::kIo || state == 'D') {
    *kernel_ = cause::KernelWait{};
    if (cause::ReadKernelWait(0, tid, kernel_.get())) {
      CopyText(kernel_->wchan, out->wchan);
      if (kernel_->stack_readable) CopyText(kernel_->stack, out->kernel_stack);
    }
  }
  return complete;
}

HangScheduling::HangScheduling()
    : probe_(std::make_unique<cause::SchedProbe>()),
      before_(std::make_unique<cause::SchedSnapshot>()),
      after_(std::make_unique<cause::SchedSnapshot>()),
      fault_scratch_(std::make_unique<cause::FaultScratch>()),
      cold_(std::make_unique<cause::ColdMappings>()) {
  probe_->Init(0);
}

HangScheduling::~HangScheduling() = default;

void HangScheduling::Start(pid_t tid) {
  probe_->Take(tid, before_.get());
  started_ = true;
  cold_listed_ = false;
}

void HangScheduling::NoteFaultSample() {
  if (!started_ || cold_listed_) return;
  cold_listed_ = true;
  // Bounded: 4 GiB of mappings' pages at most (mincore touches none of them).
  *cold_ = cause::ColdMappings{};
  cause::ColdFileMappings(uint64_t{1} << 20, fault_scratch_.get(), cold_.get());
}

void HangScheduling::End(pid_t tid, WaitCause* cause) {
  if (!started_) return;
  started_ = false;
  probe_->Take(tid, after_.get());
  const cause::SchedPressure p = cause::Compare(*before_, *after_);
  RefineBySchedule(p, cause);
  // The file mapping with the most pages out of memory while the thread was in a fault.
  if (cause->kind == CauseKind::kFault && cold_listed_ && cold_->count > 0) {
    CopyText(cold_->mappings[0].path, cause->mapping);
  }
}

namespace {

// Time off the CPU and not waiting for one (asleep: in a busy hang, outside any system call,
// reading pages in or reclaiming memory); 0 without the run delay.
uint64_t BlockedNs(const cause::SchedPressure& p) {
  if (!p.has_run_delay || p.duration_ns <= 0) return 0;
  const uint64_t d = static_cast<uint64_t>(p.duration_ns);
  const uint64_t used = p.cpu_ns + p.run_delay_ns;
  return used >= d ? 0 : d - used;
}

bool Material(uint64_t part_ns, int64_t duration_ns) {
  return duration_ns > 0 &&
         part_ns * 1000 >= kMaterialPermille * static_cast<uint64_t>(duration_ns);
}

// The resource the machine stalled on most, of those listed from `first` (0 cpu, 1 memory,
// 2 io), its "some" stall at least `permille` of the interval; nullptr when none.
const cause::SchedPressure::Resource* Worst(const cause::SchedPressure& p, size_t first,
                                            uint32_t permille, const char** name) {
  const cause::SchedPressure::Resource* all[] = {&p.cpu, &p.memory, &p.io};
  const char* names[] = {"cpu", "memory", "io"};
  const cause::SchedPressure::Resource* worst = nullptr;
  for (size_t i = first; i < 3; ++i) {
    if (all[i]->present && all[i]->some_permille >= permille &&
        (worst == nullptr || all[i]->some_permille > worst->some_permille)) {
      worst = all[i];
      *name = names[i];
    }
  }
  return worst;
}

void SetPressure(const char* name, const cause::SchedPressure::Resource* r, WaitCause* cause) {
  CopyText(name, cause->pressure_resource);
  cause->pressure_some_avg10_centi = r != nullptr ? static_cast<uint32_t>(r->some_avg10 * 100) : 0;
  cause->pressure_full_avg10_centi = r != nullptr ? static_cast<uint32_t>(r->full_avg10 * 100) : 0;
}

// A busy hang's kind by the counters, or kNone when they explain nothing (a computation).
CauseKind BusyKind(const cause::SchedPressure& p, const char** pressure_name,
                   const cause::SchedPressure::Resource** pressure) {
  // A throttled thread waits on its run queue while its cgroup has no quota left: that wait is
  // the quota's (throttled), not other load's (starved), when the cgroup was throttled for at
  // least half of it.
  const bool quota_wait = p.throttled && p.throttled_usec * 2000 >= p.run_delay_ns;
  const uint64_t blocked = BlockedNs(p);
  // A faulting thread that also waited for a CPU: the larger share of the pass names it.
  // Reading pages in (off the CPU, not waiting for it, with major faults) is the fault when that
  // time is at least its wait for a CPU and its time on the CPU.
  const bool faulted = p.has_faults && p.major_faults > 0;
  if (faulted && (!p.has_run_delay || (blocked >= p.run_delay_ns && blocked >= p.cpu_ns))) {
    return CauseKind::kFault;
  }
  if (p.starved && !quota_wait) return CauseKind::kStarved;
  if (p.throttled) return CauseKind::kThrottled;
  // The machine's pressure, when it accounts for a material part of the pass: the thread's own
  // wait for a CPU (under half of it: that is starved), or its time blocked off the CPU while
  // the machine stalled on memory or I/O for as long a share.
  if (p.has_run_delay && Material(p.run_delay_ns, p.duration_ns)) {
    *pressure_name = "cpu";
    *pressure = p.cpu.present ? &p.cpu : nullptr;
    return CauseKind::kPressure;
  }
  if (Material(blocked, p.duration_ns)) {
    *pressure = Worst(p, 1, kMaterialPermille, pressure_name);
    if (*pressure != nullptr) return CauseKind::kPressure;
  }
  return CauseKind::kNone;
}

}  // namespace

void RefineBySchedule(const cause::SchedPressure& p, WaitCause* cause) {
  const bool busy = cause->kind == CauseKind::kNone || cause->kind == CauseKind::kCpu;
  const bool io = cause->kind == CauseKind::kIo;
  if (io && p.has_faults) cause->major_faults = p.major_faults;
  if (!busy && !io) return;
  // The resource the machine stalled on most (10 % of the interval or more), a figure; an io
  // hang is explained by the machine's I/O or memory stalls, not by its CPU's.
  const char* worst_name = "";
  const cause::SchedPressure::Resource* worst = Worst(p, busy ? 0 : 1, 100, &worst_name);
  if (!busy) {
    if (worst != nullptr) {
      cause->kind = CauseKind::kPressure;
      SetPressure(worst_name, worst, cause);
    }
    return;
  }
  const char* pressure_name = "";
  const cause::SchedPressure::Resource* pressure = nullptr;
  const CauseKind kind = BusyKind(p, &pressure_name, &pressure);
  if (kind == CauseKind::kNone) return;
  cause->kind = kind;
  // Every figure that applies, whatever the kind: a starved hang on a machine short of CPU
  // says so too ("was it us or the machine?"), and so does one that faulted.
  cause->run_delay_ns = p.run_delay_ns;
  cause->runnable_threads = p.runnable_others;
  if (p.throttled) {
    cause->throttled_ns = p.throttled_usec * 1000;
    cause->nr_throttled = p.nr_throttled;
  }
  if (p.has_faults) cause->major_faults = p.major_faults;
  if (kind == CauseKind::kPressure) {
    SetPressure(pressure_name, pressure, cause);
  } else if (worst != nullptr) {
    SetPressure(worst_name, worst, cause);
  }
}

}  // namespace hangwatch::agent
