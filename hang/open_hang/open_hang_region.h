// A region of the open-hang file that holds one fixed-size struct (the cause's, the context's)
// in two copies, each with a generation and a checksum, written alternately as the live headers
// are: a write torn by the process dying leaves the other copy whole. The reader takes the
// newest whole copy whose size is this build's.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_REGION_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_REGION_H_

#include <cstddef>
#include <cstdint>

namespace hangwatch::agent::open_hang_region {

// One copy: generation, the payload's size, the payload, a checksum of all before it.
inline constexpr size_t kHead = 16;
constexpr size_t CopyBytes(size_t payload) {
  return (kHead + payload + sizeof(uint64_t) + 7) & ~size_t{7};
}

// Writes the n bytes at `payload` into the copy `generation` selects, in the region at `region`
// (mapped, 2 * CopyBytes(n) bytes).
void WriteCopy(unsigned char* region, uint64_t generation, const void* payload, uint32_t n);

// The payload of the newest whole copy of the region at `offset` of `fd` (n bytes) into `out`.
// False (out untouched) when neither copy is whole or their size is not n.
bool ReadNewest(int fd, uint64_t offset, void* out, uint32_t n);

}  // namespace hangwatch::agent::open_hang_region

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_REGION_H_
