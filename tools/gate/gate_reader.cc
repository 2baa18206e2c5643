#include "tools/gate/gate_reader.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <variant>

#include "report/record_types.h"
#include "report/report_decode.h"
#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

// Inside a record: a line of JSON Lines. '\n' ends it, so it is never white space here (a
// string or object that reaches it is a torn line).
bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\r'; }

const char* SkipWs(const char* p, const char* e) {
  while (p < e && IsWs(*p)) ++p;
  return p;
}

// Bytes the scanning loops stop at: in a string, '"', '\\' and control characters; in an
// object or array, strings, brackets and control characters other than tab and CR.
struct StopTables {
  bool in_string[256] = {};
  bool in_object[256] = {};
  constexpr StopTables() {
    for (int c = 0; c < 0x20; ++c) in_string[c] = in_object[c] = true;
    in_object[static_cast<int>('\t')] = in_object[static_cast<int>('\r')] = false;
    in_string[static_cast<int>('"')] = in_string[static_cast<int>('\\')] = true;
    for (char c : {'"', '{', '[', '}', ']'}) in_object[static_cast<unsigned char>(c)] = true;
  }
};
constexpr StopTables kStop;

// The bytes of an 8-byte word (little-endian) that a string stops at: '"', '\\' or a control
// character. Only the lowest flagged byte is exact (a borrow can flag bytes above it), which is
// the only one used.
inline uint64_t StringStops(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
  return (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
          ((x - kOnes * 0x20) & ~x)) &
         kHigh;
}

// p is on a string's opening quote: returns the position after its closing quote (nullptr
// when there is none before the line ends, or it holds a control character). Eight bytes at a
// time, then byte by byte at a stop.
const char* SkipString(const char* p, const char* e) {
  ++p;
  for (;;) {
    while (std::endian::native == std::endian::little && e - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      const uint64_t stops = StringStops(word);
      if (stops != 0) {
        p += __builtin_ctzll(stops) / 8;
        break;
      }
      p += 8;
    }
    while (p < e && !kStop.in_string[static_cast<unsigned char>(*p)]) ++p;
    if (p >= e) return nullptr;
    if (*p == '"') return p + 1;
    if (*p != '\\' || p + 1 >= e || static_cast<unsigned char>(p[1]) < 0x20) return nullptr;
    p += 2;  // the backslash and the escaped character
  }
}

// One value: a string, an object or array (brackets matched, strings skipped), or a number or
// literal (its characters). Returns the position after it, nullptr when it is malformed.
const char* SkipValue(const char* p, const char* e) {
  if (p >= e) return nullptr;
  if (*p == '"') return SkipString(p, e);
  if (*p == '{' || *p == '[') {
    char stack[128];
    size_t depth = 0;
    while (p < e) {
      const char c = *p;
      if (!kStop.in_object[static_cast<unsigned char>(c)]) {
        ++p;
        continue;
      }
      if (c == '"') {
        p = SkipString(p, e);
        if (p == nullptr) return nullptr;
        continue;
      }
      if (c == '{' || c == '[') {
        if (depth == sizeof stack) return nullptr;
        stack[depth++] = c == '{' ? '}' : ']';
      } else if (c == '}' || c == ']') {
        if (depth == 0 || stack[depth - 1] != c) return nullptr;
        if (--depth == 0) return p + 1;
      } else {
        return nullptr;  // a control character: '\n' ends the line inside the value
      }
      ++p;
    }
    return nullptr;
  }
  const char* start = p;
  while (p < e && *p != ',' && *p != '}' && *p != ']' && !IsWs(*p)) {
    const char c = *p;
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z'))) {
      return nullptr;
    }
    ++p;
  }
  return p > start ? p : nullptr;
}

// A string value without escapes, as a view (the gate's keys and values never need one).
bool RawString(const char* p, const char* end_quote_next, std::string_view* out) {
  const std::string_view v(p + 1, static_cast<size_t>(end_quote_next - p - 2));
  if (v.find('\\') != std::string_view::npos) return false;
  *out = v;
  return true;
}

