// Reading hang reports for `hangwatch top`: the top-level fields of each hang line, read with
// the report scanner (report/record_scan.h: the stacks, timeline and modules are skipped, not
// decoded), from files read in chunks (never whole) in parallel: across files, and within a
// large file in slices cut at newlines.
//
// Each line is classified by the scanner, by the format's reading rules (docs/report-format.md),
// as every reader does: its top-level structure (a complete JSON object, nothing after it),
// "type", "format_version", and the top-level fields of its record type (required ones present,
// known ones of their type and range); the values it skips (stacks, timeline, modules, the
// cause) are not validated further. Bad lines, records of unknown types and of another
// format version are counted in the file's ScanStats and skipped; a file that cannot be read,
// or is gzip or zstd compressed, is counted and skipped as a whole.
#ifndef HANGWATCH_TOOLS_TOP_SCAN_H_
#define HANGWATCH_TOOLS_TOP_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangwatch/hang_record.h"

namespace hangwatch::tools {

// The fields of one hang line that `top` uses. The string_views point into the parser's buffers
// (or the line) and are valid until the next line is parsed.
struct TopHang {
  int64_t pid = 0;
  uint64_t hang_id = 0;
  int64_t start_unix_ms = 0;
  uint64_t duration_ms = 0;
  uint64_t cpu_ms = 0;
  int hang_class = 0;  // HangClass's value: 0 unknown, 1 busy, 2 blocked, 3 mixed
  bool fatal = false;
  std::string_view process;       // executable path
  std::string_view process_name;  // "" when absent (older agents)
  std::string_view host;          // "" when absent
  std::string_view fingerprint;
  std::string_view signature;
  bool has_culprit = false;  // false: null or absent
  std::string_view culprit_symbol, culprit_module, culprit_file;
  uint64_t culprit_offset = 0;
  int64_t culprit_line = 0;
  // "kind": "python" / "js" / "ruby": an interpreter's function (symbol its name); kNative else.
  FrameLanguage culprit_language = FrameLanguage::kNative;
  // A lag record's longest queued + running time (its "delay"'s max_ms, else its own max_ms:
  // every pass at its duration) and its passes that had waited.
  double delay_max_ms = 0;
  uint64_t queued_passes = 0;
  // The cause's kind ("lock", "io", ...): top's --by cause, `hangwatch exporter`'s label; ""
  // when null or absent.
  std::string_view cause_kind;
  // The context's key (report/context_text.h's ContextKey: the innermost label, else the
  // source, else the trigger's kind): top's --by context, the exporter's `context` label; ""
  // for a hang without context.
  std::string_view context_key;
  // "perceived": 1 true, 0 false, -1 absent (unknown).
  int perceived = -1;
  // "input": {"oldest_ms"}: how long the oldest input waiting during the hang had waited; -1
  // when absent (no display, nothing waiting, or no server time to compare).
  int64_t input_oldest_ms = -1;
  // The thread role of the hang or lag record ("thread": {"role"}): "main" when absent.
  std::string_view role = "main";
  // The labels, when the parser was asked for them (label filters), in file order.
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  // Where the line is, for reading it again (top_symbolize.h): the index of its file in
  // ScanTopFiles' paths, and the byte offset of its first character. Set by the scanner.
  uint32_t file = 0;
  uint64_t offset = 0;
  // A lag record (LineKind::kOtherRecord): pid, host, process_name, labels, start_unix_ms and
  // this are filled, for the watched time of the hang rate.
  bool lag = false;
  int64_t end_unix_ms = 0;
};

enum class LineKind {
  kHang,          // a hang record: *out is filled
  kOtherRecord,   // a record of a known type `top` does not count (lag, startup_stall)
  kBad,           // not a complete JSON object, or a record with missing or mistyped fields
  kUnknownType,   // a JSON object of a record type this version does not know
  kOtherVersion,  // a record of another format_version
  kEmpty,         // whitespace only
};

// Parses lines one at a time; one per thread (it owns the buffers the hang's views point into).
class TopLineParser {
 public:
  explicit TopLineParser(bool want_labels);
  ~TopLineParser();
  TopLineParser(const TopLineParser&) = delete;
  TopLineParser& operator=(const TopLineParser&) = delete;

  // `line` is without its newline.
  LineKind Parse(std::string_view line, TopHang* out);
  // The same (the scanner reads nothing past the line; callers of a parser that needed padding
  // after the line called this for lines without it).
  LineKind ParseUnpadded(std::string_view line, TopHang* out);

  // Bytes the file reader keeps free after its buffer (no longer needed by the parser).
  static constexpr size_t kPadding = 64;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What reading one file gave.
struct ScanStats {
  std::string path;
  uint64_t bytes = 0;
  uint64_t lines = 0;  // non-empty lines
  uint64_t hangs = 0;  // hang records read (before filters)
  uint64_t other_records = 0;
  uint64_t bad_lines = 0;
  uint64_t unknown_types = 0;
  uint64_t other_versions = 0;
  uint64_t first_bad_offset = UINT64_MAX;  // byte offset of the first bad line, if any
  std::string error;  // the file was skipped as a whole: why ("gzip-compressed", ...)

  void Add(const ScanStats& o);
};

// Receives the hang lines of one slice of a file, on the thread that read them.
class TopSink {
 public:
  virtual ~TopSink() = default;
  virtual void Add(const TopHang& hang) = 0;
  // A lag record (TopHang::lag): the time it covers was watched.
  virtual void AddLag(const TopHang& /*lag*/) {}
};

struct TopScanOptions {
  int threads = 0;                 // 0: one per CPU
  size_t slice_bytes = 32u << 20;  // a file larger than this is read in slices of this size
  size_t read_bytes = 1u << 20;    // each thread reads through a buffer of this size (it grows
                                   // for longer lines)
  bool want_labels = false;        // fill TopHang::labels
};

// Reads `paths`, handing every hang line to the sink of the thread that read it: `make_sink` is
// called once per thread before reading starts, and the sinks are returned in *sinks (to be
// merged by the caller). Returns one ScanStats per path, in order.
std::vector<ScanStats> ScanTopFiles(const std::vector<std::string>& paths,
                                    const TopScanOptions& options,
                                    const std::function<std::unique_ptr<TopSink>()>& make_sink,
                                    std::vector<std::unique_ptr<TopSink>>* sinks);

// Reads the complete lines of one buffer of JSON Lines (the scanner's core; tests call it):
// `readable_after` bytes after the end of `text` may be read (lines that end closer than
// kPadding to that limit are copied first). A last line without its newline is read too.
// `file_offset`: where `text` starts in its file, `file`: the file's index (TopHang::file,
// TopHang::offset, ScanStats::first_bad_offset).
void ScanTopText(std::string_view text, size_t readable_after, uint64_t file_offset,
                 TopLineParser* parser, TopSink* sink, ScanStats* stats, uint32_t file = 0);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_SCAN_H_
