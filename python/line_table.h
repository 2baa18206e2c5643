// The line number of an instruction, from a code object's co_linetable bytes.
//
// Two formats:
//   3.10: pairs (byte-offset delta: unsigned byte, line delta: signed byte); a line delta of
//         -128 means "no line" for that range (Objects/lnotab_notes.txt of 3.10).
//   3.11 and later: the location table (Objects/locations.md): entries of one header byte
//         (bit 7 set, bits 3-6 a code, bits 0-2 the entry's length in code units minus one)
//         followed by varints; only the line delta is decoded here, columns are skipped.
// Offsets are in code units (2-byte instructions) from the start of co_code. The decoder reads
// only `table` (bounds-checked), allocates nothing, and stops at the first malformed entry; a
// line that would leave [0, INT_MAX] (a garbage table or co_firstlineno) is malformed too.
// fuzz/python_line_table_fuzzer.cc fuzzes it.
#ifndef HANGWATCH_PYTHON_LINE_TABLE_H_
#define HANGWATCH_PYTHON_LINE_TABLE_H_

#include <cstddef>
#include <cstdint>

namespace hangwatch::python {

enum class LineTableFormat : uint8_t { kPairs310, kLocations311 };

// The format of CPython 3.`minor`'s co_linetable (3.10 and later).
LineTableFormat LineTableFormatFor(int minor);

// One range of code units and its line (-1: no line, e.g. an artificial instruction).
struct LineRange {
  int64_t start = 0;  // code units, [start, end)
  int64_t end = 0;
  int line = -1;
};

// Walks the table's ranges in order. Next() returns false at the end or at a malformed entry
// (then malformed() is true).
class LineTableCursor {
 public:
  LineTableCursor(LineTableFormat format, const uint8_t* table, size_t size, int first_line)
      : format_(format), table_(table), size_(size), line_(first_line) {}
  bool Next(LineRange* out);
  bool malformed() const { return malformed_; }

 private:
  bool NextPairs(LineRange* out);
  bool NextLocation(LineRange* out);
  bool ReadVarint(uint32_t* out);
  bool ReadSignedVarint(int32_t* out);

  LineTableFormat format_;
  const uint8_t* table_;
  size_t size_;
  size_t pos_ = 0;
  bool SetLine(int64_t line, int* out);

  int64_t addr_ = 0;  // code units
  int64_t line_;
  bool malformed_ = false;
};

// The line of the instruction at `offset` (code units), or -1 when the table has none for it.
// A negative offset (a frame that has not run its first instruction) is `first_line`.
int LineForOffset(LineTableFormat format, const uint8_t* table, size_t size, int first_line,
                  int64_t offset);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_LINE_TABLE_H_
