// ReadReportFile: a JSON Lines report or an open-hang file, from disk (report_reader.h). Kept
// apart from the parsers so that the fuzz target links nothing but the parsers.
#include <cstring>
#include <string_view>

#include "hang/open_hang/open_hang_file.h"
#include "tools/reader/input_file.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

bool ReadReportFile(const std::string& path, Report* out, std::string* error) {
  InputFile file;
  if (!file.Open(path, error)) return false;
  const InputFormat format = file.Sniff();
  if (format == InputFormat::kOpenHang) {
    HangRecord h;
    std::string why;
    switch (agent::ReadOpenHangFile(path, &h, &why)) {
      case agent::OpenHangReadStatus::kFound:
        out->hangs.push_back(std::move(h));
        return true;
      case agent::OpenHangReadStatus::kNoOpenHang:
        return true;
      case agent::OpenHangReadStatus::kInvalid:
        *error = path + ": malformed open-hang file: " + why;
        return false;
    }
  }
  // Rotated logs are often compressed by logrotate: say so instead of "not a JSON object".
  if (const std::string_view why = CompressedFileError(format); !why.empty()) {
    *error = path + ": " + std::string(why);
    return false;
  }
  std::string text;
  if (!file.ReadAll(&text, error)) return false;
  std::string why;
  if (!ParseJsonLines(text, out, &why)) {
    *error = path + ": malformed report: " + why;
    return false;
  }
  return true;
}

}  // namespace hangwatch::tools
