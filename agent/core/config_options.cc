#include "agent/core/config_options.h"

#include <unistd.h>

#include <algorithm>

namespace hangwatch::agent {
namespace {
constexpr uint64_t kNsPerMs = 1'000'000;
}  // namespace

Status Validate(const Config& c) {
  if (c.threshold.count() <= 0) {
    return Status::Error("hangwatch: threshold must be > 0 ms");
  }
  if (c.sample_interval.count() < 0 || c.check_interval.count() < 0) {
    return Status::Error("hangwatch: sample_interval and check_interval must be >= 0 ms");
  }
  if (!(c.early_sampling_fraction > 0.0 && c.early_sampling_fraction <= 1.0)) {
    return Status::Error("hangwatch: early_sampling_fraction must be in (0, 1]");
  }
  if (c.max_frames == 0 || c.max_frames > 1024) {
    return Status::Error("hangwatch: max_frames must be in [1, 1024]");
  }
  if (c.ring_capacity == 0 || c.ring_capacity > 100'000) {
    return Status::Error("hangwatch: ring_capacity must be in [1, 100000]");
  }
  if (c.max_unique_stacks == 0 || c.max_unique_stacks > 65'536 || c.max_timeline == 0 ||
      c.max_timeline > 65'536) {
    return Status::Error("hangwatch: max_unique_stacks and max_timeline must be in [1, 65536]");
  }
  if (c.stack_copy_bytes > (1u << 20)) {
    return Status::Error("hangwatch: stack_copy_bytes must be <= 1 MiB");
  }
  if (c.capture_timeout.count() <= 0) {
    return Status::Error("hangwatch: capture_timeout must be > 0 ms");
  }
  if (c.max_watched_threads > 4096) {
    return Status::Error("hangwatch: max_watched_threads must be <= 4096");
  }
  if (c.lag_interval.count() < 0) {
    return Status::Error("hangwatch: lag_interval must be >= 0 ms");
  }
  return Status::Ok();
}

MonitorOptions OptionsFrom(const Config& c) {
  MonitorOptions o;
  o.threshold_ns = static_cast<uint64_t>(c.threshold.count()) * kNsPerMs;
  const uint64_t sample = c.sample_interval.count() > 0
                              ? static_cast<uint64_t>(c.sample_interval.count()) * kNsPerMs
                              : std::max<uint64_t>(o.threshold_ns / 10, kNsPerMs);
  o.sample_interval_ns = sample;
  // Default check interval: a fifth of the threshold (50 ms for 250 ms). Each idle wake-up
  // costs tens of microseconds of CPU on a virtual machine; 20 per second stay well under
  // 0.1 % of a core, and a pass is still noticed long before its early-sampling point.
  o.check_interval_ns = c.check_interval.count() > 0
                            ? static_cast<uint64_t>(c.check_interval.count()) * kNsPerMs
                            : std::max(sample, o.threshold_ns / 5);
  o.early_ns =
      static_cast<uint64_t>(static_cast<double>(o.threshold_ns) * c.early_sampling_fraction);
  // Late by three check intervals (and at least 100 ms) is beyond scheduling noise.
  o.oversleep_tolerance_ns = std::max<uint64_t>(3 * o.check_interval_ns, 100 * kNsPerMs);
  o.capture_wait_ns = static_cast<uint64_t>(c.capture_timeout.count()) * kNsPerMs + 5 * kNsPerMs;
  o.report_under_debugger = c.report_under_debugger;
  o.limits.max_frames = c.max_frames;
  o.limits.max_unique_stacks = c.max_unique_stacks;
  o.limits.max_timeline = c.max_timeline;
  o.pid = getpid();
  return o;
}

MonitorOptions OptionsForThread(const Config& c, uint64_t threshold_ns,
                                uint64_t sample_interval_ns) {
  MonitorOptions o = OptionsFrom(c);
  if (threshold_ns == 0 && sample_interval_ns == 0) return o;
  if (threshold_ns != 0) o.threshold_ns = threshold_ns;
  o.sample_interval_ns = sample_interval_ns != 0
                             ? sample_interval_ns
                             : std::max<uint64_t>(o.threshold_ns / 10, kNsPerMs);
  o.check_interval_ns = std::max(o.sample_interval_ns, o.threshold_ns / 5);
  o.early_ns =
      static_cast<uint64_t>(static_cast<double>(o.threshold_ns) * c.early_sampling_fraction);
  o.oversleep_tolerance_ns = std::max<uint64_t>(3 * o.check_interval_ns, 100 * kNsPerMs);
  return o;
}

}  // namespace hangwatch::agent
