// ThreadMonitors: the watchdog's side of the threads watched besides the main one
// (agent/threads/thread_registry.h, hangwatch/threads.h).
//
// For each registry slot, storage made when the watchdog first follows a thread there and kept
// until Stop() (MonitorStorage, a sampler and a cause probe of its own: about 300 KiB, so a
// program that watches no other thread pays nothing for the 64 slots, and a slot's later
// threads allocate nothing) and, while a thread holds the slot, a StallMonitor built in place
// over it with the thread's own threshold and role, and a LagReporter of its passes. Each Tick()
// adopts newly active slots, ticks every adopted one, and lets go of those whose thread stopped
// watching or exited (closing its hang first, then freeing the slot for the next thread). Their
// hangs and lag records go to the agent through Reporter, exactly as the main thread's do.
//
// The cost while idle is one pass over the slots' status words and, per watched thread, what
// an idle StallMonitor::Tick() costs (two clock reads and one load of its run-loop word): the
// watchdog wakes when the earliest of them is due, not once per thread.
#ifndef HANGWATCH_AGENT_CORE_THREAD_MONITORS_H_
#define HANGWATCH_AGENT_CORE_THREAD_MONITORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent/core/lag_reporter.h"
#include "agent/core/stall_monitor.h"
#include "agent/threads/thread_registry.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "report/report_record.h"

namespace hangwatch::agent {

// The open-hang file of the thread in registry slot `slot`, beside the main one's `path`:
// PATH.tSLOT (so that `hangwatch run`, which takes every open-hang.PID* of its directory, finds
// them with the process's).
std::string ThreadOpenHangPath(const std::string& path, size_t slot);
// Those of them that exist now.
std::vector<std::string> ThreadOpenHangPaths(const std::string& path);

class ThreadMonitors {
 public:
  // Where the threads' hangs and lag records go (the agent's sinks), on the watchdog thread.
  class Reporter {
   public:
    virtual ~Reporter() = default;
    virtual void ReportThreadHang(const HangData& hang) = 0;
    virtual void ReportThreadLag(const report::Lag& record) = 0;
    virtual void ThreadNote(const std::string& note) = 0;
  };

  // What every thread's monitor shares with the main thread's, borrowed from the agent.
  struct Shared {
    const Config* config = nullptr;
    unwind::ThreadSampler* sampler = nullptr;  // when no per-thread one is made
    std::function<std::unique_ptr<unwind::ThreadSampler>()> make_sampler;
    std::function<std::unique_ptr<WaitCauseProbe>()> make_cause_probe;
    OwnerSampler* other_sampler = nullptr;
    RuntimeFrames* runtime = nullptr;   // a language runtime's frames (Python), null: none
    JitCodeNames* jit_names = nullptr;  // told when a hang opens (a JVM), null: none
    WatchdogEnv* env = nullptr;
    LeafNormalizer* normalizer = nullptr;
    HangRing* ring = nullptr;
    symbols::CfiUnwinder* cfi = nullptr;
    ContextShared* context = nullptr;  // hangs' context and input (null: none)
    MonitorStats* stats = nullptr;     // the other threads' counters (not the main thread's)
    // With Config::time_every_pass: pid, process name, host, labels of the lag records.
    std::optional<report::Lag> lag_identity;
    // The main thread's open-hang file ("" for none): each followed thread keeps its open hang
    // in ThreadOpenHangPath() of it, made when the thread is adopted, removed when let go.
    std::string open_hang_path;
  };

  // Allocates the slots' bookkeeping; each slot's storage comes with its first thread.
  ThreadMonitors(ThreadRegistry* registry, Shared shared, Reporter* reporter);
  ~ThreadMonitors();

  // One watchdog wake-up: returns the monotonic time of the next wanted one.
  uint64_t Tick(uint64_t now_ns);
  // At Stop(): every followed thread's pass is finished (a hang still running closed as it
  // stands) and its last lag interval reported.
  void Finish();
  // Hands back what the slots hold of the process in the child of fork().
  void ReleaseAfterFork();
  // Threads followed now.
  size_t followed() const;

 private:
  struct Slot;
  class SlotListener;
  void Adopt(size_t i, Slot& w);
  void LetGo(Slot& w, bool thread_exited);
  void ReportLag(Slot& w, bool last);

  ThreadRegistry* registry_;
  Shared shared_;
  Reporter* reporter_;
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t next_liveness_ns_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_THREAD_MONITORS_H_
