#include "tools/report/formats/report_html_data.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hangwatch/pass_histogram.h"
#include "nlohmann/json.hpp"
#include "report/cause_kinds.h"
#include "report/cause_text.h"
#include "report/context_text.h"
#include "report/frame_classifier.h"
#include "report/names.h"
#include "report/record_types.h"
#include "report/stack_identity.h"
#include "tools/reader/hang_rate.h"
#include "tools/reader/input_file.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

using nlohmann::json;

// Lines of source shown above and below a culprit's line.
constexpr int kSourceContext = 3;
// Source files larger than this are not read; longer lines are cut.
constexpr uint64_t kMaxSourceBytes = 8 << 20;
constexpr size_t kMaxSourceLine = 400;
// The timelines and texts of this many hangs are compressed together: neighbouring hangs share
// most of their lines (frames, modules), so that a chunk compresses several times better than
// each hang alone, and inflating one chunk to show one hang is still quick.
constexpr size_t kDetailChunk = 32;

std::string Base64(const std::string& in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 |
                       static_cast<uint8_t>(in[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63],
            kAlphabet[v & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

// zlib format (RFC 1950), what DecompressionStream("deflate") reads. "" if zlib fails.
std::string Deflate(const std::string& in) {
  uLongf size = compressBound(static_cast<uLong>(in.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK) {
    return "";
  }
  out.resize(size);
  return out;
}

// Every string, frame and stack once.
class Tables {
 public:
  Tables() { String(""); }

  int String(const std::string& s) {
    auto [it, added] = string_ids_.try_emplace(s, static_cast<int>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }

  int FrameId(const std::string& name, const std::string& module, const std::string& file, int line,
              report::FrameKind kind) {
    const auto key = std::make_tuple(String(name), String(module), String(file), line);
    auto [it, added] = frame_ids_.try_emplace(key, static_cast<int>(frame_ids_.size()));
    if (added) {
      // The page knows three kinds: a third-party Python package's frame is drawn as the
      // application's.
      if (kind == report::FrameKind::kLibrary) kind = report::FrameKind::kApp;
      for (int v :
           {std::get<0>(key), std::get<1>(key), std::get<2>(key), line, static_cast<int>(kind)}) {
        frames_.push_back(v);
      }
    }
    return it->second;
  }

  // A Python frame's name is "Handler.handle (app.py:42)" (FrameName), its module "".
  int FrameId(const Frame& f) {
    return FrameId(FrameName(f), f.module, f.file, f.line, report::ClassifyFrame(f));
  }

  int StackId(const Stack& s) {
    std::vector<int> ids;
    ids.reserve(s.frames.size());
    for (const Frame& f : s.frames) ids.push_back(FrameId(f));
    auto [it, added] = stack_ids_.try_emplace(ids, static_cast<int>(stacks_.size()));
    if (added) {
      stacks_.push_back(ids);
      stack_top_.push_back(std::max(report::FindCulprit(s).frame, 0));
    }
    return it->second;
  }

  json strings() const { return strings_; }
  json frames() const { return frames_; }
  json stacks() const { return stacks_; }
  json stack_top() const { return stack_top_; }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, int> string_ids_;
  std::vector<int> frames_;
  std::map<std::tuple<int, int, int, int>, int> frame_ids_;
  std::vector<std::vector<int>> stacks_;
  std::vector<int> stack_top_;
  std::map<std::vector<int>, int> stack_ids_;
};

// Whether anyone could read the file without privileges: readable by all, or by its owner when
// that is the invoking user (not root). Root may read /etc/shadow; the page must not.
bool ReadableWithoutPrivileges(const struct stat& st) {
  const uid_t uid = getuid();
  return (st.st_mode & S_IROTH) != 0 || (uid != 0 && st.st_uid == uid && (st.st_mode & S_IRUSR));
}

// The lines of source files, read once each. A file is read only when the DWARF of a module of
// the report names it (Report::dwarf_source_files), it is a regular file
// (tools/reader/input_file.h: never a FIFO or a device), readable without privileges and at most
// kMaxSourceBytes: the page is shared, and the report may be another user's.
class Sources {
 public:
  explicit Sources(const std::set<std::string>& allowed) : allowed_(allowed) {}

  // [first line number, [lines...]] around `line` of `file`, or null when it cannot be read.
  json Around(const std::string& file, int line) {
    if (file.empty() || line <= 0) return nullptr;
    auto [it, added] = files_.try_emplace(file);
    if (added) it->second = Read(file);
    const std::vector<std::string>& lines = it->second;
    if (static_cast<size_t>(line) > lines.size()) return nullptr;
    const int first = std::max(1, line - kSourceContext);
    const int last = std::min(static_cast<int>(lines.size()), line + kSourceContext);
    json out = json::array();
    for (int i = first; i <= last; ++i) out.push_back(lines[static_cast<size_t>(i - 1)]);
    return json::array({first, std::move(out)});
  }

 private:
  std::vector<std::string> Read(const std::string& file) const {
    if (allowed_.count(file) == 0) return {};
    InputFile in;
    std::string error;
    if (!in.Open(file, &error) || in.size() > kMaxSourceBytes ||
        !ReadableWithoutPrivileges(in.stat())) {
      return {};
    }
    // At most the size checked: a file that grows meanwhile is cut there.
    std::string text(in.size(), '\0');
    size_t have = 0;
    for (ssize_t n;
         have < text.size() && (n = in.ReadAt(text.data() + have, text.size() - have, have)) > 0;) {
      have += static_cast<size_t>(n);
    }
    text.resize(have);
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      std::string l = text.substr(at, nl - at);
      if (!l.empty() && l.back() == '\r') l.pop_back();
      if (l.size() > kMaxSourceLine) l = l.substr(0, kMaxSourceLine) + "...";
      lines.push_back(std::move(l));
      at = nl + 1;
    }
    return lines;
  }

  const std::set<std::string>& allowed_;
  std::map<std::string, std::vector<std::string>> files_;
};

int ClassIndex(HangClass c) {
  switch (c) {
    case HangClass::kBusy:
      return 0;
    case HangClass::kBlocked:
      return 1;
    case HangClass::kMixed:
      return 2;
    case HangClass::kUnknown:
      break;
  }
  return 3;
}

// The text of one hang, as `hangwatch report --format text --hang N` prints it, without NUL
// characters (they separate the hangs of a chunk).
std::string OneHangText(const HangRecord& h) {
  Report one;
  one.hangs.push_back(h);
  std::string text = FormatText(one);
  for (char& c : text) {
    if (c == '\0') c = '?';
  }
  return text;
}

// JSON text that cannot end a <script> element: '<' only occurs inside JSON strings, where
// \u003c means the same.
std::string ScriptSafe(const json& j) {
  // Names that are not valid UTF-8 (a mangled name cut short) are repaired, not fatal.
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char ch : text) {
    if (ch == '<') {
      out += "\\u003c";
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

json LagFiguresJson(const LagFigures& f) {
  json slow = json::array();
  for (int i = 0; i < kSlowPassThresholds; ++i) {
    if (f.slow_passes[i] > 0) slow.push_back({kSlowPassThresholdsMs[i], f.slow_passes[i]});
  }
  return {{"passes", f.passes}, {"busy_ms", f.busy_ms},   {"p50", f.p50_ms},
          {"p90", f.p90_ms},    {"p95", f.p95_ms},        {"p99", f.p99_ms},
          {"max", f.max_ms},    {"slow", std::move(slow)}};
}

// The lag records merged: over everything, and per process and host (the 20 with the worst
// p99), with the histogram cut into one bar per power of two of the duration. Null without lag
// records. With the hang rate (hang_rate.h): "hang_rate" s/h, "hang_s" and "watched_s"; null
// rate when the records cover no time.
json LagSummary(const std::vector<Lag>& lags, const HangRate& rate) {
  if (lags.empty()) return nullptr;
  PassHistogram all;
  std::map<std::pair<std::string, std::string>, PassHistogram> by;
  for (const Lag& l : lags) {
    all.Merge(l.passes);
    by[{l.process_name, l.host}].Merge(l.passes);
  }
  json out = LagFiguresJson(all.Figures());
  out["records"] = lags.size();
  out["hang_rate"] = rate.known() ? json(rate.seconds_per_hour()) : json(nullptr);
  out["hang_s"] = static_cast<double>(rate.hang_ms) / 1000.0;
  out["watched_s"] = static_cast<double>(rate.watched_ms) / 1000.0;
  // [upper bound in ms, passes]: bucket 0, then 64 buckets per power of two.
  json bars = json::array();
  uint64_t in_bar = 0;
  for (int b = 0; b < pass_histogram::kBuckets; ++b) {
    in_bar += all.count(b);
    if (b == 0 || b % 64 == 0 || b == pass_histogram::kBuckets - 1) {
      bars.push_back({static_cast<double>(pass_histogram::BucketUpperNs(b)) / 1e6, in_bar});
      in_bar = 0;
    }
  }
  while (!bars.empty() && bars.back()[1] == 0) bars.erase(bars.end() - 1);
  size_t first = 0;
  while (first < bars.size() && bars[first][1] == 0) ++first;
  out["bars"] = json(std::vector<json>(bars.begin() + static_cast<long>(first), bars.end()));
  std::vector<std::pair<LagFigures, std::pair<std::string, std::string>>> rows;
  for (const auto& [key, h] : by) rows.emplace_back(h.Figures(), key);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first.p99_ms > b.first.p99_ms; });
  json per = json::array();
  for (size_t i = 0; i < rows.size() && i < 20; ++i) {
    json row = LagFiguresJson(rows[i].first);
    row["process"] = rows[i].second.first;
    row["host"] = rows[i].second.second;
    per.push_back(std::move(row));
  }
  out["by"] = std::move(per);
  out["groups"] = rows.size();
  return out;
}

// Why hang `h` waited: its cause's kind and summary (string indices, 0 without a cause), and the
// threads on the other side (a lock's chain of owners, every thread of a deadlock), 5 values
// each: tid, name, what it holds or wants, what it does (string indices), its stack (-1 when
// not captured).
void AddCause(const HangRecord& h, Tables* t, std::map<std::string, json>* col) {
  const Cause& c = h.cause;
  (*col)["cause_kind"].push_back(c.empty() ? 0 : t->String(CauseKindName(c.kind)));
  (*col)["cause"].push_back(
      c.empty()
          ? 0
          : t->String(c.summary.empty() ? report::DescribeCause(c, h.duration_ms) : c.summary));
  std::vector<const CauseThread*> threads;
  const bool cycle = report::CauseHasCycle(c.kind);
  if (cycle) {
    for (const CauseThread& th : c.cycle) threads.push_back(&th);
  } else if (!c.chain.empty()) {
    for (const CauseThread& th : c.chain) threads.push_back(&th);
  } else if (c.has_owner) {
    threads.push_back(&c.owner);
  }
  json out = json::array();
  for (const CauseThread* th : threads) {
    std::string role;
    if (cycle && !th->wants.empty()) {
      role = "wants " + report::DescribeLock(th->wants);
    }
    if (!th->holds.empty()) {
      role = "holds " + report::DescribeLock(th->holds) + (role.empty() ? "" : ", " + role);
    }
    Stack s;
    s.frames = th->frames;
    out.push_back(th->tid);
    out.push_back(t->String(th->name));
    out.push_back(t->String(role));
    out.push_back(t->String(report::DescribeActivity(*th)));
    out.push_back(th->frames.empty() ? -1 : t->StackId(s));
  }
  (*col)["cause_threads"].push_back(std::move(out));
}

// The lag records of one thread role only (never summed across roles).
std::vector<Lag> LagsOfRole(const std::vector<Lag>& lags, std::string_view role) {
  std::vector<Lag> out;
  for (const Lag& l : lags) {
    if (report::RoleOrMain(l.thread_role) == role) out.push_back(l);
  }
  return out;
}

// "lag": the main thread's lag records (null without any), with its hang rate.
json MainLag(const Report& report) {
  return LagSummary(LagsOfRole(report.lags, report::kMainRole),
                    HangRateOf(report.hangs, report.lags, report::kMainRole));
}

// "lag_roles": [LagSummary with its "role"] for each other thread role, in name order.
json OtherRolesLag(const Report& report) {
  std::set<std::string> roles;
  for (const Lag& l : report.lags) roles.emplace(report::RoleOrMain(l.thread_role));
  json out = json::array();
  for (const std::string& role : roles) {
    if (role == report::kMainRole) continue;
    json lag =
        LagSummary(LagsOfRole(report.lags, role), HangRateOf(report.hangs, report.lags, role));
    lag["role"] = role;
    out.push_back(std::move(lag));
  }
  return out;
}

}  // namespace

HtmlReportData MakeHtmlReportData(const Report& report, const std::string& title) {
  Tables t;
  Sources sources(report.dwarf_source_files);
  // Column name -> one value per hang.
  std::map<std::string, json> col;
  for (const char* name :
       {"process",       "pid",      "hang_id",     "start",     "duration",     "cpu",
        "cpu_pct",       "class",    "fatal",       "signature", "fingerprint",  "culprit",
        "threshold",     "interval", "samples",     "failed",    "stopped",      "truncated",
        "stacks",        "host",     "labels",      "dominant",  "cause_kind",   "cause",
        "cause_threads", "thread",   "thread_name", "context",   "context_text", "input",
        "perceived"}) {
    col[name] = json::array();
  }
  json source_list = json::array();
  std::string details;              // base64 lines: nothing to escape
  std::map<int, bool> source_done;  // culprit frame -> looked up
  std::string chunk;                // the hangs since the last full chunk
  size_t chunk_size = 0;
  for (const HangRecord& h : report.hangs) {
    const std::string process(report::ProcessName(h.process_name, h.process));
    col["process"].push_back(t.String(process.empty() ? "?" : process));
    col["pid"].push_back(h.pid);
    col["hang_id"].push_back(h.hang_id);
    col["start"].push_back(h.start_unix_ms);
    col["duration"].push_back(h.duration_ms);
    col["cpu"].push_back(h.cpu_ms);
    col["cpu_pct"].push_back(h.cpu_percent);
    col["class"].push_back(ClassIndex(h.hang_class));
    col["fatal"].push_back(h.fatal ? 1 : 0);
    col["signature"].push_back(t.String(h.signature));
    col["fingerprint"].push_back(t.String(h.fingerprint));
    col["threshold"].push_back(h.threshold_ms);
    col["interval"].push_back(h.sample_interval_ms);
    col["samples"].push_back(h.samples);
    col["failed"].push_back(h.failed_samples);
    col["stopped"].push_back(h.stopped_ms);
    col["truncated"].push_back(h.timeline_truncated ? 1 : 0);
    col["host"].push_back(t.String(h.host));
    col["thread"].push_back(t.String(std::string(report::RoleOrMain(h.thread_role))));
    col["thread_name"].push_back(t.String(h.thread_name));
    std::string labels;
    for (const auto& [k, v] : h.labels) labels += (labels.empty() ? "" : ", ") + k + "=" + v;
    col["labels"].push_back(t.String(labels));
    // What the pass served (its context key and words) and whether a person waited: string
    // indices (0: unknown), perceived 1, 0 or -1 (unknown).
    col["context"].push_back(t.String(report::ContextKey(h.context)));
    col["context_text"].push_back(t.String(report::DescribeContext(h.context)));
    col["input"].push_back(t.String(report::DescribeInput(h)));
    col["perceived"].push_back(h.perceived.has_value() ? (*h.perceived ? 1 : 0) : -1);

    // The culprit, as the frame of the dominant stack it names (the flame graph's frame).
    int culprit = -1;
    const Culprit c = HangCulprit(h);
    const Stack* d = h.dominant();
    if (d != nullptr && c.frame >= 0 && static_cast<size_t>(c.frame) < d->frames.size()) {
      culprit = t.FrameId(d->frames[static_cast<size_t>(c.frame)]);
    } else if (!c.empty()) {
      Frame f;
      f.language = c.language;
      f.module = c.module;
      f.symbol = c.symbol;
      f.file = c.file;
      culprit = t.FrameId(CulpritLabel(c, CulpritLabelStyle::kName), c.module, c.file, c.line,
                          report::ClassifyFrame(f));
    }
    col["culprit"].push_back(culprit);
    if (culprit >= 0 && !source_done[culprit]) {
      source_done[culprit] = true;
      json around = sources.Around(c.file, c.line);
      if (!around.is_null()) source_list.push_back({culprit, around[0], around[1]});
    }

    json stacks = json::array();
    std::map<int, int> position;  // Stack::id -> index in h.stacks
    for (size_t i = 0; i < h.stacks.size(); ++i) {
      const Stack& s = h.stacks[i];
      position[s.id] = static_cast<int>(i);
      stacks.push_back(t.StackId(s));
      stacks.push_back(s.count);
      stacks.push_back(s.cpu_us);
    }
    col["stacks"].push_back(std::move(stacks));
    col["dominant"].push_back(d != nullptr ? t.StackId(*d) : -1);
    AddCause(h, &t, &col);
    json timeline = json::array();
    std::string states;
    for (const TimelineEntry& e : h.timeline) {
      const auto p = position.find(e.stack);
      timeline.push_back(e.t_ms);
      timeline.push_back(p == position.end() ? -1 : p->second);
      timeline.push_back(e.cpu_us);
      states.push_back(e.state >= 0x21 && e.state < 0x7f ? e.state : '?');
    }
    if (chunk_size == kDetailChunk) {
      details += Base64(Deflate(chunk)) + "\n";
      chunk.clear();
      chunk_size = 0;
    }
    if (chunk_size++ > 0) chunk.push_back('\0');
    // Needed only for the hang on display: compressed with its text.
    chunk += timeline.dump() + "\n" + states + "\n" + OneHangText(h);
  }
  if (chunk_size > 0) details += Base64(Deflate(chunk)) + "\n";

  json stalls = json::array();
  for (const StartupStall& s : report.startup_stalls) {
    stalls.push_back({{"process", s.process},
                      {"pid", s.pid},
                      {"start", s.start_unix_ms},
                      {"duration", s.duration_ms},
                      {"threshold", s.threshold_ms}});
  }
  json data = {{"version", 1},
               {"title", title},
               {"detail_chunk", kDetailChunk},
               {"strings", t.strings()},
               {"frames", t.frames()},
               {"stacks", t.stacks()},
               {"stack_top", t.stack_top()},
               {"hangs", col},
               {"sources", std::move(source_list)},
               {"stalls", std::move(stalls)},
               {"lag", MainLag(report)},
               {"lag_roles", OtherRolesLag(report)},
               {"skipped", report.skipped_lines},
               {"first_error", report.first_error}};
  return {ScriptSafe(data), std::move(details)};
}

}  // namespace hangwatch::tools
