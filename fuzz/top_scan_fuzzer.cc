// libFuzzer target: the scanner of `hangwatch top` (tools/top/top_scan.h, report/record_scan.h), on
// report files from any host of a fleet. The input is a JSON Lines file: scanned whole (the
// core the file reader uses, reading up to the end of the buffer, which then holds no padding),
// again with padding after it, and each line parsed alone with and without labels.
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/top/top_scan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::tools;  // NOLINT(build/namespaces)
  struct CountingSink : TopSink {
    void Add(const TopHang& h) override {
      if (h.hang_class < 0 || h.hang_class > 3) __builtin_trap();
      ++hangs;
    }
    uint64_t hangs = 0;
  } sink;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  TopLineParser with_labels(true), without_labels(false);
  ScanStats stats;
  ScanTopText(text, 0, 0, &with_labels, &sink, &stats);
  if (stats.hangs != sink.hangs || stats.bytes > size) __builtin_trap();
  // Again with the padding a read buffer has after its end, then each line alone.
  std::string padded(text);
  padded.append(TopLineParser::kPadding, '\0');
  ScanStats padded_stats;
  // (The same kind of parser: without labels, a mistyped "labels" is skipped, not a bad line.)
  ScanTopText(std::string_view(padded).substr(0, size), TopLineParser::kPadding, 0, &with_labels,
              &sink, &padded_stats);
  if (padded_stats.hangs != stats.hangs || padded_stats.bad_lines != stats.bad_lines) {
    __builtin_trap();  // the padding changes how a line is read, never what it says
  }
  for (size_t at = 0; at < size;) {
    size_t nl = text.find('\n', at);
    if (nl == text.npos) nl = size;
    TopHang hang;
    const std::string_view line = text.substr(at, nl - at);
    (void)without_labels.ParseUnpadded(line, &hang);
    (void)with_labels.Parse(std::string_view(padded).substr(at, nl - at), &hang);
    at = nl + 1;
  }
  return 0;
}
