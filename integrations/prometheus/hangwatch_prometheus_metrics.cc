#include "hangwatch_prometheus_metrics.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "hangwatch/culprit_label.h"

namespace hangwatch {
namespace {

constexpr std::string_view kOwnLabels[] = {"process", "host", "class",  "cause",
                                           "culprit", "le",   "reason", "quantile"};
constexpr size_t kMaxCulpritsTracked = 10000;
constexpr size_t kMaxContextsTracked = 10000;
constexpr std::string_view kMainRole = "main";  // hangwatch/threads.h: the thread of Start()

// hangwatch_input_delay_seconds: from what feels instant (0.1 s) to a desktop's "not
// responding" (5 s) and past it.
const prometheus::Histogram::BucketBoundaries& InputDelayBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.1, 0.25, 0.5, 1,
                                                                   2.5, 5,    10,  30};
  return kBuckets;
}

// report::ProcessName's rule (report/names.h), restated: this adapter sees the public API only
// (docs/architecture.md, Layers), so it cannot include the report's headers.
std::string ProcessOf(const HangRecord& hang) {
  if (!hang.process_name.empty()) return hang.process_name;
  return hang.process.substr(hang.process.rfind('/') + 1);
}

}  // namespace

const std::vector<double>& PassDurationBuckets() {
  static const std::vector<double> buckets = {0.001, 0.002, 0.005, 0.010, 0.016, 0.033, 0.050,
                                              0.100, 0.250, 0.500, 1.0,   2.0,   5.0};
  return buckets;
}

std::string LabelName(std::string_view key) {
  std::string name;
  for (char c : key) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name.insert(0, "_");
  if (name.compare(0, 2, "__") == 0) name.insert(0, "label");  // "__" is Prometheus's own
  if (std::find(std::begin(kOwnLabels), std::end(kOwnLabels), name) != std::end(kOwnLabels)) {
    name.insert(0, "label_");
  }
  return name;
}

