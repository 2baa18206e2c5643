// python/line_table: the decoder against the interpreters' own answers (co_lines()) for code
// compiled by each installed CPython (dump_line_tables.py, run at test time), and on malformed
// tables.
#include "python/line_table.h"

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/python/python_interpreters.h"

namespace hangwatch::python {
namespace {

std::string RunAndRead(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

void CheckAgainstInterpreter(int minor) {
  const std::string python = testing::FindPython(minor);
  if (python.empty()) GTEST_SKIP() << "python3." << minor << " is not installed";
  const std::string text = RunAndRead(python + " " + DUMP_LINE_TABLES);
  const nlohmann::json fixture = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(fixture.is_discarded()) << text;
  ASSERT_EQ(fixture["minor"].get<int>(), minor);
  const LineTableFormat format = LineTableFormatFor(minor);
  size_t checked = 0;
  for (const nlohmann::json& code : fixture["codes"]) {
    const std::vector<uint8_t> table = FromHex(code["table"].get<std::string>());
    const int first_line = code["first_line"].get<int>();
    const std::vector<int> lines = code["lines"].get<std::vector<int>>();
    for (size_t unit = 0; unit < lines.size(); ++unit) {
      EXPECT_EQ(
          LineForOffset(format, table.data(), table.size(), first_line, static_cast<int64_t>(unit)),
          lines[unit])
          << code["name"].get<std::string>() << " unit " << unit;
      ++checked;
    }
    LineTableCursor cursor(format, table.data(), table.size(), first_line);
    LineRange r;
    while (cursor.Next(&r)) {
    }
    EXPECT_FALSE(cursor.malformed()) << code["name"].get<std::string>();
  }
  EXPECT_GT(checked, 100u);
}

TEST(LineTable, MatchesPython310) { CheckAgainstInterpreter(10); }
TEST(LineTable, MatchesPython311) { CheckAgainstInterpreter(11); }
TEST(LineTable, MatchesPython312) { CheckAgainstInterpreter(12); }
TEST(LineTable, MatchesPython313) { CheckAgainstInterpreter(13); }

TEST(LineTable, NotStartedIsTheFirstLine) {
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, nullptr, 0, 42, -1), 42);
}

TEST(LineTable, MalformedTablesEndTheWalk) {
  // A location entry without its header bit; a long-form entry cut short; an odd 3.10 range.
  const uint8_t no_header[] = {0x01, 0x02};
  const uint8_t cut_long[] = {0xf0, 0x42};
  const uint8_t odd_pairs[] = {0x03, 0x01};
  for (auto [format, table, size] :
       {std::tuple{LineTableFormat::kLocations311, no_header, sizeof(no_header)},
        std::tuple{LineTableFormat::kLocations311, cut_long, sizeof(cut_long)},
        std::tuple{LineTableFormat::kPairs310, odd_pairs, sizeof(odd_pairs)}}) {
    LineTableCursor cursor(format, table, size, 1);
    LineRange r;
    EXPECT_FALSE(cursor.Next(&r));
    EXPECT_TRUE(cursor.malformed());
    EXPECT_EQ(LineForOffset(format, table, size, 1, 0), -1);
  }
}

TEST(LineTable, LinesOutOfRangeEndTheWalk) {
  // Found by fuzz/python_line_table_fuzzer.cc: deltas that take the line below 0 (from 1: -5;
  // 3.10: -2), or past INT_MAX (a long-form delta of 2^31 - 1 from 100, which overflowed an
  // int before), are garbage, not lines.
  const uint8_t below_zero[] = {0xe8, 0x0b};
  const uint8_t past_int_max[] = {0xf0, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0x00, 0x00, 0x00};
  const uint8_t pairs_below_zero[] = {0x02, 0xfe};
  for (auto [format, table, size, first] :
       {std::tuple{LineTableFormat::kLocations311, below_zero, sizeof(below_zero), 1},
        std::tuple{LineTableFormat::kLocations311, past_int_max, sizeof(past_int_max), 100},
        std::tuple{LineTableFormat::kPairs310, pairs_below_zero, sizeof(pairs_below_zero), 1}}) {
    LineTableCursor cursor(format, table, size, first);
    LineRange r;
    EXPECT_FALSE(cursor.Next(&r)) << r.line;
    EXPECT_TRUE(cursor.malformed());
    EXPECT_EQ(LineForOffset(format, table, size, first, 0), -1);
  }
  // The same deltas from a line they fit: ranges with lines.
  LineTableCursor fits(LineTableFormat::kLocations311, below_zero, sizeof(below_zero), 7);
  LineRange r;
  ASSERT_TRUE(fits.Next(&r));
  EXPECT_EQ(r.line, 2);
}

TEST(LineTable, EveryByteStringIsSafe) {
  // Every table of up to 3 bytes: the walk ends, in bounds (ASan would say otherwise).
  for (uint32_t v = 0; v < (1u << 24); v += 97) {
    const uint8_t table[3] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                              static_cast<uint8_t>(v >> 16)};
    for (LineTableFormat f : {LineTableFormat::kPairs310, LineTableFormat::kLocations311}) {
      LineTableCursor cursor(f, table, sizeof(table), 1);
      LineRange r;
      int n = 0;
      while (cursor.Next(&r)) ASSERT_LT(++n, 4);
    }
  }
}

}  // namespace
}  // namespace hangwatch::python
