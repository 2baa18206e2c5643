// TopLineParser (simdjson On-Demand over one line) and ScanTopFiles (pread, slices, threads).
#include "tools/top/top_scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/numbers.h"
#include "report/record_types.h"
#include "report/utf8.h"
#include "tools/reader/input_file.h"

namespace hangwatch::tools {

static_assert(TopLineParser::kPadding == simdjson::SIMDJSON_PADDING);

struct TopLineParser::Impl {
  simdjson::ondemand::parser parser;
  bool want_labels = false;
  std::string repaired;  // a line with bytes that are not UTF-8, repaired (and padded)
};

TopLineParser::TopLineParser(bool want_labels) : impl_(std::make_unique<Impl>()) {
  impl_->want_labels = want_labels;
}
TopLineParser::~TopLineParser() = default;

namespace {

using simdjson::ondemand::field;
using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

bool IsBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// "0x1234" -> 0x1234; false for anything else (the report format writes offsets so).
bool ParseHex(std::string_view s, uint64_t* out) {
  return s.size() >= 3 && s.size() <= 18 && s[0] == '0' && s[1] == 'x' &&
         std::isxdigit(static_cast<unsigned char>(s[2])) != 0 &&
         absl::SimpleHexAtoi(absl::string_view(s.data() + 2, s.size() - 2), out);
}

// The culprit object's fields; false when it is mistyped.
bool ReadCulprit(value v, TopHang* h) {
  json_type type;
  if (v.type().get(type)) return false;
  if (type == json_type::null) {
    bool is_null = false;
    return !v.is_null().get(is_null) && is_null;
  }
  object o;
  if (v.get_object().get(o)) return false;
  for (auto f : o) {
    if (f.error()) return false;
    field& fl = f.value_unsafe();
    std::string_view key;
    if (fl.unescaped_key().get(key)) return false;
    if (key == "symbol") {
      if (fl.value().get_string().get(h->culprit_symbol)) return false;
    } else if (key == "kind") {
      std::string_view kind;
      if (fl.value().get_string().get(kind)) return false;
      h->culprit_python = kind == "python";
    } else if (key == "module") {
      if (fl.value().get_string().get(h->culprit_module)) return false;
    } else if (key == "file") {
      if (fl.value().get_string().get(h->culprit_file)) return false;
    } else if (key == "line") {
      if (fl.value().get_int64().get(h->culprit_line)) return false;
    } else if (key == "offset") {
      std::string_view hex;
      if (fl.value().get_string().get(hex) || !ParseHex(hex, &h->culprit_offset)) return false;
    }
  }
  h->has_culprit = true;
  return true;
}

// The cause object's kind (docs/report-format.md, "cause"); null is no cause. False when the
// field itself is mistyped (neither an object nor null); inside the object, as for every object
// the scanner meets (the format's reading rule 5), nothing is checked: a kind that is not a
// string reads as none.
bool ReadCause(value v, TopHang* h) {
  json_type type;
  if (v.type().get(type)) return false;
  if (type == json_type::null) {
    bool is_null = false;
    return !v.is_null().get(is_null) && is_null;
  }
  object o;
  if (v.get_object().get(o)) return false;
  for (auto f : o) {
    if (f.error()) return false;
    field& fl = f.value_unsafe();
    std::string_view key;
    if (fl.unescaped_key().get(key)) return false;
    if (key == "kind") {
      std::string_view kind;
      if (!fl.value().get_string().get(kind)) h->cause_kind = kind;
    }
  }
  return true;
}

bool ReadLabels(value v, TopHang* h) {
  object o;
  if (v.get_object().get(o)) return false;
  for (auto f : o) {
    if (f.error()) return false;
    field& fl = f.value_unsafe();
    std::string_view key, val;
    if (fl.unescaped_key().get(key) || fl.value().get_string().get(val)) return false;
    h->labels.emplace_back(key, val);
  }
  return true;
}

int ClassValue(std::string_view s) {
  if (s == report::kClassBusy) return 1;
  if (s == report::kClassBlocked) return 2;
  if (s == report::kClassMixed) return 3;
  return 0;
}

// The top-level fields the scanner knows, as bits: which were seen, which were mistyped. A key
// has the same JSON type in every record type that has it.
enum Field : uint32_t {
  kPid = 1u << 0,
  kTid = 1u << 1,
  kStart = 1u << 2,
  kDuration = 1u << 3,
  kCpu = 1u << 4,
  kSamples = 1u << 5,
  kStacks = 1u << 6,
  kHangId = 1u << 7,
  kClass = 1u << 8,
  kEnd = 1u << 9,
  kBusy = 1u << 10,
  kBuckets = 1u << 11,
  kProcess = 1u << 12,
  kProcessName = 1u << 13,
  kHost = 1u << 14,
  kLabels = 1u << 15,
  kThreshold = 1u << 16,
  kHangOptional = 1u << 17,  // the hang's other optional fields (fatal, culprit, timeline, ...)
  kSlowPasses = 1u << 18,
};
// report/record_types.h's kHangFields, kLagFields and kStartupStallFields as masks: the fields
// each record type requires, and every top-level field it has (whose type is checked when
// present). Values inside them (frames, timeline entries, modules, buckets) are not checked.
constexpr uint32_t kHangRequired = kPid | kTid | kStart | kDuration | kCpu | kSamples | kStacks;
constexpr uint32_t kHangMask = kHangRequired | kHangId | kClass | kProcess | kProcessName | kHost |
                               kLabels | kThreshold | kHangOptional;
constexpr uint32_t kLagRequired = kPid | kStart | kEnd | kBusy | kBuckets;
constexpr uint32_t kLagMask = kLagRequired | kProcessName | kHost | kLabels | kSlowPasses;
constexpr uint32_t kStallRequired = kPid | kStart | kDuration;
constexpr uint32_t kStallMask = kStallRequired | kProcess | kThreshold;

bool IsType(value v, json_type want) {
  json_type type;
  return !v.type().get(type) && type == want;
}

bool IsInt64(value v) {
  int64_t n = 0;
  return !v.get_int64().get(n);
}

bool IsUnsigned64(value v) {
  uint64_t n = 0;
  return !v.get_uint64().get(n);
}

bool IsUnsigned32(value v) {
  uint64_t n = 0;
  return !v.get_uint64().get(n) && n <= UINT32_MAX;
}

// Reads one top-level field into *out (the fields `top` uses) and says which it is and whether
// its value has the field's type. Unknown keys are skipped (bit 0).
uint32_t ReadField(std::string_view key, value v, bool want_labels, TopHang* out, bool* ok) {
  if (key == "pid") return *ok = !v.get_int64().get(out->pid), kPid;
  if (key == "hang_id") return *ok = !v.get_uint64().get(out->hang_id), kHangId;
  if (key == "start_unix_ms") return *ok = !v.get_int64().get(out->start_unix_ms), kStart;
  if (key == "duration_ms") return *ok = !v.get_uint64().get(out->duration_ms), kDuration;
  if (key == "cpu_ms") return *ok = !v.get_uint64().get(out->cpu_ms), kCpu;
  if (key == "class") {
    std::string_view c;
    *ok = !v.get_string().get(c);
    out->hang_class = ClassValue(c);
    return kClass;
  }
  if (key == "fatal") return *ok = !v.get_bool().get(out->fatal), kHangOptional;
  if (key == "process") return *ok = !v.get_string().get(out->process), kProcess;
  if (key == "process_name") return *ok = !v.get_string().get(out->process_name), kProcessName;
  if (key == "host") return *ok = !v.get_string().get(out->host), kHost;
  if (key == "fingerprint") return *ok = !v.get_string().get(out->fingerprint), kHangOptional;
  if (key == "signature") return *ok = !v.get_string().get(out->signature), kHangOptional;
  if (key == "culprit") return *ok = ReadCulprit(v, out), kHangOptional;
  if (key == "cause") return *ok = ReadCause(v, out), kHangOptional;
  if (key == "labels") {
    *ok = want_labels ? ReadLabels(v, out) : IsType(v, json_type::object);
    return kLabels;
  }
  if (key == "tid") return *ok = IsInt64(v), kTid;
  if (key == "samples") return *ok = IsUnsigned32(v), kSamples;
  if (key == "stacks") return *ok = IsType(v, json_type::array), kStacks;
  if (key == "threshold_ms") return *ok = IsUnsigned32(v), kThreshold;
  if (key == "end_unix_ms") return *ok = !v.get_int64().get(out->end_unix_ms), kEnd;
  if (key == "busy_ms") return *ok = IsType(v, json_type::number), kBusy;
  if (key == "buckets") return *ok = IsType(v, json_type::array), kBuckets;
  if (key == "slow_passes") return *ok = IsType(v, json_type::object), kSlowPasses;
  if (key == "cpu_percent" || key == "sample_interval_ms" || key == "failed_samples" ||
      key == "dropped_stacks") {
    return *ok = IsUnsigned32(v), kHangOptional;
  }
  if (key == "stopped_ms") return *ok = IsUnsigned64(v), kHangOptional;
  if (key == "dominant_stack") return *ok = IsInt64(v), kHangOptional;
  if (key == "timeline_truncated") return *ok = IsType(v, json_type::boolean), kHangOptional;
  if (key == "phase") return *ok = IsType(v, json_type::string), kHangOptional;
  if (key == "timeline" || key == "modules") {
    return *ok = IsType(v, json_type::array), kHangOptional;
  }
  return *ok = true, 0;
}

}  // namespace

// One rule for every reader (report/record_types.h, docs/report-format.md "Reading rules"):
// not one complete JSON object, or a mistyped "format_version": bad; another version: counted
// as such; a type this build does not know (or not a string): unknown; a known type with a
// missing or mistyped top-level field of its own: bad. No "type" is a hang, no
// "format_version" version 1.
LineKind TopLineParser::Parse(std::string_view line, TopHang* out) {
  if (IsBlank(line)) return LineKind::kEmpty;
  *out = TopHang{};
  simdjson::ondemand::document doc;
  auto error =
      impl_->parser
          .iterate(simdjson::padded_string_view(line.data(), line.size(), line.size() + kPadding))
          .get(doc);
  if (error == simdjson::UTF8_ERROR) {
    // Raw bytes that are not UTF-8 (agents before the format's UTF-8 rule): read as U+FFFD, as
    // report/report_decode.cc does. The hang's views then point into `repaired`.
    impl_->repaired = report::ValidUtf8(line);
    const size_t size = impl_->repaired.size();
    impl_->repaired.append(kPadding, ' ');
    line = std::string_view(impl_->repaired.data(), size);
    error =
        impl_->parser
            .iterate(simdjson::padded_string_view(line.data(), line.size(), line.size() + kPadding))
            .get(doc);
  }
  if (error) return LineKind::kBad;
  object obj;
  if (doc.get_object().get(obj)) return LineKind::kBad;
  uint32_t seen = 0, mistyped = 0;
  bool has_type = false, has_version = false, bad_version = false;
  std::string_view type;
  int64_t version = 0;
  for (auto f : obj) {
    if (f.error()) return LineKind::kBad;
    field& fl = f.value_unsafe();
    std::string_view key;
    if (fl.unescaped_key().get(key)) return LineKind::kBad;
    if (key == "type") {
      has_type = true;
      // Not a string: "", a type this build does not know (as report/report_decode.cc reads it).
      if (!IsType(fl.value(), json_type::string) || fl.value().get_string().get(type)) type = "";
    } else if (key == "format_version") {
      has_version = true;
      bad_version = fl.value().get_int64().get(version) != simdjson::SUCCESS;
    } else {
      bool ok = true;
      const uint32_t bit = ReadField(key, fl.value(), impl_->want_labels, out, &ok);
      seen |= bit;
      if (!ok) mistyped |= bit;
    }
    // Any other field (stacks, timeline, modules, ...) is skipped by the next iteration.
  }
  // Complete: the iterator must have consumed the whole line (no second value after it).
  const char* at = nullptr;
  if (!doc.current_location().get(at)) return LineKind::kBad;
  if (bad_version) return LineKind::kBad;
  if (!report::IsThisVersion(has_version, version)) return LineKind::kOtherVersion;
  uint32_t required = kHangRequired, fields = kHangMask;
  switch (report::KindOfType(has_type, type)) {
    case report::RecordKind::kHang:
      break;
    case report::RecordKind::kLag:
      required = kLagRequired, fields = kLagMask;
      break;
    case report::RecordKind::kStartupStall:
      required = kStallRequired, fields = kStallMask;
      break;
    case report::RecordKind::kUnknown:
      return LineKind::kUnknownType;
  }
  if ((seen & required) != required || (mistyped & fields) != 0) return LineKind::kBad;
  if (required == kLagRequired) out->lag = true;
  if (required != kHangRequired) return LineKind::kOtherRecord;
  if (out->process_name.empty()) {
    // Older agents: the file name of the executable.
    const size_t slash = out->process.rfind('/');
    out->process_name =
        slash == std::string_view::npos ? out->process : out->process.substr(slash + 1);
  }
  return LineKind::kHang;
}

LineKind TopLineParser::ParseUnpadded(std::string_view line, TopHang* out) {
  copy_.assign(line.data(), line.size());
  copy_.append(kPadding, ' ');
  return Parse(std::string_view(copy_.data(), line.size()), out);
}

void ScanStats::Add(const ScanStats& o) {
  lines += o.lines;
  hangs += o.hangs;
  other_records += o.other_records;
  bad_lines += o.bad_lines;
  unknown_types += o.unknown_types;
  other_versions += o.other_versions;
  first_bad_offset = std::min(first_bad_offset, o.first_bad_offset);
}

void ScanTopText(std::string_view text, size_t readable_after, uint64_t file_offset,
                 TopLineParser* parser, TopSink* sink, ScanStats* stats, uint32_t file) {
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  const char* const readable_end = end + readable_after;
  TopHang hang;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* line_end = nl != nullptr ? nl : end;
    const std::string_view line(p, static_cast<size_t>(line_end - p));
    const LineKind kind = readable_end - line_end >= static_cast<ptrdiff_t>(TopLineParser::kPadding)
                              ? parser->Parse(line, &hang)
                              : parser->ParseUnpadded(line, &hang);
    if (kind != LineKind::kEmpty) ++stats->lines;
    switch (kind) {
      case LineKind::kHang:
        ++stats->hangs;
        hang.file = file;
        hang.offset = file_offset + static_cast<uint64_t>(p - text.data());
        sink->Add(hang);
        break;
      case LineKind::kOtherRecord:
        ++stats->other_records;
        if (hang.lag) sink->AddLag(hang);
        break;
      case LineKind::kUnknownType:
        ++stats->unknown_types;
        break;
      case LineKind::kOtherVersion:
        ++stats->other_versions;
        break;
      case LineKind::kBad:
        if (stats->bad_lines++ == 0) {
          stats->first_bad_offset = std::min<uint64_t>(
              stats->first_bad_offset, file_offset + static_cast<uint64_t>(p - text.data()));
        }
        break;
      case LineKind::kEmpty:
        break;
    }
    p = line_end + 1;
  }
}

