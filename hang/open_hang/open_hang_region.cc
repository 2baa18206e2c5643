#include "hang/open_hang/open_hang_region.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "hang/open_hang/open_hang_layout.h"

namespace hangwatch::agent::open_hang_region {

using open_hang_layout::Checksum;  // the file's one checksum

void WriteCopy(unsigned char* region, uint64_t generation, const void* payload, uint32_t n) {
  unsigned char* p = region + (generation % 2) * CopyBytes(n);
  std::memset(p, 0, kHead);
  std::memcpy(p, &generation, sizeof(generation));
  std::memcpy(p + 8, &n, sizeof(n));
  std::memcpy(p + kHead, payload, n);
  const uint64_t sum = Checksum(p, kHead + n);
  std::memcpy(p + kHead + n, &sum, sizeof(sum));
}

bool ReadNewest(int fd, uint64_t offset, void* out, uint32_t n) {
  // Read back at Start(), off the capture path: the buffer may be allocated.
  std::vector<unsigned char> buf(CopyBytes(n));
  bool found = false;
  uint64_t best = 0;
  for (int copy = 0; copy < 2; ++copy) {
    const off_t at = static_cast<off_t>(offset + static_cast<uint64_t>(copy) * buf.size());
    if (pread(fd, buf.data(), buf.size(), at) != static_cast<ssize_t>(buf.size())) continue;
    uint64_t generation = 0, sum = 0;
    uint32_t size = 0;
    std::memcpy(&generation, buf.data(), sizeof(generation));
    std::memcpy(&size, buf.data() + 8, sizeof(size));
    if (size != n) continue;
    std::memcpy(&sum, buf.data() + kHead + n, sizeof(sum));
    if (sum != Checksum(buf.data(), kHead + n)) continue;
    if (found && generation <= best) continue;
    std::memcpy(out, buf.data() + kHead, n);
    best = generation;
    found = true;
  }
  return found;
}

}  // namespace hangwatch::agent::open_hang_region
