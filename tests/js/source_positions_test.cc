// js/source_positions.h: V8's source position table, on tables the test encodes as V8 does
// (deltas, zig-zag varints, a negative code delta for an expression position, SourcePosition's
// script offset + 1 in bits 1-30), and on malformed ones.
#include "js/source_positions.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hangwatch::js {
namespace {

void PutVarint(int64_t value, std::vector<unsigned char>* out) {
  uint64_t v = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  do {
    unsigned char byte = v & 0x7f;
    v >>= 7;
    if (v != 0) byte |= 0x80;
    out->push_back(byte);
  } while (v != 0);
}

struct Entry {
  int64_t code;
  int64_t script_offset;
  bool statement;
};

std::vector<unsigned char> Encode(const std::vector<Entry>& entries) {
  std::vector<unsigned char> out;
  int64_t code = 0, position = 0;
  for (const Entry& e : entries) {
    const int64_t raw = (e.script_offset + 1) << 1;  // not external, not inlined
    const int64_t delta = e.code - code;
    PutVarint(e.statement ? delta : -delta - 1, &out);
    PutVarint(raw - position, &out);
    code = e.code;
    position = raw;
  }
  return out;
}

TEST(SourcePositions, TheLastEntryAtOrBeforeTheOffsetGivesThePosition) {
  const auto table = Encode({{0, 15, true}, {4, 40, false}, {9, 300, true}, {200, 5000, true}});
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 0), 15);
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 3), 15);
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 4), 40);
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 150), 300);
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 100000), 5000);
}

TEST(SourcePositions, PositionsMayGoBackwards) {
  // A loop's condition after its body: a negative position delta.
  const auto table = Encode({{0, 900, true}, {10, 120, true}, {20, 950, false}});
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 12), 120);
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 25), 950);
}

TEST(SourcePositions, NoEntryBeforeTheOffsetOrAnEmptyTableGivesNone) {
  const auto table = Encode({{5, 15, true}});
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 4), -1);
  EXPECT_EQ(ScriptOffsetAt(nullptr, 0, 4), -1);
}

TEST(SourcePositions, MalformedTablesGiveNoneAndStayInBounds) {
  auto table = Encode({{0, 15, true}, {4, 40, true}});
  table.pop_back();  // the last varint cut
  EXPECT_EQ(ScriptOffsetAt(table.data(), table.size(), 10), -1);
  const std::vector<unsigned char> endless(32, 0xff);  // a varint that never ends
  EXPECT_EQ(ScriptOffsetAt(endless.data(), endless.size(), 10), -1);
  // An external position (bit 0): no script offset.
  std::vector<unsigned char> external;
  PutVarint(0, &external);
  PutVarint(7, &external);
  EXPECT_EQ(ScriptOffsetAt(external.data(), external.size(), 0), -1);
}

}  // namespace
}  // namespace hangwatch::js
