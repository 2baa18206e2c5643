// libFuzzer target: the gate's reader (tools/gate/gate_reader.h), which scans each report line
// (report/record_scan.h)
// without decoding it and decodes only the longest hang of each signature. The input is a
// report file: each line goes through the scanner alone, then the file through
// ReadReportsForGate, whose tallies must stay parallel to the hangs.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "report/record_scan.h"
#include "tools/gate/gate_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::tools;  // NOLINT(build/namespaces)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at < size;) {
    size_t nl = text.find('\n', at);
    if (nl == text.npos) nl = size;
    hangwatch::report::ScannedLine scanned;
    hangwatch::report::ScanLine(text.substr(at, nl - at), &scanned);
    // The views point into the line.
    for (std::string_view v : scanned.values) {
      if (!v.empty() && (v.data() < text.data() + at || v.data() + v.size() > text.data() + nl)) {
        __builtin_trap();
      }
    }
    at = nl + 1;
  }
  const std::string path = hangwatch::fuzz::ScratchDir() + "/report.jsonl";
  hangwatch::fuzz::WriteFile(path, text);
  Report report;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  if (ReadReportsForGate({path}, &report, &tallies, &lag_records, &error)) {
    if (tallies.size() != report.hangs.size()) __builtin_trap();
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    __builtin_trap();  // one line saying why
  }
  return 0;
}