// Files each decoded record into its list of the report; lag records are added into the first
// one at once (keeping ten thousand 14 KiB histograms alive costs more than reading them).
struct AddTo {
  Report* report;
  size_t* lag_records;
  void operator()(HangRecord&& h) const { report->hangs.push_back(std::move(h)); }
  void operator()(StartupStall&& s) const { report->startup_stalls.push_back(std::move(s)); }
  void operator()(Lag&& l) const {
    ++*lag_records;
    if (report->lags.empty()) {
      report->lags.push_back(std::move(l));
    } else {
      report->lags[0].passes.Merge(l.passes);
    }
  }
  void operator()(report::UnknownRecord&& u) const {
    ++report->unknown_records;
    if (u.other_version) ++report->other_version_records;
  }
};

struct Tally {
  std::string line;  // the longest hang's line (a copy: lines are read through one buffer)
  uint64_t max_duration_ms = 0;
  HangTally tally{0, 0};
};

bool ReadSlowly(const std::vector<std::string>& paths, Report* out, std::vector<HangTally>* tallies,
                size_t* lag_records, std::string* error) {
  *out = Report{};
  tallies->clear();
  for (const std::string& path : paths) {
    Report one;
    if (!ReadReportFile(path, &one, error)) return false;
    MergeReport(std::move(one), out);
  }
  // One tally per hang, as every caller expects them parallel (a baseline's too).
  for (const HangRecord& h : out->hangs) tallies->push_back({1, h.duration_ms});
  *lag_records = out->lags.size();
  return true;
}

}  // namespace

