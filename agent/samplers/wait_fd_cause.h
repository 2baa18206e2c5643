// The cause/ resolvers that need memory of their own, wired into a WaitCause (Linux only; used
// by wait_cause_probe.cc on the watchdog thread):
//   FdWaitResolver  a wait on a descriptor or a file: what the descriptor is and who holds its
//                   other end (ipc: a pipe's or a socket's peer process, addresses), or the file
//                   and the kernel function the thread sleeps in (io);
//   HangScheduling  the thread's scheduling counters at a hang's start and end: starved,
//                   throttled, pressure, major faults (fault, and the faults of an io hang),
//                   decided by RefineBySchedule.
// Both allocate their scratch when constructed (before the watchdog runs) and nothing after.
#ifndef HANGWATCH_AGENT_SAMPLERS_WAIT_FD_CAUSE_H_
#define HANGWATCH_AGENT_SAMPLERS_WAIT_FD_CAUSE_H_

#include <sys/types.h>

#include <memory>

#include "cause/scan_budget.h"
#include "cause/syscall_decode.h"
#include "hang/model/wait_cause.h"

namespace hangwatch::cause {
struct ColdMappings;
struct FaultScratch;
struct FdDescription;
struct WaitFds;
struct WaitFdsScratch;
struct KernelWait;
class SchedProbe;
struct SchedPressure;
struct SchedSnapshot;
}  // namespace hangwatch::cause

namespace hangwatch::agent {

// A descriptor is described once per hang, and again only when the thread's system call line
// (number, arguments) or its state changes: describing one scans /proc (milliseconds), while a
// repeated sample of the same wait costs one comparison and a copy. A description whose /proc
// scan for the other end was cut short by its budget (a loaded machine stretches the scan past
// its time) is not an answer: the next samples describe the wait again, up to
// kMaxRedescriptions times per wait, then keep the last description.
class FdWaitResolver {
 public:
  static constexpr int kMaxRedescriptions = 4;
  // `budget` bounds each description's scans (tests give smaller or larger ones).
  explicit FdWaitResolver(const cause::ScanBudget& budget = {});
  ~FdWaitResolver();
  // A new hang: what was described, and the peers' caches, are forgotten.
  void Forget();
  // Fills out's kind (ipc, io, or other) and evidence for thread `tid` (state `state`) waiting
  // in `w`, a kFile or kDescriptors call or any call in D state.
  void Resolve(pid_t tid, char state, const cause::DecodedWait& w, WaitCause* out);
  // How many descriptions were made (not answered from the cache): for tests and benchmarks.
  uint64_t descriptions() const { return descriptions_; }

 private:
  // Returns false when a scan for a descriptor's other end was cut short by the budget.
  bool Describe(pid_t tid, char state, const cause::DecodedWait& w, WaitCause* out);
  static void CopyCached(const WaitCause& from, WaitCause* to);

  cause::ScanBudget budget_;

  std::unique_ptr<cause::WaitFdsScratch> scratch_;
  std::unique_ptr<cause::WaitFds> wait_fds_;
  std::unique_ptr<cause::FdDescription> fd_;
  std::unique_ptr<cause::KernelWait> kernel_;
  std::unique_ptr<WaitCause> cached_;  // the last description, with its key below
  bool cached_valid_ = false;
  bool cached_complete_ = false;  // its scans finished: an answer for the rest of the hang
  int redescriptions_ = 0;        // of the cached wait, after cut scans
  pid_t cached_tid_ = 0;
  char cached_state_ = 0;
  int64_t cached_nr_ = -1;
  uint64_t cached_args_[6] = {};
  uint64_t descriptions_ = 0;
};

class HangScheduling {
 public:
  HangScheduling();
  ~HangScheduling();
  // The counters of thread `tid` at the hang's start.
  void Start(pid_t tid);
  // A sample found the thread in uninterruptible sleep outside any system call (a page fault):
  // once per hang, this process's file mappings with pages not in memory are listed, the
  // candidates for the fault (the faulting address is not published).
  void NoteFaultSample();
  // Compares with the start and refines *cause (RefineBySchedule); a fault names the file
  // mapping most out of memory. Nothing when Start was not called.
  void End(pid_t tid, WaitCause* cause);

 private:
  std::unique_ptr<cause::SchedProbe> probe_;
  std::unique_ptr<cause::SchedSnapshot> before_;
  std::unique_ptr<cause::SchedSnapshot> after_;
  std::unique_ptr<cause::FaultScratch> fault_scratch_;
  std::unique_ptr<cause::ColdMappings> cold_;
  bool started_ = false;
  bool cold_listed_ = false;
};

// The share of a hang (per mille of the interval its counters cover) that the machine's
// pressure must account for to be named its cause: the thread's own wait for a CPU, or its time
// blocked off the CPU while the machine stalled on memory or I/O. Under it, the machine's state
// explains too little of the pass (a busy hang that kept its CPU on a loaded machine is a
// computation).
inline constexpr uint32_t kMaterialPermille = 200;

// What a hang's scheduling counters `p` (from its first sample to its end) say of *cause:
//   a busy hang (no cause) becomes, by the first that holds: fault (major faults, and its time
//   blocked off the CPU, reading pages in, is at least its wait for a CPU and its time on the
//   CPU: the larger share names a faulting thread that also waited for a CPU); starved (it
//   waited for a CPU for half the hang or more, and that wait was not its cgroup's quota's:
//   throttled for less than half of it); throttled (its cgroup's quota ran out at all);
//   pressure, resource cpu (it waited for a CPU for kMaterialPermille of the hang or more);
//   pressure, resource memory or io (it was blocked off the CPU for kMaterialPermille of the
//   hang or more while the machine stalled on that resource for as long a share, the larger
//   one). Else it stays a computation. Whatever the kind, it carries every figure that applies:
//   run delay, throttling, major faults, the machine's worst pressure (10 % of the time or
//   more). An io hang carries its major faults, and becomes pressure when the machine stalled
//   on I/O or memory for 10 % of the time or more. Other kinds are left as they are.
void RefineBySchedule(const cause::SchedPressure& p, WaitCause* cause);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_WAIT_FD_CAUSE_H_
