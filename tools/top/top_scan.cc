// TopLineParser (report/record_scan.h's scanner, the top-level fields `top` uses read from what
// it kept) and ScanTopFiles (pread, slices, threads).
#include "tools/top/top_scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <thread>

#include "report/context_scan.h"
#include "report/context_text.h"
#include "report/names.h"
#include "report/record_scan.h"
#include "report/record_types.h"
#include "report/utf8.h"
#include "tools/reader/input_file.h"

namespace hangwatch::tools {

struct TopLineParser::Impl {
  bool want_labels = false;
  report::ScannedLine scanned;
  // The text of string values that had escapes or bytes that are not UTF-8 (the hang's views
  // then point here); reused line after line.
  std::deque<std::string> texts;
  size_t used = 0;

  std::string_view Text(std::string_view raw) {
    if (used == texts.size()) texts.emplace_back();
    return report::StringValue(raw, &texts[used++]);
  }
  // A raw key (escapes not decoded) as text.
  std::string_view KeyText(std::string_view key) {
    if (key.find('\\') == std::string_view::npos && report::IsValidUtf8(key)) return key;
    const std::string quoted = "\"" + std::string(key) + "\"";
    if (used == texts.size()) texts.emplace_back();
    return report::StringValue(quoted, &texts[used++]);  // decoded into texts, not into quoted
  }
};

TopLineParser::TopLineParser(bool want_labels) : impl_(std::make_unique<Impl>()) {
  impl_->want_labels = want_labels;
}
TopLineParser::~TopLineParser() = default;

namespace {

int ClassValue(std::string_view s) {
  if (s == report::kClassBusy) return 1;
  if (s == report::kClassBlocked) return 2;
  if (s == report::kClassMixed) return 3;
  return 0;
}

consteval size_t TopKey(std::string_view name) { return report::KeyIndex(name); }

template <typename T, typename Parse>
void ReadNumber(std::string_view raw, T* out, Parse parse) {
  if (!raw.empty()) parse(raw, out);
}

}  // namespace

// One rule for every reader (report/record_scan.h, docs/report-format.md "Reading rules"): the
// scanner says what the line is and has checked the types and ranges of its top-level fields;
// this reads the ones `top` uses.
LineKind TopLineParser::Parse(std::string_view line, TopHang* out) {
  report::ScannedLine& s = impl_->scanned;
  switch (report::ScanLine(line, &s)) {
    case report::LineKind::kEmpty:
      return LineKind::kEmpty;
    case report::LineKind::kBad:
      return LineKind::kBad;
    case report::LineKind::kOtherVersion:
      return LineKind::kOtherVersion;
    case report::LineKind::kUnknownType:
      return LineKind::kUnknownType;
    case report::LineKind::kStartupStall:
      return LineKind::kOtherRecord;
    case report::LineKind::kHang:
    case report::LineKind::kLag:
      break;
  }
  *out = TopHang{};
  impl_->used = 0;
  ReadNumber(s[TopKey("pid")], &out->pid, report::ParseInt64);
  ReadNumber(s[TopKey("start_unix_ms")], &out->start_unix_ms, report::ParseInt64);
  out->process_name = impl_->Text(s[TopKey("process_name")]);
  out->host = impl_->Text(s[TopKey("host")]);
  report::ForEachMember(s[TopKey("thread")], [&](std::string_view key, std::string_view value) {
    if (key == "role") out->role = impl_->Text(value);
  });
  out->role = report::RoleOrMain(out->role);
  if (impl_->want_labels) {
    report::ForEachMember(s[TopKey("labels")], [&](std::string_view key, std::string_view value) {
      out->labels.emplace_back(impl_->KeyText(key), impl_->Text(value));
    });
  }
  if (s.kind == report::LineKind::kLag) {
    out->lag = true;
    ReadNumber(s[TopKey("end_unix_ms")], &out->end_unix_ms, report::ParseInt64);
    std::string_view max_ms = s[TopKey("max_ms")];
    report::ForEachMember(s[TopKey("delay")], [&](std::string_view key, std::string_view value) {
      if (key == "max_ms") max_ms = value;
      if (key == "queued_passes") ReadNumber(value, &out->queued_passes, report::ParseUint64);
    });
    // A number (the scanner checked its type): from_chars, no copy per line.
    if (std::from_chars(max_ms.data(), max_ms.data() + max_ms.size(), out->delay_max_ms).ec !=
        std::errc()) {
      out->delay_max_ms = 0;
    }
    return LineKind::kOtherRecord;
  }
  ReadNumber(s[TopKey("hang_id")], &out->hang_id, report::ParseUint64);
  ReadNumber(s[TopKey("duration_ms")], &out->duration_ms, report::ParseUint64);
  ReadNumber(s[TopKey("cpu_ms")], &out->cpu_ms, report::ParseUint64);
  out->hang_class = ClassValue(impl_->Text(s[TopKey("class")]));
  out->fatal = s[TopKey("fatal")] == "true";
  out->process = impl_->Text(s[TopKey("process")]);
  out->fingerprint = impl_->Text(s[TopKey("fingerprint")]);
  out->signature = impl_->Text(s[TopKey("signature")]);
  const std::string_view culprit = s[TopKey("culprit")];
  out->has_culprit = !culprit.empty() && culprit != "null";
  report::ForEachMember(culprit, [&](std::string_view key, std::string_view value) {
    if (key == "symbol") {
      out->culprit_symbol = impl_->Text(value);
    } else if (key == "kind") {
      if (!ParseFrameLanguage(impl_->Text(value), &out->culprit_language)) {
        out->culprit_language = FrameLanguage::kNative;
      }
    } else if (key == "module") {
      out->culprit_module = impl_->Text(value);
    } else if (key == "file") {
      out->culprit_file = impl_->Text(value);
    } else if (key == "line") {
      report::ParseInt64(value, &out->culprit_line);
    } else if (key == "offset") {
      report::ParseHexString(impl_->Text(value), &out->culprit_offset);
    }
  });
  // The cause's kind; inside the cause nothing else is checked (the reading rules' rule 5): a
  // kind that is not a string reads as none.
  report::ForEachMember(s[TopKey("cause")], [&](std::string_view key, std::string_view value) {
    if (key == "kind") out->cause_kind = impl_->Text(value);
  });
  if (const std::string_view context = s[TopKey("context")]; !context.empty()) {
    Context c;
    report::ScanContext(context, &c);  // the scanner has checked it
    if (impl_->used == impl_->texts.size()) impl_->texts.emplace_back();
    std::string& key = impl_->texts[impl_->used++];
    key = report::ContextKey(c);
    out->context_key = key;
  }
  if (const std::string_view perceived = s[TopKey("perceived")]; !perceived.empty()) {
    out->perceived = perceived == "true" ? 1 : 0;
  }
  if (const std::string_view input = s[TopKey("input")]; !input.empty()) {
    Input in;
    report::ScanInput(input, &in);  // the scanner has checked it
    if (in.oldest_known) out->input_oldest_ms = static_cast<int64_t>(in.oldest_ms);
  }
  // Older agents wrote no process_name: the file name of the executable.
  out->process_name = report::ProcessName(out->process_name, out->process);
  return LineKind::kHang;
}

// The scanner needs no padding after the line; the name stays for the callers that copy.
LineKind TopLineParser::ParseUnpadded(std::string_view line, TopHang* out) {
  return Parse(line, out);
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
