// ReadReportFile: a JSON Lines report or an open-hang file, from disk (report_reader.h). Kept
// apart from the parsers so that the fuzz target links nothing but the parsers.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/open_hang_file.h"
#include "tools/report_reader.h"

namespace hangwatch::tools {

bool ReadReportFile(const std::string& path, Report* out, std::string* error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  char magic[8] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() == sizeof magic && std::memcmp(magic, "HWOPENHG", 8) == 0) {
    in.close();
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
  if (in.gcount() >= 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b) {
    *error = path + ": gzip-compressed (decompress it first: zcat FILE > FILE.jsonl)";
    return false;
  }
  in.clear();
  in.seekg(0);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    *error = path + ": read error";
    return false;
  }
  const std::string text = buf.str();
  std::string why;
  if (!ParseJsonLines(text, out, &why)) {
    *error = path + ": malformed report: " + why;
    return false;
  }
  return true;
}

}  // namespace hangwatch::tools
