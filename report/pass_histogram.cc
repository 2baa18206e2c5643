// PassHistogram (include/hangwatch/pass_histogram.h): the value readers and the agent's
// watchdog compute lag figures with. The watched thread never touches it; it bumps the raw
// counters of internal::PassTimer (hangwatch.h), which the watchdog copies into one of these.
#include "hangwatch/pass_histogram.h"

#include <algorithm>
#include <cmath>

namespace hangwatch {

using pass_histogram::BucketLowerNs;
using pass_histogram::BucketUpperNs;
using pass_histogram::kBuckets;

PassHistogram::PassHistogram() : counts_(kBuckets, 0) {}

void PassHistogram::Add(uint64_t ns) {
  ++counts_[static_cast<size_t>(pass_histogram::BucketOf(ns))];
  busy_ns_ += ns;
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    if (ns > static_cast<uint64_t>(kSlowPassThresholdsMs[t]) * 1000000) ++slow_[t];
  }
}

void PassHistogram::AddToBucket(int bucket, uint64_t count) {
  counts_[static_cast<size_t>(std::clamp(bucket, 0, kBuckets - 1))] += count;
}

void PassHistogram::Merge(const PassHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  busy_ns_ += other.busy_ns_;
  for (int t = 0; t < kSlowPassThresholds; ++t) slow_[t] += other.slow_[t];
}

PassHistogram PassHistogram::Since(const PassHistogram& earlier) const {
  auto minus = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  PassHistogram d;
  for (size_t i = 0; i < counts_.size(); ++i) d.counts_[i] = minus(counts_[i], earlier.counts_[i]);
  d.busy_ns_ = minus(busy_ns_, earlier.busy_ns_);
  for (int t = 0; t < kSlowPassThresholds; ++t) d.slow_[t] = minus(slow_[t], earlier.slow_[t]);
  return d;
}

uint64_t PassHistogram::passes() const {
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c;
  return n;
}

double PassHistogram::PercentileNs(double q) const {
  const uint64_t n = passes();
  if (n == 0) return 0;
  // The first pass beyond the fraction q: of 2,000 passes, 1,900 of 1 ms and 100 longer, the
  // 95th percentile is a longer one. "95 % of passes are at most p95" then holds with room,
  // and a budget on p95 is broken as soon as more than 5 % of passes exceed it.
  const double above = std::floor(std::clamp(q, 0.0, 1.0) * static_cast<double>(n));
  const uint64_t rank = std::min<uint64_t>(n, static_cast<uint64_t>(above) + 1);
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[static_cast<size_t>(i)];
    if (seen >= rank) {
      return (static_cast<double>(BucketLowerNs(i)) + static_cast<double>(BucketUpperNs(i))) / 2;
    }
  }
  return 0;  // not reached: seen == n >= rank at the last bucket
}

LagFigures PassHistogram::Figures() const {
  LagFigures f;
  f.passes = passes();
  f.busy_ms = static_cast<double>(busy_ns_) / 1e6;
  f.p50_ms = PercentileNs(0.50) / 1e6;
  f.p90_ms = PercentileNs(0.90) / 1e6;
  f.p95_ms = PercentileNs(0.95) / 1e6;
  f.p99_ms = PercentileNs(0.99) / 1e6;
  f.max_ms = PercentileNs(1.0) / 1e6;
  for (int t = 0; t < kSlowPassThresholds; ++t) f.slow_passes[t] = slow_[t];
  return f;
}

}  // namespace hangwatch
