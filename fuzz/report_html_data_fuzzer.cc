// libFuzzer target: the data of the HTML page (tools/report/formats/report_html_data.h), built from
// whatever the report reader accepts: every string of a hostile report must come out as JSON that
// is safe inside a <script> element.
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/reader/report_reader.h"
#include "tools/report/formats/report_html_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::tools;  // NOLINT(build/namespaces)
  Report report;
  std::string error;
  if (!ParseJsonLines(std::string_view(reinterpret_cast<const char*>(data), size), &report,
                      &error)) {
    return 0;
  }
  const HtmlReportData page = MakeHtmlReportData(report, "fuzz </script>");
  if (page.data.find('<') != std::string::npos) __builtin_trap();
  for (char c : page.details) {
    const bool base64 = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=' || c == '\n';
    if (!base64) __builtin_trap();
  }
  return 0;
}