namespace {

bool IsInteger(std::string_view v) {
  if (!v.empty() && v[0] == '-') v.remove_prefix(1);
  if (v.empty() || v.size() > 19) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Whether a raw scalar, object or array `value` (well formed: SkipValue found it) has the kind
// of report::kHangFields.
bool HasKind(std::string_view value, report::ValueKind kind) {
  const char c = value[0];
  switch (kind) {
    case report::ValueKind::kInteger:
      return IsInteger(value);
    case report::ValueKind::kNumber:
      return c == '-' || (c >= '0' && c <= '9');
    case report::ValueKind::kString:
      return c == '"';
    case report::ValueKind::kBoolean:
      return value == "true" || value == "false";
    case report::ValueKind::kObject:
      return c == '{';
    case report::ValueKind::kArray:
      return c == '[';
  }
  return false;
}

// The bits of report::kHangFields' required rows.
constexpr uint32_t RequiredHangFields() {
  uint32_t bits = 0;
  for (size_t i = 0; i < std::size(report::kHangFields); ++i) {
    if (report::kHangFields[i].required) bits |= 1u << i;
  }
  return bits;
}
static_assert(std::size(report::kHangFields) <= 32);

// Checks one top-level member against report::kHangFields: *seen gets the bit of its row; false
// when a known field has another type. *next is the row after the previous field: the agent
// writes them in the table's order, so the first comparison finds the row.
bool CheckHangField(std::string_view key, std::string_view value, uint32_t* seen, size_t* next) {
  constexpr size_t n = std::size(report::kHangFields);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (*next + k) % n;
    const report::TopLevelField& f = report::kHangFields[i];
    if (f.name.size() != key.size() || f.name != key) continue;
    *seen |= 1u << i;
    *next = i + 1;
    return HasKind(value, f.kind) ||
           ((f.name == "culprit" || f.name == "cause") && value == "null");
  }
  return true;
}

// One record from p (white space, then an object, then white space) up to the end of its line
// ('\n' or e). Returns the end of the line, nullptr when the line is not one JSON object.
const char* ScanRecord(const char* p, const char* e, ScannedLine* out) {
  p = SkipWs(p, e);
  if (p >= e || *p != '{') return nullptr;
  p = SkipWs(p + 1, e);
  auto line_end = [e](const char* q) -> const char* {
    q = SkipWs(q, e);
    return q == e || *q == '\n' ? q : nullptr;
  };
  uint32_t seen = 0;
  size_t next_field = 0;
  bool typed = true;
  const auto done = [&](const char* q) {
    constexpr uint32_t kRequired = RequiredHangFields();
    out->hang_fields_ok = typed && (seen & kRequired) == kRequired;
    return line_end(q);
  };
  if (p < e && *p == '}') return done(p + 1);
  for (;;) {
    if (p >= e || *p != '"') return nullptr;
    const char* key_end = SkipString(p, e);
    if (key_end == nullptr) return nullptr;
    const std::string_view key(p + 1, static_cast<size_t>(key_end - p - 2));
    p = SkipWs(key_end, e);
    if (p >= e || *p != ':') return nullptr;
    p = SkipWs(p + 1, e);
    const char* value_end = SkipValue(p, e);
    if (value_end == nullptr) return nullptr;
    const std::string_view value(p, static_cast<size_t>(value_end - p));
    if (key == "type" || key == "signature" || key == "phase") {
      std::string_view v;
      if (*p == '"' && RawString(p, value_end, &v)) {
        (key == "type" ? out->type : key == "signature" ? out->signature : out->phase) = v;
      }
      if (key == "type") out->has_type = true;
      if (key == "signature" || key == "phase") typed &= *p == '"';
    } else if (key == "format_version") {
      out->this_version = value == "1";
    } else if (!CheckHangField(key, value, &seen, &next_field)) {
      typed = false;
    }
    if (key == "duration_ms") {
      uint64_t v = 0;
      bool digits = value_end - p <= 19;
      for (const char* d = p; d < value_end && digits; ++d) {
        digits = *d >= '0' && *d <= '9';
        v = v * 10 + static_cast<uint64_t>(*d - '0');
      }
      out->has_duration = digits;
      out->duration_ms = v;
    }
    p = SkipWs(value_end, e);
    if (p < e && *p == ',') {
      p = SkipWs(p + 1, e);
      continue;
    }
    if (p < e && *p == '}') return done(p + 1);
    return nullptr;
  }
}

// Calls fn(key, value) for each member of `object`, a JSON object that ScanRecord (or
// SkipValue) has already found well formed. Keys are raw (escapes not decoded).
template <typename Fn>
void ForEachMember(std::string_view object, Fn fn) {
  const char* p = object.data();
  const char* e = p + object.size();
  p = SkipWs(p, e);
  if (p >= e || *p != '{') return;
  p = SkipWs(p + 1, e);
  while (p < e && *p == '"') {
    const char* key_end = SkipString(p, e);
    if (key_end == nullptr) return;
    const std::string_view key(p + 1, static_cast<size_t>(key_end - p - 2));
    p = SkipWs(key_end, e);
    if (p >= e || *p != ':') return;
    p = SkipWs(p + 1, e);
    const char* value_end = SkipValue(p, e);
    if (value_end == nullptr) return;
    fn(key, std::string_view(p, static_cast<size_t>(value_end - p)));
    p = SkipWs(value_end, e);
    if (p < e && *p == ',') p = SkipWs(p + 1, e);
  }
}

bool ParseUnsigned(std::string_view v, uint64_t* out) {
  if (v.empty() || v.size() > 19) return false;
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = n;
  return true;
}

bool ParseNumber(std::string_view v, double* out) {
  if (v.empty() || !((v[0] >= '0' && v[0] <= '9') || v[0] == '-')) return false;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && end == v.data() + v.size();
}

// A lag record's histogram, read from its line without building a JSON document, and added to
// *into: what report/report_decode.cc's ParseLag reads, with the same checks (required fields
// and their types, ranges). False, with *into untouched, for anything it does not expect: the
// caller then decodes the line in full.
bool AddLagLine(std::string_view line, PassHistogram* into) {
  std::string_view pid, start, end, busy, buckets, slow, labels, name, host;
  ForEachMember(line, [&](std::string_view key, std::string_view value) {
    if (key == "pid")
      pid = value;
    else if (key == "start_unix_ms")
      start = value;
    else if (key == "end_unix_ms")
      end = value;
    else if (key == "busy_ms")
      busy = value;
    else if (key == "buckets")
      buckets = value;
    else if (key == "slow_passes")
      slow = value;
    else if (key == "labels")
      labels = value;
    else if (key == "process_name")
      name = value;
    else if (key == "host")
      host = value;
  });
  double busy_ms = 0;
  if (!IsInteger(pid) || !IsInteger(start) || !IsInteger(end) || !ParseNumber(busy, &busy_ms) ||
      !(busy_ms >= 0 && busy_ms < 1e15) || (!name.empty() && name[0] != '"') ||
      (!host.empty() && host[0] != '"') || buckets.empty() || buckets[0] != '[') {
    return false;
  }
  if (!labels.empty()) {
    if (labels[0] != '{') return false;
    bool strings = true;
    ForEachMember(labels, [&](std::string_view, std::string_view v) { strings &= v[0] == '"'; });
    if (!strings) return false;
  }
  // [[upper_us, count], ...]
  std::pair<int, uint64_t> parsed[pass_histogram::kBuckets];
  size_t n = 0;
  const char* p = buckets.data() + 1;
  const char* e = buckets.data() + buckets.size() - 1;  // the closing ']'
  p = SkipWs(p, e);
  while (p < e) {
    if (*p != '[' || n == pass_histogram::kBuckets) return false;
    const char* close = static_cast<const char*>(std::memchr(p, ']', static_cast<size_t>(e - p)));
    const char* comma = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(e - p)));
    if (close == nullptr || comma == nullptr || comma > close) return false;
    double upper_us = 0;
    uint64_t count = 0;
    const char* a = SkipWs(p + 1, comma);
    const char* a_end = comma;
    while (a_end > a && IsWs(a_end[-1])) --a_end;
    const char* b = SkipWs(comma + 1, close);
    const char* b_end = close;
    while (b_end > b && IsWs(b_end[-1])) --b_end;
    if (!ParseNumber(std::string_view(a, static_cast<size_t>(a_end - a)), &upper_us) ||
        !ParseUnsigned(std::string_view(b, static_cast<size_t>(b_end - b)), &count) ||
        !(upper_us > 0 && upper_us < 1e15)) {
      return false;
    }
    const auto upper_ns = static_cast<uint64_t>(std::llround(upper_us * 1000));
    parsed[n++] = {pass_histogram::BucketOf(upper_ns - 1), count};
    p = SkipWs(close + 1, e);
    if (p < e && *p == ',') p = SkipWs(p + 1, e);
  }
  uint64_t slow_counts[kSlowPassThresholds] = {};
  if (!slow.empty()) {
    if (slow[0] != '{') return false;
    bool ok = true;
    ForEachMember(slow, [&](std::string_view key, std::string_view v) {
      for (int t = 0; t < kSlowPassThresholds; ++t) {
        if (key == std::to_string(kSlowPassThresholdsMs[t]))
          ok &= ParseUnsigned(v, &slow_counts[t]);
      }
    });
    if (!ok) return false;
  }
  into->AddBusyNs(static_cast<uint64_t>(std::llround(busy_ms * 1e6)));
  for (size_t k = 0; k < n; ++k) into->AddToBucket(parsed[k].first, parsed[k].second);
  for (int t = 0; t < kSlowPassThresholds; ++t) into->AddSlowPasses(t, slow_counts[t]);
  return true;
}

}  // namespace

