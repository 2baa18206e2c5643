#include "hang/model/hang_data.h"

#include <algorithm>
#include <cstring>

namespace hangwatch::agent {

HangData::HangData(const HangLimits& limits)
    : limits_(limits),
      stacks_(limits.max_unique_stacks, limits.max_frames),
      timeline_(new TimelineEntry[std::max<size_t>(limits.max_timeline, 1)]) {}

void HangData::Clear() {
  summary = HangSummary{};
  cause = WaitCause{};
  context = HangContext{};
  num_tallies_ = 0;
  best_count_ = 0;
  cause_version_ = 0;
  stacks_.Clear();
  timeline_size_ = 0;
}

void HangData::CopyFrom(const HangData& other) {
  if (&other == this) {
    return;
  }
  summary = other.summary;
  cause = other.cause;
  context = other.context;
  std::copy_n(other.tallies_, other.num_tallies_, tallies_);
  num_tallies_ = other.num_tallies_;
  best_count_ = other.best_count_;
  cause_version_ = other.cause_version_;
  stacks_.CopyFrom(other.stacks_);
  timeline_size_ = std::min(other.timeline_size_, std::max<size_t>(limits_.max_timeline, 1));
  std::copy_n(other.timeline_.get(), timeline_size_, timeline_.get());
}

void HangData::AddSample(uint32_t t_ms, const uintptr_t* frames, size_t n, uintptr_t leaf_key,
                         uint64_t cpu_delta_ns, char state, bool ok,
                         const FrameMethod* frame_methods, SampleMethod sample_method) {
  static_assert(sizeof(FrameMethod) == sizeof(uint8_t));
  const uint64_t cpu_us = cpu_delta_ns / 1000;
  int stack = -1;
  if (ok) {
    ++summary.samples;
    const uint32_t id = stacks_.Insert(frames, n, leaf_key, t_ms, cpu_us,
                                       reinterpret_cast<const uint8_t*>(frame_methods));
    if (id == StackTable::kFull) {
      ++summary.dropped_stacks;
    } else {
      stack = static_cast<int>(id);
    }
  } else {
    ++summary.failed_samples;
  }
  if (state != '?' && state != 0) {
    ++summary.state_samples;
    if (state == 'R') {
      ++summary.running_samples;
    }
  }
  if (timeline_size_ < limits_.max_timeline) {
    timeline_[timeline_size_++] =
        TimelineEntry{t_ms, stack, static_cast<uint32_t>(std::min<uint64_t>(cpu_us, UINT32_MAX)),
                      state, ok ? sample_method : SampleMethod::kUnknown};
  } else {
    summary.timeline_truncated = true;
  }
}

namespace {

// How many threads of a cause's chain (or cycle) sleep in a system call.
int ThreadsInASystemCall(const WaitCause& c) {
  int n = 0;
  for (int i = 0; i < c.num_threads; ++i) n += c.threads[i].call.nr >= 0 ? 1 : 0;
  return n;
}

}  // namespace

void HangData::NoteCause(const WaitCause& sample_cause) {
  if (sample_cause.kind == CauseKind::kNone) return;
  if (timeline_size_ > 0) {
    TimelineEntry& last = timeline_[timeline_size_ - 1];
    last.cause = sample_cause.kind;
    last.cause_tid = sample_cause.owner_tid();
  }
  // How many samples saw this same wait (kind, lock, owner, system call).
  const CauseTally key{sample_cause.kind, sample_cause.lock.addr, sample_cause.owner_tid(),
                       sample_cause.call.nr, 0};
  uint32_t count = 1;
  size_t i = 0;
  for (; i < num_tallies_; ++i) {
    CauseTally& t = tallies_[i];
    if (t.kind == key.kind && t.addr == key.addr && t.owner == key.owner && t.nr == key.nr) {
      count = ++t.count;
      break;
    }
  }
  if (i == num_tallies_ && num_tallies_ < kMaxTallies) {
    tallies_[num_tallies_++] = CauseTally{key.kind, key.addr, key.owner, key.nr, 1};
  }
  if (cause.kind == CauseKind::kDeadlock && sample_cause.kind != CauseKind::kDeadlock) return;
  if (sample_cause.kind != CauseKind::kDeadlock && count < best_count_) return;
  // The end of a lock wait finds an owner of the chain letting go, running (the last owner
  // first: the others still wait for it): the same wait seen earlier, with more of the chain
  // asleep in system calls, says more about what they did.
  const bool same_wait = sample_cause.kind == cause.kind &&
                         sample_cause.lock.addr == cause.lock.addr &&
                         sample_cause.owner_tid() == cause.owner_tid() && cause.num_threads > 0;
  best_count_ = count;
  if (same_wait && ThreadsInASystemCall(sample_cause) < ThreadsInASystemCall(cause)) return;
  // The end of a wait for a child: the waiter reaps it between the sample and the read of its
  // /proc entry, which is gone. The sample that read the child says more.
  const bool child_gone = sample_cause.kind == CauseKind::kChild &&
                          cause.kind == CauseKind::kChild &&
                          sample_cause.child.pid == cause.child.pid &&
                          sample_cause.child.state == '?' && cause.child.state != '?';
  if (child_gone) return;
  cause = sample_cause;
  ++cause_version_;
}

FrameMethod HangData::frame_method(uint32_t id, size_t i) const {
  const uint8_t tag = stacks_.tags(id)[i];
  return tag <= static_cast<uint8_t>(FrameMethod::kFramePointerScan) ? static_cast<FrameMethod>(tag)
                                                                     : FrameMethod::kUnknown;
}

HangClass HangData::Classify(uint64_t cpu_ns, uint64_t duration_ns, bool cpu_known,
                             uint32_t running_samples, uint32_t state_samples) {
  if (!cpu_known || duration_ns == 0) {
    return HangClass::kUnknown;
  }
  const double cpu = static_cast<double>(cpu_ns) / static_cast<double>(duration_ns);
  const bool have_states = state_samples >= 3;
  const double runnable =
      have_states ? static_cast<double>(running_samples) / static_cast<double>(state_samples) : 0;
  if (cpu >= 0.7 || (have_states && runnable >= 0.8)) {
    return HangClass::kBusy;
  }
  if (cpu <= 0.3 && (!have_states || runnable <= 0.2)) {
    return HangClass::kBlocked;
  }
  return HangClass::kMixed;
}

HangClass HangData::Class() const {
  return Classify(summary.cpu_ns, summary.duration_ns, summary.cpu_known, summary.running_samples,
                  summary.state_samples);
}

uint32_t HangData::CpuPercent() const {
  if (!summary.cpu_known || summary.duration_ns == 0) {
    return 0;
  }
  const uint64_t pct = summary.cpu_ns * 100 / summary.duration_ns;
  return static_cast<uint32_t>(std::min<uint64_t>(pct, 100));
}

}  // namespace hangwatch::agent