std::string CauseLabel(std::string_view kind) {
  if (kind.empty() || kind.size() > 32) return "unknown";
  for (char c : kind) {
    if (!(std::islower(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return "unknown";
  }
  return std::string(kind);
}

std::string ContextLabel(const Context& c) {
  if (!c.label.empty()) return c.label;
  if (!c.label_path.empty()) return c.label_path.back();
  if (!c.source.empty()) return c.source;
  if (c.has_trigger) return c.trigger.kind;
  return "";
}

HangMetrics::HangMetrics(prometheus::Registry& registry, HangMetricsOptions options)
    : options_(options),
      hangs_(prometheus::BuildCounter()
                 .Name("hangwatch_hangs_total")
                 .Help("Hangs of the watched processes' main threads, by class and cause")
                 .Register(registry)),
      hang_seconds_(prometheus::BuildCounter()
                        .Name("hangwatch_hang_seconds_total")
                        .Help("Total duration of those hangs; hang rate in seconds per hour is "
                              "3600 * rate(hangwatch_hang_seconds_total[1h])")
                        .Register(registry)),
      fatal_hangs_(prometheus::BuildCounter()
                       .Name("hangwatch_fatal_hangs_total")
                       .Help("Hangs still open when their process died")
                       .Register(registry)),
      perceived_hangs_(prometheus::BuildCounter()
                           .Name("hangwatch_perceived_hangs_total")
                           .Help("Hangs during which input (or a window manager's ping) waited "
                                 "longer than the perceived threshold: a person was kept waiting")
                           .Register(registry)),
      input_delay_(prometheus::BuildHistogram()
                       .Name("hangwatch_input_delay_seconds")
                       .Help("How long the oldest input waiting on a hang's display connection "
                             "had waited by the hang's last look, one sample per hang that had "
                             "input waiting (docs/context.md)")
                       .Register(registry)),
      pass_duration_(prometheus::BuildHistogram()
                         .Name("hangwatch_pass_duration_seconds")
                         .Help("Durations of every run-loop pass, from the lag records")
                         .Register(registry)),
      pass_delay_(prometheus::BuildHistogram()
                      .Name("hangwatch_pass_delay_seconds")
                      .Help("Queued + running time of every run-loop pass: its duration plus "
                            "how long its work had waited, where the loop knew (lag records' "
                            "delay; docs/context.md)")
                      .Register(registry)),
      passes_(prometheus::BuildCounter()
                  .Name("hangwatch_passes_total")
                  .Help("Run-loop passes timed (lag records)")
                  .Register(registry)),
      busy_seconds_(prometheus::BuildCounter()
                        .Name("hangwatch_busy_seconds_total")
                        .Help("Total duration of the run-loop passes (lag records)")
                        .Register(registry)),
      watched_seconds_(prometheus::BuildCounter()
                           .Name("hangwatch_watched_seconds_total")
                           .Help("Time the processes were watched (the lag records' intervals); "
                                 "hang rate per watched hour is 3600 * "
                                 "increase(hangwatch_hang_seconds_total) / "
                                 "increase(hangwatch_watched_seconds_total)")
                           .Register(registry)),
      skipped_(prometheus::BuildCounter()
                   .Name("hangwatch_exporter_lines_skipped_total")
                   .Help("Report lines not counted (torn, unknown type, other format version, "
                         "too long), unreadable files, records over the series limit")
                   .Register(registry)) {}

std::string HangMetrics::RoleLabel(std::string_view role) {
  if (roles_.find(role) != roles_.end()) return std::string(role);
  if (roles_.size() >= options_.max_roles) return "other";
  roles_.emplace(role);
  return std::string(role);
}

bool HangMetrics::LabelsOf(const std::string& process, const std::string& host,
                           const std::map<std::string, std::string>& labels, std::string_view role,
                           prometheus::Labels* out) {
  out->clear();
  for (const auto& [key, value] : labels) (*out)[LabelName(key)] = value;
  // Records of old agents have no role: the main thread's, whose series keep their labels.
  if (!role.empty() && role != kMainRole) {
    if (auto it = out->find("role"); it != out->end()) {
      (*out)["label_role"] = std::move(it->second);
      out->erase(it);
    }
    (*out)["role"] = RoleLabel(role);
  }
  // With context labels, a record label named context would collide: label_context.
  if (options_.context_top > 0) {
    if (auto it = out->find("context"); it != out->end()) {
      (*out)["label_context"] = std::move(it->second);
      out->erase(it);
    }
  }
  (*out)["process"] = process;
  (*out)["host"] = host;
  if (label_sets_.count(*out) != 0) return true;
  if (label_sets_.size() >= options_.max_label_sets) return false;
  label_sets_.insert(*out);
  // With culprit labels, which culprit a hang will have is not known yet: no series at 0; with
  // context labels, only the perceived hangs' (which have none).
  for (HangClass c :
       {HangClass::kBusy, HangClass::kBlocked, HangClass::kMixed, HangClass::kUnknown}) {
    if (options_.culprit_top > 0) break;
    prometheus::Labels by_class = *out;
    by_class["class"] = HangClassName(c);
    by_class["cause"] = "unknown";
    perceived_hangs_.Add(by_class);
    if (options_.context_top > 0) continue;
    by_class.erase("cause");
    hang_seconds_.Add(by_class);
    by_class["cause"] = "unknown";
    hangs_.Add(by_class);
  }
  fatal_hangs_.Add(*out);
  passes_.Add(*out);
  busy_seconds_.Add(*out);
  watched_seconds_.Add(*out);
  return true;
}

std::string HangMetrics::CulpritLabel(const HangRecord& hang) {
  if (hang.culprit.empty()) return "none";
  // Every line of a Python function is one series: "Handler.handle (app.py)".
  const std::string name = hangwatch::CulpritLabel(hang.culprit, CulpritLabelStyle::kSeries);
  auto it = culprit_hangs_.find(name);
  if (it == culprit_hangs_.end()) {
    if (culprit_hangs_.size() >= kMaxCulpritsTracked) return "other";
    it = culprit_hangs_.emplace(name, 0).first;
  }
  const size_t count = ++it->second;
  if (culprit_series_.count(name) != 0) return name;
  if (culprit_series_.size() >= 2 * options_.culprit_top) return "other";
  // Its rank: the culprits with more hangs than it.
  size_t above = 0;
  for (const auto& [other, n] : culprit_hangs_) above += n > count ? 1 : 0;
  if (above >= options_.culprit_top) return "other";
  culprit_series_.insert(name);
  return name;
}

std::string HangMetrics::ContextLabelOf(const HangRecord& hang) {
  const std::string name = ContextLabel(hang.context);
  if (name.empty()) return "none";
  auto it = context_hangs_.find(name);
  if (it == context_hangs_.end()) {
    if (context_hangs_.size() >= kMaxContextsTracked) return "other";
    it = context_hangs_.emplace(name, 0).first;
  }
  const size_t count = ++it->second;
  if (context_series_.count(name) != 0) return name;
  if (context_series_.size() >= 2 * options_.context_top) return "other";
  // Its rank: the contexts with more hangs than it.
  size_t above = 0;
  for (const auto& [other, n] : context_hangs_) above += n > count ? 1 : 0;
  if (above >= options_.context_top) return "other";
  context_series_.insert(name);
  return name;
}

namespace {
// One part of a series key: its length, then its bytes (so no value can pass for two).
void AppendKeyPart(std::string* key, std::string_view part) {
  const auto n = static_cast<uint32_t>(part.size());
  key->append(reinterpret_cast<const char*>(&n), sizeof n);
  key->append(part);
}
}  // namespace

void HangMetrics::AddHang(const HangRecord& hang, std::string_view cause) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string culprit = options_.culprit_top > 0 ? CulpritLabel(hang) : std::string();
  const std::string cause_label = CauseLabel(cause);
  const std::string context = options_.context_top > 0 ? ContextLabelOf(hang) : std::string();
  // The series of a hang like one seen before are found by the record's own values, without
  // building their label maps again (what the exporter spends most of its time on otherwise).
  key_.clear();
  AppendKeyPart(&key_, ProcessOf(hang));
  AppendKeyPart(&key_, hang.host);
  AppendKeyPart(&key_, hang.thread_role);
  for (const auto& [k, v] : hang.labels) {
    AppendKeyPart(&key_, k);
    AppendKeyPart(&key_, v);
  }
  AppendKeyPart(&key_, HangClassName(hang.hang_class));
  AppendKeyPart(&key_, cause_label);
  AppendKeyPart(&key_, culprit);
  AppendKeyPart(&key_, context);
  auto it = hang_series_.find(std::string_view(key_));
  if (it == hang_series_.end()) {
    prometheus::Labels labels;
    if (!LabelsOf(ProcessOf(hang), hang.host, hang.labels, hang.thread_role, &labels)) {
      Skip(kSkipSeriesLimit);
      return;
    }
    HangSeries series;
    series.fatal = &fatal_hangs_.Add(labels);
    series.input_delay = &input_delay_.Add(labels, InputDelayBuckets());
    if (options_.culprit_top > 0) labels["culprit"] = culprit;
    prometheus::Labels by_class = labels;
    by_class["class"] = HangClassName(hang.hang_class);
    by_class["cause"] = cause_label;
    series.perceived = &perceived_hangs_.Add(by_class);  // no context label
    by_class.erase("cause");
    if (options_.context_top > 0) by_class["context"] = context;
    series.seconds = &hang_seconds_.Add(by_class);
    by_class["cause"] = cause_label;
    series.hangs = &hangs_.Add(by_class);
    it = hang_series_.emplace(key_, series).first;
  }
  it->second.hangs->Increment();
  it->second.seconds->Increment(static_cast<double>(hang.duration_ms) / 1000.0);
  if (hang.fatal) it->second.fatal->Increment();
  if (hang.perceived.value_or(false)) it->second.perceived->Increment();
  if (hang.input.oldest_known) {
    it->second.input_delay->Observe(static_cast<double>(hang.input.oldest_ms) / 1000.0);
  }
}

namespace {

// A lag histogram's counts as increments of the Prometheus buckets `bounds` (each lag bucket
// to the bucket holding its midpoint: within one lag bucket, 1/64 of its lower bound, of where
// its passes really were), and the sum of those midpoints (s).
std::vector<double> PassIncrements(const PassHistogram& passes, const std::vector<double>& bounds,
                                   double* midpoint_sum_s) {
  std::vector<double> increments(bounds.size() + 1, 0.0);
  *midpoint_sum_s = 0;
  for (int i = 0; i < pass_histogram::kBuckets; ++i) {
    const uint64_t n = passes.count(i);
    if (n == 0) continue;
    const double mid_s =
        static_cast<double>(pass_histogram::BucketLowerNs(i) + pass_histogram::BucketUpperNs(i)) /
        2e9;
    const size_t j =
        static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), mid_s) - bounds.begin());
    increments[j] += static_cast<double>(n);
    *midpoint_sum_s += mid_s * static_cast<double>(n);
  }
  return increments;
}

}  // namespace

