// Run-loop pass durations ("lag"): the histogram layout every producer and reader shares, and
// the figures drawn from it (pass count, busy time, percentiles, slow passes).
//
// Layout: log-linear, HDR style, over nanoseconds. Bucket 0 holds every pass shorter than
// 8.192 us (2^13 ns). Above that, each power of two [2^k, 2^(k+1)) is cut into 64 equal
// buckets, up to 2^40 ns (18.3 minutes); longer passes land in the last bucket. A bucket is at
// most 1/64 of its lower bound wide, and a percentile is reported as its bucket's midpoint, so
// from 10 us to 10 minutes a figure is within 0.8 % of the true duration. 1,729 buckets: a
// fixed 13.5 KiB of counters, whatever the number of passes.
//
// Lag records (docs/report-format.md, {"type":"lag"}) carry the non-empty buckets as
// [upper_bound_us, count] pairs; a reader adds the records of many intervals, processes and
// hosts into one PassHistogram and takes its Figures().
#ifndef HANGWATCH_PASS_HISTOGRAM_H_
#define HANGWATCH_PASS_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hangwatch/export.h"

namespace hangwatch {
namespace pass_histogram {

inline constexpr int kSubBucketBits = 6;  // 64 buckets per power of two
inline constexpr int kMinBits = 13;       // bucket 0: below 2^13 ns
inline constexpr int kMaxBits = 40;       // the last bucket: from 2^40 - 2^34 ns up
inline constexpr int kBuckets = 1 + ((kMaxBits - kMinBits) << kSubBucketBits);  // 1,729

// The bucket a pass of `ns` nanoseconds falls in. Branch-light: it runs on the watched thread
// at the end of every timed pass.
constexpr int BucketOf(uint64_t ns) {
  if (ns < (uint64_t{1} << kMinBits)) return 0;
  if (ns >= (uint64_t{1} << kMaxBits)) return kBuckets - 1;
  const int width = 64 - __builtin_clzll(ns);      // kMinBits+1 .. kMaxBits
  const int shift = width - (kSubBucketBits + 1);  // keeps 7 significant bits: 64..127
  const int sub = static_cast<int>(ns >> shift) - (1 << kSubBucketBits);
  return 1 + ((width - 1 - kMinBits) << kSubBucketBits) + sub;
}
// [BucketLowerNs(i), BucketUpperNs(i)) is bucket i's range.
constexpr uint64_t BucketLowerNs(int i) {
  if (i <= 0) return 0;
  const int octave = (i - 1) >> kSubBucketBits;  // 0: [2^13, 2^14)
  const int sub = (i - 1) & ((1 << kSubBucketBits) - 1);
  const int shift = kMinBits - kSubBucketBits + octave;
  return static_cast<uint64_t>((1 << kSubBucketBits) + sub) << shift;
}
constexpr uint64_t BucketUpperNs(int i) {
  return i >= kBuckets - 1 ? uint64_t{1} << kMaxBits
         : i <= 0          ? uint64_t{1} << kMinBits
                           : BucketLowerNs(i + 1);
}

}  // namespace pass_histogram

// Passes longer than these many milliseconds are counted one by one (exactly, not from the
// buckets): the "slow_passes" of a lag record, keys "16", "33", ... (a 60 Hz frame, two, ...).
inline constexpr int kSlowPassThresholdsMs[] = {16, 33, 50, 100, 250, 500, 1000};
inline constexpr int kSlowPassThresholds = 7;

// The figures of a set of passes. Percentiles and max are bucket midpoints (within 0.8 %).
struct LagFigures {
  uint64_t passes = 0;
  double busy_ms = 0;  // the passes' total duration
  double p50_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  uint64_t slow_passes[kSlowPassThresholds] = {};  // longer than kSlowPassThresholdsMs[i]
};

// Pass durations: a count per bucket, the total duration and the exact slow-pass counts.
// A value: copy it, subtract an earlier copy from it (the passes in between), add others.
class HANGWATCH_EXPORT PassHistogram {
 public:
  PassHistogram();

  void Add(uint64_t ns);
  // Adds `count` passes to bucket `bucket` (out-of-range buckets are clamped) without touching
  // busy time or slow passes: for readers rebuilding a histogram from a record's buckets.
  void AddToBucket(int bucket, uint64_t count);
  void AddBusyNs(uint64_t ns) { busy_ns_ += ns; }
  void AddSlowPasses(int threshold, uint64_t count) { slow_[threshold] += count; }
  void Merge(const PassHistogram& other);
  // The passes added since `earlier` was copied from this histogram (or from the counters it
  // was read from). Counts never go backwards; a smaller count reads as 0.
  PassHistogram Since(const PassHistogram& earlier) const;

  uint64_t count(int bucket) const { return counts_[static_cast<size_t>(bucket)]; }
  uint64_t passes() const;
  uint64_t busy_ns() const { return busy_ns_; }
  uint64_t slow_passes(int threshold) const { return slow_[threshold]; }
  // The duration (ns, a bucket midpoint) of the first pass, in order of length, beyond a
  // fraction q (0..1] of all passes (the longest for q = 1); 0 when empty.
  double PercentileNs(double q) const;
  LagFigures Figures() const;

 private:
  std::vector<uint64_t> counts_;  // kBuckets
  uint64_t busy_ns_ = 0;
  uint64_t slow_[kSlowPassThresholds] = {};
};

// The run-loop pass durations of one interval of one process: what a {"type":"lag"} record of
// the JSON Lines report holds (docs/report-format.md), for AddLagCallback(). Each record covers
// its own interval, so records of many intervals, processes and hosts merge by adding their
// histograms. The report's encoder and decoder use this type itself (report::Lag is its name
// there), so the record a callback receives and the one written to the file are the same.
struct LagRecord {
  int64_t pid = 0;
  std::string process_name;
  std::string host;
  std::map<std::string, std::string> labels;
  int64_t start_unix_ms = 0;  // the interval: [start, end)
  int64_t end_unix_ms = 0;
  // The thread whose passes these are (hangwatch/threads.h): each watched thread has its own
  // lag records. thread_role "main" for the thread that called Start(); empty in records of
  // agents that watched only it (read as "main").
  int64_t tid = 0;
  std::string thread_name;  // the thread's own name (comm, at most 15 bytes)
  std::string thread_role;  // the watch's role
  // On the main thread's records: threads that asked to be watched during the interval and were
  // not, every slot being taken (Config::max_watched_threads). 0 in every other record.
  uint64_t threads_not_watched = 0;
  PassHistogram passes;  // figures (percentiles, slow passes) come from passes.Figures()
  // Queued + running (docs/report-format.md, "delay"): the same passes, each counted at its own
  // duration plus how long its work had waited before it ran, where the loop knew when the work
  // became due (a timer dispatched past its due time: SetPassSource's queued time). A pass
  // without a known wait counts at its duration. `queued_passes`: passes whose wait was known;
  // 0 (and `delay` empty) when none was, and a reader takes `passes` for it.
  uint64_t queued_passes = 0;
  PassHistogram delay;  // buckets only (no busy time, no slow passes)
  // Passes with a known wait that the thread finished faster than the agent could read them
  // (more than 32 between two looks): counted in `delay` at their duration.
  uint64_t queued_passes_lost = 0;
};

}  // namespace hangwatch

#endif  // HANGWATCH_PASS_HISTOGRAM_H_