bool ScanRecordLine(std::string_view line, ScannedLine* out) {
  if (line.find('\n') != std::string_view::npos) return false;
  return ScanRecord(line.data(), line.data() + line.size(), out) != nullptr;
}

bool ReadReportsForGate(const std::vector<std::string>& paths, Report* out,
                        std::vector<HangTally>* tallies, size_t* lag_records, std::string* error) {
  *lag_records = 0;
  std::unordered_map<std::string, size_t> index;  // signature -> entries
  std::vector<std::pair<std::string, Tally>> entries;
  std::vector<HangTally> untallied;  // parallel to out->hangs while reading
  for (const std::string& path : paths) {
    // Read, never mapped (tools/reader/input_file.h): a report truncated meanwhile just ends early.
    InputFile file;
    if (!file.Open(path, error)) return false;
    const InputFormat format = file.Sniff();
    if (const std::string_view why = CompressedFileError(format); !why.empty()) {
      *error = path + ": " + std::string(why);
      return false;
    }
    if (format == InputFormat::kOpenHang) {
      Report one;
      if (!ReadReportFile(path, &one, error)) return false;
      for (const HangRecord& h : one.hangs) untallied.push_back({1, h.duration_ms});
      MergeReport(std::move(one), out);
      continue;
    }
    LineReader reader(file, 0);
    Line next;
    size_t line_no = 0, valid = 0, nonempty = 0;
    std::string first_error;
    while (reader.Next(&next)) {
      ++line_no;
      std::string_view line = next.text;
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
        line.remove_suffix(1);
      }
      if (line.empty() && !next.too_long) continue;
      ++nonempty;
      ScannedLine s;
      const bool ok =
          !next.too_long && ScanRecord(line.data(), line.data() + line.size(), &s) != nullptr;
      if (!ok) {
        if (first_error.empty()) {
          first_error =
              "line " + std::to_string(line_no) +
              (next.too_long ? ": longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB"
                             : std::string(": not a JSON object"));
        }
        ++out->skipped_lines;
        continue;
      }
      // The fast path takes only lines that are plainly hangs by report/record_types.h's
      // rules; everything else goes to the decoder, which decides by the same rules.
      if ((!s.has_type || s.type == report::kHangType) && s.this_version && s.hang_fields_ok &&
          !s.signature.empty() && s.has_duration) {
        // Shutdown-phase hangs are tallied apart (the gate may leave them unjudged); the
        // decoder reads any other phase as "run", so they share a tally.
        std::string key(s.signature);
        if (s.phase == report::kPhaseShutdown) key += "/shutdown";
        auto [it, inserted] = index.try_emplace(std::move(key), entries.size());
        if (inserted) entries.emplace_back(std::string(s.signature), Tally{});
        Tally& t = entries[it->second].second;
        if (t.tally.count == 0 || s.duration_ms > t.max_duration_ms) {
          t.line.assign(line);
          t.max_duration_ms = s.duration_ms;
        }
        ++t.tally.count;
        t.tally.total_duration_ms += s.duration_ms;
        ++valid;
        continue;
      }
      if (s.type == report::kLagType && s.this_version) {
        bool added;
        if (out->lags.empty()) {
          Lag first;
          added = AddLagLine(line, &first.passes);
          if (added) out->lags.push_back(std::move(first));
        } else {
          added = AddLagLine(line, &out->lags[0].passes);
        }
        if (added) {
          ++*lag_records;
          ++valid;
          continue;
        }
      }
      std::string why;
      report::Record record;
      if (!report::Decode(line, &record, &why)) {
        if (first_error.empty()) first_error = "line " + std::to_string(line_no) + ": " + why;
        ++out->skipped_lines;
        continue;
      }
      if (const HangRecord* h = std::get_if<HangRecord>(&record)) {
        untallied.push_back({1, h->duration_ms});
      }
      std::visit(AddTo{out, lag_records}, std::move(record));
      ++valid;
    }
    if (reader.error() != 0) {
      *error = path + ": " + std::strerror(reader.error());
      return false;
    }
    if (nonempty > 0 && valid == 0) {
      *error = path + ": malformed report: no valid record (" + first_error + ")";
      return false;
    }
    if (out->first_error.empty()) out->first_error = first_error;
  }

  // The longest hang of each signature, decoded in full, first; then the others.
  std::vector<HangRecord> others = std::move(out->hangs);
  out->hangs.clear();
  out->hangs.reserve(entries.size() + others.size());
  tallies->clear();
  tallies->reserve(entries.size() + others.size());
  for (const auto& [signature, t] : entries) {
    HangRecord h;
    std::string why;
    // A well-formed line that is not a valid hang record: read everything as the report
    // reader does, which skips it.
    if (!report::DecodeHang(t.line, &h, &why))
      return ReadSlowly(paths, out, tallies, lag_records, error);
    out->hangs.push_back(std::move(h));
    tallies->push_back(t.tally);
  }
  for (size_t k = 0; k < others.size(); ++k) {
    out->hangs.push_back(std::move(others[k]));
    tallies->push_back(untallied[k]);
  }
  return true;
}

}  // namespace hangwatch::tools