void HangMetrics::AddLag(const std::string& process, const std::string& host,
                         const std::map<std::string, std::string>& record_labels,
                         int64_t start_unix_ms, int64_t end_unix_ms, const PassHistogram& passes,
                         std::string_view role, const PassHistogram* delay) {
  std::lock_guard<std::mutex> lock(mu_);
  prometheus::Labels labels;
  // Each role's passes are series of their own (the role label), never added to main's.
  if (!LabelsOf(process, host, record_labels, role, &labels)) {
    Skip(kSkipSeriesLimit);
    return;
  }
  const std::vector<double>& bounds = PassDurationBuckets();
  double midpoints_s = 0;
  const double busy_s = static_cast<double>(passes.busy_ns()) / 1e9;
  pass_duration_.Add(labels, bounds)
      .ObserveMultiple(PassIncrements(passes, bounds, &midpoints_s), busy_s);
  // Queued + running: the record's own when it had passes with a wait, else its passes (each
  // at its duration, the same sum). The sum of the others is their buckets' midpoints.
  std::vector<double> delay_increments =
      PassIncrements(delay != nullptr ? *delay : passes, bounds, &midpoints_s);
  pass_delay_.Add(labels, bounds)
      .ObserveMultiple(delay_increments, delay != nullptr ? midpoints_s : busy_s);
  passes_.Add(labels).Increment(static_cast<double>(passes.passes()));
  busy_seconds_.Add(labels).Increment(busy_s);
  if (end_unix_ms > start_unix_ms) {
    watched_seconds_.Add(labels).Increment(static_cast<double>(end_unix_ms - start_unix_ms) /
                                           1000.0);
  }
}

void HangMetrics::Skip(std::string_view reason, double count) {
  skipped_.Add({{"reason", std::string(reason)}}).Increment(count);
}

}  // namespace hangwatch
