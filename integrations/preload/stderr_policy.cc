#include "integrations/preload/stderr_policy.h"

#include <charconv>
#include <cstdint>

namespace hangwatch::preload {

bool IsNamedFile(const StderrFile& file, std::string_view dev_ino) {
  const size_t colon = dev_ino.find(':');
  if (colon == std::string_view::npos) return false;
  uint64_t dev = 0, ino = 0;
  const char* end = dev_ino.data() + dev_ino.size();
  const auto d = std::from_chars(dev_ino.data(), dev_ino.data() + colon, dev);
  const auto i = std::from_chars(dev_ino.data() + colon + 1, end, ino);
  return d.ec == std::errc() && d.ptr == dev_ino.data() + colon && colon > 0 &&
         i.ec == std::errc() && i.ptr == end && colon + 1 < dev_ino.size() &&
         dev == static_cast<uint64_t>(file.dev) && ino == static_cast<uint64_t>(file.ino);
}

bool MayPrintOn(const StderrFile& file, const char* const* handed_over, int n) {
  if (!file.open) return false;
  if (S_ISFIFO(file.mode) || (S_ISCHR(file.mode) && file.is_terminal)) return true;
  for (int k = 0; k < n; ++k) {
    if (handed_over[k] != nullptr && IsNamedFile(file, handed_over[k])) return true;
  }
  return false;
}

}  // namespace hangwatch::preload
