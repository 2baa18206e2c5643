#include "tools/gate/gate_reader.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>
#include <variant>

#include "report/context_scan.h"
#include "report/record_scan.h"
#include "report/record_types.h"
#include "report/report_decode.h"
#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

constexpr size_t kSignature = report::KeyIndex("signature");
constexpr size_t kDuration = report::KeyIndex("duration_ms");
constexpr size_t kPhase = report::KeyIndex("phase");

using report::scan_internal::IsWs;
using report::scan_internal::SkipWs;

// The one lag record of `role` in report->lags, which the role's records are added into;
// nullptr when there is none yet.
Lag* LagOfRole(Report* report, std::string_view role) {
  for (Lag& l : report->lags) {
    if (report::RoleOrMain(l.thread_role) == role) return &l;
  }
  return nullptr;
}

// Files each decoded record into its list of the report; lag records are added into the one of
// their role at once (keeping ten thousand 14 KiB histograms alive costs more than reading them).
struct AddTo {
  Report* report;
  size_t* lag_records;
  std::map<std::string, size_t>* by_role;
  void operator()(HangRecord&& h) const {
    NoteInputWait(h, report);
    report->hangs.push_back(std::move(h));
  }
  void operator()(StartupStall&& s) const { report->startup_stalls.push_back(std::move(s)); }
  void operator()(Lag&& l) const {
    ++*lag_records;
    const std::string role(report::RoleOrMain(l.thread_role));
    ++(*by_role)[role];
    if (Lag* into = LagOfRole(report, role)) {
      report::AddLag(into, l);
    } else {
      l.thread_role = role;
      report->lags.push_back(std::move(l));
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
                size_t* lag_records, std::map<std::string, size_t>* by_role, std::string* error) {
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
  by_role->clear();
  for (const Lag& l : out->lags) ++(*by_role)[std::string(report::RoleOrMain(l.thread_role))];
  return true;
}

}  // namespace

namespace {

bool ParseNumber(std::string_view v, double* out) {
  if (v.empty() || !((v[0] >= '0' && v[0] <= '9') || v[0] == '-')) return false;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && end == v.data() + v.size();
}

// A lag record's histogram, read from its line without building a JSON document, and added to
// *into: what report/report_decode.cc's ParseLag reads, with the same checks (required fields
// and their types, ranges). False, with *into untouched, for anything it does not expect: the
// caller then decodes the line in full.
bool AddLagLine(const report::ScannedLine& line, PassHistogram* into) {
  // ScanLine has checked the top-level fields (types and ranges): what is left is inside.
  const std::string_view busy = line[report::KeyIndex("busy_ms")];
  const std::string_view buckets = line[report::KeyIndex("buckets")];
  const std::string_view slow = line[report::KeyIndex("slow_passes")];
  double busy_ms = 0;
  if (!ParseNumber(busy, &busy_ms)) return false;
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
        !report::ParseUint64(std::string_view(b, static_cast<size_t>(b_end - b)), &count) ||
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
    report::ForEachMember(slow, [&](std::string_view key, std::string_view v) {
      for (int t = 0; t < kSlowPassThresholds; ++t) {
        if (key == std::to_string(kSlowPassThresholdsMs[t]))
          ok &= report::ParseUint64(v, &slow_counts[t]);
      }
    });
    if (!ok) return false;
  }
  into->AddBusyNs(static_cast<uint64_t>(std::llround(busy_ms * 1e6)));
  for (size_t k = 0; k < n; ++k) into->AddToBucket(parsed[k].first, parsed[k].second);
  for (int t = 0; t < kSlowPassThresholds; ++t) into->AddSlowPasses(t, slow_counts[t]);
  return true;
}

// The tally of a scanned hang: its signature, with its phase when it is shutdown's (the gate
// may leave those unjudged; the decoder reads any other phase as "run", so they share a tally)
// and its thread role when it is not main's (each role is judged by its own budgets).
std::string TallyKey(const report::ScannedLine& s, std::string_view signature) {
  std::string phase_text;
  std::string key(signature);
  if (report::StringValue(s[kPhase], &phase_text) == report::kPhaseShutdown) key += "/shutdown";
  std::string role_text;
  if (const std::string_view role = report::ScannedRole(s, &role_text); role != report::kMainRole) {
    key += '\n';
    key += role;
  }
  return key;
}

}  // namespace

