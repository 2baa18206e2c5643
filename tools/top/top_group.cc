// TopAggregator and ParseTopTime.
#include "tools/top/top_group.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <set>
#include <tuple>

#include "report/frame_classifier.h"
#include "report/record_types.h"
#include "report/stack_identity.h"

namespace hangwatch::tools {
namespace {

constexpr char kSep = '\x1f';      // between the fields of a culprit's key
constexpr char kRoleSep = '\x1e';  // between a group's key and its thread role

// "symbol in module", or "module+0xoffset", or "0xoffset": the --by culprit key. A Python
// function: "Handler.handle (app.py)", every line of it.
void CulpritGroupKey(const TopHang& h, std::string* out) {
  out->clear();
  if (!h.has_culprit) return;
  if (IsInterpreted(h.culprit_language)) {
    out->assign(report::PythonFunctionLabel(h.culprit_symbol, h.culprit_file, 0));
    return;
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%" PRIx64, h.culprit_offset);
  if (!h.culprit_symbol.empty()) {
    out->append(h.culprit_symbol);
    if (!h.culprit_module.empty()) {
      out->append(" in ");
      out->append(report::ModuleFileName(h.culprit_module));
    }
  } else if (!h.culprit_module.empty()) {
    out->append(report::ModuleFileName(h.culprit_module));
    out->push_back('+');
    out->append(hex);
  } else {
    out->append(hex);
  }
}

// Which of two examples is shown first: the longer, then the earlier, then by identity.
bool Before(const TopExample& a, const TopExample& b) {
  return std::tie(b.duration_ms, a.start_unix_ms, a.host, a.pid, a.hang_id) <
         std::tie(a.duration_ms, b.start_unix_ms, b.host, b.pid, b.hang_id);
}

uint64_t CountOf(uint64_t n) { return n; }
template <typename T>
uint64_t CountOf(const T& tally) {
  return tally.count;
}

// The entry of the most common key (ties: the smallest), nullptr when none.
template <typename M>
const typename M::value_type* MostCommonEntry(const M& m) {
  const typename M::value_type* best = nullptr;
  for (const auto& e : m) {
    if (best == nullptr || CountOf(e.second) > CountOf(best->second) ||
        (CountOf(e.second) == CountOf(best->second) && e.first < best->first)) {
      best = &e;
    }
  }
  return best;
}

// The most common key, "" when none.
template <typename M>
std::string MostCommon(const M& m) {
  const auto* best = MostCommonEntry(m);
  return best == nullptr ? std::string() : best->first;
}

// Nearest-rank percentile of sorted values.
uint64_t Percentile(const std::vector<uint64_t>& sorted, int p) {
  if (sorted.empty()) return 0;
  size_t rank = (sorted.size() * static_cast<size_t>(p) + 99) / 100;
  return sorted[std::max<size_t>(rank, 1) - 1];
}

bool Digits(std::string_view s, size_t n, int* out) {
  if (s.size() < n) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool ParseTopTime(std::string_view s, int64_t* unix_ms) {
  if (s.empty()) return false;
  if (s.find_first_not_of("0123456789") == std::string_view::npos) {
    if (s.size() > 18) return false;
    int64_t v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    *unix_ms = v;
    return true;
  }
  // YYYY-MM-DD
  int year, month, day, hour = 0, minute = 0, second = 0, ms = 0;
  if (!Digits(s, 4, &year) || s.size() < 10 || s[4] != '-' || !Digits(s.substr(5), 2, &month) ||
      s[7] != '-' || !Digits(s.substr(8), 2, &day)) {
    return false;
  }
  s.remove_prefix(10);
  if (!s.empty() && (s[0] == 'T' || s[0] == 't' || s[0] == ' ')) {
    // HH:MM[:SS[.fff]]
    if (s.size() < 6 || !Digits(s.substr(1), 2, &hour) || s[3] != ':' ||
        !Digits(s.substr(4), 2, &minute)) {
      return false;
    }
    s.remove_prefix(6);
    if (!s.empty() && s[0] == ':') {
      if (!Digits(s.substr(1), 2, &second)) return false;
      s.remove_prefix(3);
      if (!s.empty() && (s[0] == '.' || s[0] == ',')) {
        s.remove_prefix(1);
        int scale = 100, digits = 0;
        while (!s.empty() && s[0] >= '0' && s[0] <= '9') {
          ms += (s[0] - '0') * scale;
          scale /= 10;
          s.remove_prefix(1);
          ++digits;
        }
        if (digits == 0) return false;
      }
    }
  }
  int64_t offset_min = 0;
  if (s == "Z" || s == "z") {
    s.remove_prefix(1);
  } else if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    const int sign = s[0] == '-' ? -1 : 1;
    int oh, om = 0;
    if (!Digits(s.substr(1), 2, &oh)) return false;
    s.remove_prefix(3);
    if (!s.empty() && s[0] == ':') s.remove_prefix(1);
    if (!s.empty()) {
      if (!Digits(s, 2, &om)) return false;
      s.remove_prefix(2);
    }
    offset_min = sign * (oh * 60 + om);
  }
  if (!s.empty() || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
      second > 60) {
    return false;
  }
  struct tm tm = {};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t t = timegm(&tm);
  *unix_ms = (static_cast<int64_t>(t) - offset_min * 60) * 1000 + ms;
  return true;
}

TopAggregator::TopAggregator(const TopQuery& query) : query_(query) {}
TopAggregator::~TopAggregator() = default;

void TopAggregator::Count(StringMap<uint64_t>* m, std::string_view key, uint64_t n) {
  auto it = m->find(key);
  if (it == m->end()) {
    m->emplace(std::string(key), n);
  } else {
    it->second += n;
  }
}

void TopAggregator::AddExample(std::vector<TopExample>* examples, TopExample e) {
  if (examples->size() >= kTopExamples && !Before(e, examples->back())) return;
  examples->insert(std::upper_bound(examples->begin(), examples->end(), e, Before), std::move(e));
  if (examples->size() > kTopExamples) examples->pop_back();
}

bool TopAggregator::Filtered(const TopHang& h) const {
  if ((query_.since_ms && h.start_unix_ms < *query_.since_ms) ||
      (query_.until_ms && h.start_unix_ms >= *query_.until_ms)) {
    return true;
  }
  for (const auto& [k, v] : query_.labels) {
    bool match = false;
    for (const auto& [hk, hv] : h.labels) match = match || (hk == k && hv == v);
    if (!match) return true;
  }
  return false;
}

void TopAggregator::Touch(std::string_view host, int64_t pid) {
  auto it = all_hosts_.find(host);
  if (it == all_hosts_.end()) {
    it = all_hosts_.emplace(std::string(host), static_cast<uint32_t>(all_hosts_.size())).first;
  }
  all_processes_.insert(static_cast<uint64_t>(it->second) << 32 | static_cast<uint32_t>(pid));
}

void TopAggregator::GroupKey(const TopHang& h) {
  switch (query_.by) {
    case TopBy::kSignature:
      key_.assign(h.signature);
      break;
    case TopBy::kFingerprint:
      key_.assign(h.fingerprint);
      break;
    case TopBy::kCulprit:
      CulpritGroupKey(h, &key_);
      break;
    case TopBy::kCause:
      key_.assign(h.cause_kind);
      break;
    case TopBy::kLabel:
      key_.clear();
      for (const auto& [k, v] : h.labels) {
        if (k == query_.by_label) key_.assign(v);
      }
      break;
    case TopBy::kThread:
      key_.assign(h.role);
      break;
    case TopBy::kContext:
      key_.assign(h.context_key);  // report::ContextKey
      break;
  }
  // Another role's hangs are grouped apart from main's (and each role's from the others').
  group_key_ = key_;
  if (h.role != report::kMainRole && query_.by != TopBy::kThread) {
    group_key_ += kRoleSep;
    group_key_.append(h.role);
  }
}

void TopAggregator::AddLag(const TopHang& lag) {
  if (Filtered(lag)) return;
  Touch(lag.host, lag.pid);
  if (lag.end_unix_ms <= lag.start_unix_ms) return;
  const auto ms = static_cast<uint64_t>(lag.end_unix_ms - lag.start_unix_ms);
  if (lag.role == report::kMainRole) {
    watched_ms_ += ms;
    delay_max_ms_ = std::max(delay_max_ms_, lag.delay_max_ms);
    queued_passes_ += lag.queued_passes;
  }
  Count(&watched_by_role_, lag.role, ms);
  if (query_.by == TopBy::kLabel) {
    GroupKey(lag);
    Count(&watched_by_key_, group_key_, ms);
  }
}

void TopAggregator::Add(const TopHang& h) {
  if (Filtered(h)) {
    ++filtered_;
    return;
  }
  ++hangs_;
  GroupKey(h);
  auto it = groups_.find(std::string_view(group_key_));
  if (it == groups_.end()) {
    it = groups_.emplace(group_key_, Acc{}).first;
    it->second.key = key_;
    it->second.role = h.role;
  }
  Acc& a = it->second;
  ++a.count;
  a.total += h.duration_ms;
  a.max = std::max(a.max, h.duration_ms);
  a.cpu += h.cpu_ms;
  a.fatal += h.fatal ? 1 : 0;
  ++a.classes[h.hang_class & 3];
  a.first = std::min(a.first, h.start_unix_ms);
  a.last = std::max(a.last, h.start_unix_ms);
  a.durations.push_back(h.duration_ms);
  auto host = a.hosts.find(h.host);
  if (host == a.hosts.end()) {
    host = a.hosts.emplace(std::string(h.host), static_cast<uint32_t>(a.hosts.size())).first;
  }
  a.processes.insert(static_cast<uint64_t>(host->second) << 32 | static_cast<uint32_t>(h.pid));
  Count(&a.names, h.process_name, 1);
  Count(&a.signatures, h.signature, 1);
  Count(&a.fingerprints, h.fingerprint, 1);
  Count(&a.causes, h.cause_kind, 1);
  if (h.has_culprit) {
    culprit_key_.assign(h.culprit_symbol);
    culprit_key_ += kSep;
    culprit_key_.append(h.culprit_module);
    culprit_key_ += kSep;
    culprit_key_.append(h.culprit_file);
    culprit_key_ += kSep;
    culprit_key_ += std::to_string(h.culprit_line);
    culprit_key_ += kSep;
    culprit_key_ += std::to_string(h.culprit_offset);
    culprit_key_ += kSep;
    culprit_key_ += IsInterpreted(h.culprit_language) ? FrameLanguageName(h.culprit_language) : "";
    auto c = a.culprits.find(std::string_view(culprit_key_));
    if (c == a.culprits.end()) c = a.culprits.emplace(culprit_key_, CulpritTally{}).first;
    c->second.Add(1, {h.file, h.offset});
  }
  if (a.examples.size() < kTopExamples || h.duration_ms >= a.examples.back().duration_ms) {
    AddExample(&a.examples,
               {std::string(h.host), h.pid, h.hang_id, h.start_unix_ms, h.duration_ms});
  }
}

void TopAggregator::Merge(TopAggregator&& other) {
  hangs_ += other.hangs_;
  filtered_ += other.filtered_;
  watched_ms_ += other.watched_ms_;
  delay_max_ms_ = std::max(delay_max_ms_, other.delay_max_ms_);
  queued_passes_ += other.queued_passes_;
  for (const auto& [k, ms] : other.watched_by_key_) Count(&watched_by_key_, k, ms);
  for (const auto& [k, ms] : other.watched_by_role_) Count(&watched_by_role_, k, ms);
  std::vector<uint32_t> host_of(other.all_hosts_.size());
  for (const auto& [host, index] : other.all_hosts_) {
    auto h = all_hosts_.find(std::string_view(host));
    if (h == all_hosts_.end()) {
      h = all_hosts_.emplace(host, static_cast<uint32_t>(all_hosts_.size())).first;
    }
    host_of[index] = h->second;
  }
  for (uint64_t p : other.all_processes_) {
    all_processes_.insert(static_cast<uint64_t>(host_of[p >> 32]) << 32 | (p & 0xffffffffu));
  }
  for (auto& [key, o] : other.groups_) {
    auto it = groups_.find(std::string_view(key));
    if (it == groups_.end()) {
      groups_.emplace(key, std::move(o));
      continue;
    }
    Acc& a = it->second;
    a.count += o.count;
    a.total += o.total;
    a.max = std::max(a.max, o.max);
    a.cpu += o.cpu;
    a.fatal += o.fatal;
    for (int c = 0; c < 4; ++c) a.classes[c] += o.classes[c];
    a.first = std::min(a.first, o.first);
    a.last = std::max(a.last, o.last);
    a.durations.insert(a.durations.end(), o.durations.begin(), o.durations.end());
    // Host indexes of `o` -> indexes of `a`.
    std::vector<uint32_t> remap(o.hosts.size());
    for (const auto& [host, index] : o.hosts) {
      auto h = a.hosts.find(std::string_view(host));
      if (h == a.hosts.end()) {
        h = a.hosts.emplace(host, static_cast<uint32_t>(a.hosts.size())).first;
      }
      remap[index] = h->second;
    }
    for (uint64_t p : o.processes) {
      a.processes.insert(static_cast<uint64_t>(remap[p >> 32]) << 32 | (p & 0xffffffffu));
    }
    for (const auto& [k, n] : o.names) Count(&a.names, k, n);
    for (const auto& [k, n] : o.signatures) Count(&a.signatures, k, n);
    for (const auto& [k, n] : o.fingerprints) Count(&a.fingerprints, k, n);
    for (const auto& [k, n] : o.causes) Count(&a.causes, k, n);
    for (const auto& [k, t] : o.culprits) a.culprits[k].Add(t.count, t.line);
    for (TopExample& e : o.examples) AddExample(&a.examples, std::move(e));
  }
  other.groups_.clear();
}

uint64_t TopAggregator::hosts_total() const {
  std::unordered_set<std::string_view> hosts;
  for (const auto& [host, index] : all_hosts_) hosts.insert(host);
  for (const auto& [key, a] : groups_) {
    for (const auto& [host, index] : a.hosts) hosts.insert(host);
  }
  return hosts.size();
}

uint64_t TopAggregator::processes_total() const {
  std::set<std::pair<std::string_view, uint32_t>> processes;
  const auto add = [&](const StringMap<uint32_t>& hosts, const std::unordered_set<uint64_t>& pids) {
    std::vector<std::string_view> name(hosts.size());
    for (const auto& [host, index] : hosts) name[index] = host;
    for (uint64_t p : pids) processes.emplace(name[p >> 32], static_cast<uint32_t>(p));
  };
  add(all_hosts_, all_processes_);
  for (const auto& [key, a] : groups_) add(a.hosts, a.processes);
  return processes.size();
}

std::vector<TopGroup> TopAggregator::Groups(TopSort sort) const {
  std::vector<TopGroup> out;
  out.reserve(groups_.size());
  for (const auto& [key, a] : groups_) {
    TopGroup g;
    g.key = a.key;
    g.role = a.role;
    g.count = a.count;
    g.hosts = a.hosts.size();
    g.processes = a.processes.size();
    for (const auto& [name, n] : a.names) g.process_names.emplace_back(name, n);
    std::sort(g.process_names.begin(), g.process_names.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    for (const auto& [kind, n] : a.causes) g.causes.emplace_back(kind, n);
    std::sort(g.causes.begin(), g.causes.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    g.signature = MostCommon(a.signatures);
    g.fingerprint = MostCommon(a.fingerprints);
    if (const auto* best = MostCommonEntry(a.culprits)) {
      const std::string& c = best->first;
      std::vector<std::string> parts;
      size_t at = 0;
      for (size_t sep; (sep = c.find(kSep, at)) != std::string::npos; at = sep + 1) {
        parts.push_back(c.substr(at, sep - at));
      }
      parts.push_back(c.substr(at));
      if (parts.size() == 6) {
        TopCulprit tc;
        tc.symbol = parts[0];
        tc.module = parts[1];
        tc.file = parts[2];
        tc.line = std::strtoll(parts[3].c_str(), nullptr, 10);
        tc.offset = std::strtoull(parts[4].c_str(), nullptr, 10);
        if (!ParseFrameLanguage(parts[5], &tc.language)) tc.language = FrameLanguage::kNative;
        g.culprit = std::move(tc);
        g.culprit_line = best->second.line;
      }
    }
    g.unknown = a.classes[0];
    g.busy = a.classes[1];
    g.blocked = a.classes[2];
    g.mixed = a.classes[3];
    g.fatal = a.fatal;
    std::vector<uint64_t> d = a.durations;
    std::sort(d.begin(), d.end());
    g.p50_ms = Percentile(d, 50);
    g.p95_ms = Percentile(d, 95);
    g.max_ms = a.max;
    g.total_ms = a.total;
    g.cpu_ms = a.cpu;
    g.first_unix_ms = a.first;
    g.last_unix_ms = a.last;
    g.examples = a.examples;
    const auto by_role = watched_by_role_.find(std::string_view(a.role));
    uint64_t watched = by_role == watched_by_role_.end() ? 0 : by_role->second;
    if (query_.by == TopBy::kLabel) {
      const auto w = watched_by_key_.find(std::string_view(key));
      watched = w == watched_by_key_.end() ? 0 : w->second;
    }
    if (watched > 0) {
      g.hang_seconds_per_hour =
          3600.0 * static_cast<double>(a.total) / static_cast<double>(watched);
    }
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [sort](const TopGroup& x, const TopGroup& y) {
    if (sort == TopSort::kTotal && x.total_ms != y.total_ms) return x.total_ms > y.total_ms;
    if (x.count != y.count) return x.count > y.count;
    if (x.total_ms != y.total_ms) return x.total_ms > y.total_ms;
    return x.key != y.key ? x.key < y.key : x.role < y.role;
  });
  return out;
}

}  // namespace hangwatch::tools