namespace {

// One open file (tools/reader/input_file.h: regular files only, opened without blocking).
struct OpenFile {
  InputFile file;
  int fd = -1;
  uint64_t size = 0;
};

// Opens `path`; "" on success, else why it is skipped.
std::string Open(const std::string& path, OpenFile* f) {
  std::string error;
  if (!f->file.Open(path, &error)) return error.substr(path.size() + 2);  // without "PATH: "
  f->fd = f->file.fd();
  f->size = f->file.size();
  const InputFormat format = f->file.Sniff();
  if (format == InputFormat::kOpenHang) return "an open-hang file (hangwatch report reads it)";
  return std::string(CompressedFileError(format));
}

struct Slice {
  size_t file;
  uint64_t begin, end;  // the bytes of the file whose lines start here
};

// Reads the lines that start in [s.begin, s.end) of one file, in chunks through a buffer that
// stays in the CPU's caches (a read copies from the page cache without the page faults and
// unmapping costs of a mapping). Returns "" or the read error.
std::string ScanSlice(const OpenFile& f, const Slice& s, std::vector<char>* buf,
                      TopLineParser* parser, TopSink* sink, ScanStats* stats) {
  constexpr size_t kPad = TopLineParser::kPadding;
  // Start one byte early: the line that starts at `begin` is the one after the first newline
  // from there (or at 0).
  uint64_t off = s.begin > 0 ? s.begin - 1 : 0;  // file offset of (*buf)[0]
  size_t have = 0;
  bool skipping = s.begin > 0;
  for (;;) {
    size_t cap = buf->size() - kPad;
    while (have < cap && off + have < f.size) {
      const ssize_t n = pread(f.fd, buf->data() + have, cap - have, static_cast<off_t>(off + have));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::strerror(errno);
      if (n == 0) break;
      have += static_cast<size_t>(n);
    }
    const bool eof = off + have >= f.size || have < cap;
    char* const data = buf->data();
    size_t p = 0;
    if (skipping) {
      const void* nl = std::memchr(data, '\n', have);
      if (nl == nullptr) {  // still inside a line that started before the slice
        if (eof) return "";
        off += have;
        have = 0;
        continue;
      }
      p = static_cast<size_t>(static_cast<const char*>(nl) - data) + 1;
      skipping = false;
    }
    // p is where a line starts: at or after `end`, the rest belongs to the next slices.
    if (off + p >= s.end) return "";
    // The complete lines in [p, have): up to the last newline, or to the end of the file.
    size_t complete = have;
    if (!eof) {
      const void* last = memrchr(data + p, '\n', have - p);
      if (last == nullptr) {
        // A line longer than the buffer: keep it and make room.
        std::memmove(data, data + p, have - p);
        off += p;
        have -= p;
        if (have == cap) buf->resize(2 * cap + kPad);
        continue;
      }
      complete = static_cast<size_t>(static_cast<const char*>(last) - data) + 1;
    }
    // Lines that start at or after `end` belong to the next slice.
    bool done = eof;
    if (off + complete > s.end) {
      // The line holding the last byte of the slice ends the slice's part (limit > p above).
      const size_t limit = static_cast<size_t>(s.end - off);
      const void* nl = std::memchr(data + limit - 1, '\n', complete - (limit - 1));
      if (nl != nullptr) complete = static_cast<size_t>(static_cast<const char*>(nl) - data) + 1;
      done = true;
    }
    if (complete > p) {
      ScanTopText(std::string_view(data + p, complete - p), buf->size() - complete, off + p, parser,
                  sink, stats, static_cast<uint32_t>(s.file));
    }
    if (done) return "";
    std::memmove(data, data + complete, have - complete);
    off += complete;
    have -= complete;
  }
}

}  // namespace