bool ReadReportsForGate(const std::vector<std::string>& paths, Report* out,
                        std::vector<HangTally>* tallies, size_t* lag_records, std::string* error,
                        std::map<std::string, size_t>* lag_records_by_role) {
  std::map<std::string, size_t> unused_by_role;
  std::map<std::string, size_t>* by_role =
      lag_records_by_role != nullptr ? lag_records_by_role : &unused_by_role;
  by_role->clear();
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
      if (next.too_long) {
        if (first_error.empty()) {
          first_error = "line " + std::to_string(line_no) + ": longer than " +
                        std::to_string(kMaxLineBytes >> 20) + " MiB";
        }
        ++out->skipped_lines;
        continue;
      }
      report::ScannedLine s;
      const report::LineKind kind = report::ScanLine(line, &s);
      // Hangs with a signature are tallied from what the scanner read; lag records added into
      // one histogram; everything else goes to the decoder, which the scanner agrees with on
      // what the line is (and which says why a bad line is bad).
      std::string signature_text;
      const std::string_view signature = kind == report::LineKind::kHang
                                             ? report::StringValue(s[kSignature], &signature_text)
                                             : std::string_view();
      if (!signature.empty()) {
        uint64_t duration_ms = 0;
        report::ParseUint64(s[kDuration], &duration_ms);
        // Every hang's input wait, not only the longest hang's of its signature (kept below).
        if (const std::string_view input = s[report::KeyIndex("input")]; !input.empty()) {
          HangRecord h;
          std::string role_text;
          h.thread_role = std::string(report::ScannedRole(s, &role_text));
          if (report::ScanInput(input, &h.input)) NoteInputWait(h, out);
        }
        std::string key = TallyKey(s, signature);
        auto [it, inserted] = index.try_emplace(std::move(key), entries.size());
        if (inserted) entries.emplace_back(std::string(signature), Tally{});
        Tally& t = entries[it->second].second;
        if (t.tally.count == 0 || duration_ms > t.max_duration_ms) {
          t.line.assign(line);
          t.max_duration_ms = duration_ms;
        }
        ++t.tally.count;
        t.tally.total_duration_ms += duration_ms;
        ++valid;
        continue;
      }
      // A record with a queued + running histogram ("delay") is decoded in full.
      if (kind == report::LineKind::kLag && line.find("\"delay\"") == std::string_view::npos) {
        bool added;
        std::string role_text;
        const std::string_view role = report::ScannedRole(s, &role_text);
        if (Lag* into = LagOfRole(out, role)) {
          // Passes without a known wait count at their own time in the role's delay, once it
          // has one (report::AddLag).
          added = AddLagLine(s, &into->passes) &&
                  (into->queued_passes == 0 || AddLagLine(s, &into->delay));
        } else {
          Lag first;
          first.thread_role = role;
          added = AddLagLine(s, &first.passes);
          if (added) out->lags.push_back(std::move(first));
        }
        if (added) {
          ++*lag_records;
          ++(*by_role)[std::string(role)];
          ++valid;
          continue;
        }
      }
      std::string why;
      report::Record record;
      const bool decoded = report::Decode(line, &record, &why);
      if (kind == report::LineKind::kBad || !decoded) {
        if (first_error.empty()) {
          first_error =
              "line " + std::to_string(line_no) + ": " + (why.empty() ? "not a JSON object" : why);
        }
        ++out->skipped_lines;
        continue;
      }
      if (const HangRecord* h = std::get_if<HangRecord>(&record)) {
        untallied.push_back({1, h->duration_ms});
      }
      std::visit(AddTo{out, lag_records, by_role}, std::move(record));
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
      return ReadSlowly(paths, out, tallies, lag_records, by_role, error);
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
