#include "integrations/preload/open_hang_path.h"

#include <string.h>

namespace hangwatch::preload {

bool FormatOpenHangPath(const char* dir, long pid, char* out, size_t cap) {
  static constexpr char kName[] = "/open-hang.";
  const size_t dir_len = strlen(dir);
  char digits[24];
  size_t n = 0;
  unsigned long v = pid < 0 ? 0 : static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (dir_len + sizeof kName - 1 + n + 1 > cap) return false;
  memcpy(out, dir, dir_len);
  memcpy(out + dir_len, kName, sizeof kName - 1);
  size_t at = dir_len + sizeof kName - 1;
  while (n > 0) out[at++] = digits[--n];
  out[at] = '\0';
  return true;
}

}  // namespace hangwatch::preload