std::vector<ScanStats> ScanTopFiles(const std::vector<std::string>& paths,
                                    const TopScanOptions& options,
                                    const std::function<std::unique_ptr<TopSink>()>& make_sink,
                                    std::vector<std::unique_ptr<TopSink>>* sinks) {
  std::vector<ScanStats> stats(paths.size());
  std::vector<OpenFile> files(paths.size());
  std::vector<Slice> slices;
  const uint64_t slice_bytes = std::max<size_t>(options.slice_bytes, 1);
  for (size_t i = 0; i < paths.size(); ++i) {
    stats[i].path = paths[i];
    stats[i].error = Open(paths[i], &files[i]);
    if (!stats[i].error.empty()) continue;
    stats[i].bytes = files[i].size;
    for (uint64_t b = 0; b < files[i].size; b += slice_bytes) {
      slices.push_back({i, b, std::min(files[i].size, b + slice_bytes)});
    }
  }
  std::vector<ScanStats> slice_stats(slices.size());
  std::vector<std::string> slice_errors(slices.size());
  size_t threads = options.threads > 0 ? static_cast<size_t>(options.threads)
                                       : std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<size_t>(1, std::min(threads, slices.size()));
  for (size_t t = 0; t < threads; ++t) sinks->push_back(make_sink());
  std::atomic<size_t> next{0};
  auto work = [&](size_t t) {
    TopLineParser parser(options.want_labels);
    std::vector<char> buf(options.read_bytes + TopLineParser::kPadding);
    TopSink* sink = (*sinks)[t].get();
    for (size_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < slices.size();) {
      slice_errors[k] =
          ScanSlice(files[slices[k].file], slices[k], &buf, &parser, sink, &slice_stats[k]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  if (!slices.empty()) work(0);
  for (std::thread& th : pool) th.join();
  for (size_t k = 0; k < slices.size(); ++k) {
    ScanStats& s = stats[slices[k].file];
    s.Add(slice_stats[k]);
    if (!slice_errors[k].empty() && s.error.empty()) s.error = "read: " + slice_errors[k];
  }
  return stats;
}

}  // namespace hangwatch::tools
