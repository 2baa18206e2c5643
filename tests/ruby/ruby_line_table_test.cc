// ruby/line_table.h: the succinct index table's ranks against tables built here from a list of
// entry start positions (the format of Ruby's iseq.c, VM_INSN_INFO_TABLE_IMPL 2), every
// position checked against a plain count; the positions array's bisection.
#include "ruby/line_table.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "python/process_memory_reader.h"

namespace hangwatch::ruby {
namespace {

// The table for entries starting at `starts` (ascending) in an iseq of `size` positions.
std::vector<uint64_t> BuildTable(const std::vector<int>& starts, int size) {
  const int immediate_words = (size < kImmediatePositions ? size + 8 : kImmediatePositions) / 9;
  const int blocks =
      size < kImmediatePositions ? 0 : (size - kImmediatePositions + 511) / kBlockPositions;
  std::vector<uint64_t> words(kImmediatePositions / 9 + blocks * kBlockBytes / 8, 0);
  size_t r = 0;
  for (int w = 0; w < immediate_words; ++w) {
    for (int i = 0; i < 9; ++i) {
      if (r < starts.size() && starts[r] == w * 9 + i) ++r;
      words[w] |= static_cast<uint64_t>(r) << (7 * i);
    }
  }
  for (int b = 0; b < blocks; ++b) {
    uint64_t* block = &words[kImmediatePositions / 9 + b * kBlockBytes / 8];
    block[0] = r;  // the rank (4 bytes) and padding
    int in_block = 0;
    for (int part = 0; part < 8; ++part) {
      if (part > 0) block[1] |= static_cast<uint64_t>(in_block) << (9 * (part - 1));
      for (int bit = 0; bit < 64; ++bit) {
        const int pos = kImmediatePositions + b * kBlockPositions + part * 64 + bit;
        if (r < starts.size() && starts[r] == pos) {
          block[2 + part] |= uint64_t{1} << bit;
          ++r;
          ++in_block;
        }
      }
    }
  }
  return words;
}

int Count(const std::vector<int>& starts, int pos) {
  int n = 0;
  for (int s : starts) n += s <= pos ? 1 : 0;
  return n;
}

TEST(RubyLineTable, RanksMatchACountAtEveryPosition) {
  const python::ProcessMemoryReader self(getpid());
  for (const auto& [starts, size] : std::vector<std::pair<std::vector<int>, int>>{
           {{0, 2, 8}, 9},
           {{0, 3, 9, 17, 40, 53}, 54},
           {{0, 2, 8, 53, 54, 60, 117, 118, 500, 565, 566, 1100, 1500}, 1600}}) {
    const std::vector<uint64_t> table = BuildTable(starts, size);
    const auto at = reinterpret_cast<uint64_t>(table.data());
    for (int pos = 0; pos < size; ++pos) {
      EXPECT_EQ(SuccIndexRank(self, at, static_cast<uint32_t>(size), pos), Count(starts, pos))
          << "size " << size << " pos " << pos;
    }
    EXPECT_EQ(SuccIndexRank(self, at, static_cast<uint32_t>(size), size), -1);
    EXPECT_EQ(SuccIndexRank(self, at, static_cast<uint32_t>(size), -1), -1);
  }
  EXPECT_EQ(SuccIndexRank(self, 0, 10, 1), -1);
}

TEST(RubyLineTable, PositionsBisection) {
  const uint32_t positions[] = {0, 4, 9, 30};
  EXPECT_EQ(PositionsEntry(positions, 4, 0), 0u);
  EXPECT_EQ(PositionsEntry(positions, 4, 3), 0u);
  EXPECT_EQ(PositionsEntry(positions, 4, 4), 1u);
  EXPECT_EQ(PositionsEntry(positions, 4, 29), 2u);
  EXPECT_EQ(PositionsEntry(positions, 4, 1000), 3u);
  EXPECT_EQ(PositionsEntry(positions, 0, 5), 0u);
}

}  // namespace
}  // namespace hangwatch::ruby
