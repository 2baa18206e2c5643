#include "ruby/line_table.h"

#include <bit>
#include <cstring>

namespace hangwatch::ruby {

int ImmediateRank(uint64_t word, int pos) {
  const int slot = pos % 9;  // 9 ranks of 7 bits in each word
  return static_cast<int>((word >> (7 * slot)) & 0x7f);
}

int BlockRank(const unsigned char* block, int pos) {
  uint32_t rank = 0;
  uint64_t part_ranks = 0;
  std::memcpy(&rank, block, sizeof(rank));
  std::memcpy(&part_ranks, block + 8, sizeof(part_ranks));
  const int bit = (pos - kImmediatePositions) % kBlockPositions;
  const int part = bit / 64;
  uint64_t bits = 0;
  std::memcpy(&bits, block + 16 + 8 * part, sizeof(bits));
  // Part 0 starts at the block's rank; part i > 0 at the 9-bit count stored for it.
  const int before_part =
      part == 0 ? 0 : static_cast<int>((part_ranks >> (9 * (part - 1))) & 0x1ff);
  // The entries starting in this part at or before the position: its bits up to `bit % 64`.
  const int in_part = std::popcount(bits << (63 - bit % 64));
  return static_cast<int>(rank) + before_part + in_part;
}

int SuccIndexRank(const python::MemoryReader& memory, uint64_t table, uint32_t iseq_size,
                  int64_t pos) {
  if (table == 0 || pos < 0 || pos >= static_cast<int64_t>(iseq_size)) return -1;
  const int p = static_cast<int>(pos);
  if (p < kImmediatePositions) {
    uint64_t word = 0;
    if (!memory.ReadWord(table + static_cast<uint64_t>(p / 9) * 8, &word)) return -1;
    return ImmediateRank(word, p);
  }
  unsigned char block[kBlockBytes];
  const uint64_t at =
      table + kImmediateBytes +
      static_cast<uint64_t>((p - kImmediatePositions) / kBlockPositions) * kBlockBytes;
  if (!memory.Read(at, block, sizeof(block))) return -1;
  return BlockRank(block, p);
}

size_t PositionsEntry(const uint32_t* positions, size_t count, int64_t pos) {
  size_t lo = 0, hi = count;  // the first position > pos, by bisection
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(positions[mid]) <= pos) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? 0 : lo - 1;
}

}  // namespace hangwatch::ruby
