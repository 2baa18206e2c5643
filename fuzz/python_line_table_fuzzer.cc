// libFuzzer target: the CPython line-table decoders (python/line_table.h) on arbitrary bytes.
// Input: one byte choosing the format (bit 0: 3.10's pairs, else 3.11+'s location table), four
// bytes of co_firstlineno (little-endian int32, any value: it is read from the target), then
// the table. Checks what every reader of the table relies on: ranges come in order, each
// non-empty and right after the one before, no more of them than the table has bytes, and
// LineForOffset agrees with the ranges. Seeded with the real tables of every installed CPython
// (tests/python/dump_line_tables.py) by the test that runs it (tests/symbols/run_fuzzers.sh).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "python/line_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::python;  // NOLINT(build/namespaces)
  if (size < 5) return 0;
  const LineTableFormat format =
      (data[0] & 1) != 0 ? LineTableFormat::kPairs310 : LineTableFormat::kLocations311;
  int32_t first_line = 0;
  std::memcpy(&first_line, data + 1, sizeof(first_line));
  const uint8_t* table = data + 5;
  const size_t table_size = size - 5;

  LineTableCursor cursor(format, table, table_size, first_line);
  LineRange r;
  int64_t end = 0;
  size_t ranges = 0;
  int64_t probe = -1;  // an offset inside the middle range, and its line
  int probe_line = -1;
  while (cursor.Next(&r)) {
    // Each range is at least one code unit, starts where the last ended, and takes at least one
    // byte of the table (3.10: two).
    if (r.start != end || r.end <= r.start || ++ranges > table_size) abort();
    if (r.line < -1) abort();
    end = r.end;
    if (ranges == 1 || ranges % 7 == 0) {
      probe = r.start + (r.end - r.start) / 2;
      probe_line = r.line;
    }
  }
  if (cursor.Next(&r)) abort();  // the end stays the end
  if (probe >= 0 && LineForOffset(format, table, table_size, first_line, probe) != probe_line) {
    abort();
  }
  if (LineForOffset(format, table, table_size, first_line, end) != -1) abort();
  if (LineForOffset(format, table, table_size, first_line, -1) != first_line) abort();
  return 0;
}
