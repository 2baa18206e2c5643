// HangData: one hang in fixed-capacity storage, as the watchdog builds it and the ring keeps
// it. Allocated once (at Start) with the configured bounds; building, copying and clearing a
// hang never allocates. Turning it into a public HangRecord (symbolized, with strings) is
// materialize.h's job and happens only when someone reads or reports it.
#ifndef HANGWATCH_HANG_MODEL_HANG_DATA_H_
#define HANGWATCH_HANG_MODEL_HANG_DATA_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hang/model/hang_context.h"
#include "hang/model/stack_table.h"
#include "hang/model/wait_cause.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

struct HangLimits {
  size_t max_frames = 64;
  size_t max_unique_stacks = 64;
  size_t max_timeline = 1024;
};

struct HangSummary {
  int64_t pid = 0;
  int64_t tid = 0;
  // Which thread hung (hangwatch/threads.h): the role it is watched under ("main" for the one
  // that called Start()) and its kernel name, both NUL-terminated; empty when not known.
  char thread_role[32] = {};
  char thread_name[16] = {};
  uint64_t hang_id = 0;
  int64_t start_unix_ms = 0;
  uint64_t duration_ns = 0;  // stopped time excluded
  uint64_t cpu_ns = 0;
  bool cpu_known = false;
  uint64_t stopped_ns = 0;
  uint32_t threshold_ms = 0;
  uint32_t sample_interval_ms = 0;
  uint32_t samples = 0;
  uint32_t failed_samples = 0;
  uint32_t dropped_stacks = 0;
  uint32_t running_samples = 0;  // samples whose scheduler state was R
  uint32_t state_samples = 0;    // samples with a known scheduler state
  bool fatal = false;
  bool timeline_truncated = false;
  HangPhase phase = HangPhase::kRun;
  // The main thread's pauses for captures during the hang, summed (hangwatch's own cost).
  uint64_t pause_ns = 0;
};

class HangData {
 public:
  explicit HangData(const HangLimits& limits);
  HangData(const HangData&) = delete;
  HangData& operator=(const HangData&) = delete;

  void Clear();
  void CopyFrom(const HangData& other);  // same limits required; no allocation

  // Records one sampling attempt. `frames` may be null / n == 0 for a failed capture;
  // `frame_methods` (n of them) may be null (kUnknown).
  void AddSample(uint32_t t_ms, const uintptr_t* frames, size_t n, uintptr_t leaf_key,
                 uint64_t cpu_delta_ns, char state, bool ok,
                 const FrameMethod* frame_methods = nullptr,
                 SampleMethod sample_method = SampleMethod::kUnknown);
  // The cause of the sample just added (its timeline entry gets the kind and the owner). The
  // hang's cause is the wait seen in the most samples (the same kind, lock, owner and system
  // call; ties go to the most recent), with the details of its latest sample; a deadlock, once
  // seen, stays (its threads can never leave it); a sample finding the same lock's owner
  // running (letting go, at the end of the wait) keeps the earlier one that found it in a
  // system call. A sample without a cause leaves the hang's as it is.
  void NoteCause(const WaitCause& sample_cause);
  // How frame i of stack `id` was found.
  FrameMethod frame_method(uint32_t id, size_t i) const;

  HangSummary summary;
  WaitCause cause;  // why the hang waited (NoteCause); kind kNone when not known
  // What the pass was serving and whether input waited (the context probe, agent/context/).
  HangContext context;
  // Bumped each time `cause` changes (the open-hang file rewrites it only then).
  uint32_t cause_version() const { return cause_version_; }
  const StackTable& stacks() const { return stacks_; }
  const TimelineEntry* timeline() const { return timeline_.get(); }
  size_t timeline_size() const { return timeline_size_; }
  const HangLimits& limits() const { return limits_; }

  // busy / blocked / mixed from the CPU share and, when at least 3 samples carry a scheduler
  // state, the share of samples that found the thread runnable ('R'): a computation starved of
  // CPU by other load is still a computation (busy), a thread asleep is waiting.
  //   busy:    CPU >= 70 %, or runnable in >= 80 % of the samples
  //   blocked: CPU <= 30 % and runnable in <= 20 % of the samples
  //   mixed:   anything else; unknown without a CPU figure.
  static HangClass Classify(uint64_t cpu_ns, uint64_t duration_ns, bool cpu_known,
                            uint32_t running_samples = 0, uint32_t state_samples = 0);
  HangClass Class() const;
  uint32_t CpuPercent() const;

 private:
  // Samples per distinct wait, for NoteCause (the first kMaxTallies waits of the hang).
  struct CauseTally {
    CauseKind kind;
    uint64_t addr;
    int32_t owner;
    int64_t nr;
    uint32_t count;
  };
  static constexpr size_t kMaxTallies = 8;
  CauseTally tallies_[kMaxTallies] = {};
  size_t num_tallies_ = 0;
  uint32_t best_count_ = 0;  // samples of the wait `cause` is
  uint32_t cause_version_ = 0;

  HangLimits limits_;
  StackTable stacks_;
  std::unique_ptr<TimelineEntry[]> timeline_;
  size_t timeline_size_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_HANG_DATA_H_
