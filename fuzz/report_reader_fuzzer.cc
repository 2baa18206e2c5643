// libFuzzer target for the report reader: any bytes, as a JSON Lines report or as one line,
// must parse or be rejected with an error - never crash, hang or read out of bounds. An object
// library (hangwatch_fuzz_report_reader): report_reader_fuzzer in a fuzz tree, and in every build
// tests/tools/report_reader_fuzz_test, which calls it on the seed corpus and deterministic
// mutations of it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/reader/report_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hangwatch::tools::Report report;
  std::string error;
  const bool ok = hangwatch::tools::ParseJsonLines(text, &report, &error);
  if (!ok && error.empty()) __builtin_trap();  // a rejection always says why
  for (const auto& h : report.hangs) {
    // Invariants the formatters rely on.
    if (h.dominant_stack >= static_cast<int>(h.stacks.size())) __builtin_trap();
    for (const auto& e : h.timeline) {
      if (e.stack >= static_cast<int>(h.stacks.size())) __builtin_trap();
    }
  }
  hangwatch::HangRecord one;
  (void)hangwatch::tools::ParseHangLine(text.substr(0, text.find('\n')), &one, &error);
  return 0;
}
