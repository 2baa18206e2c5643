// ReadLineTable: one compilation unit's DWARF line table (.debug_line, versions 2 to 5), decoded
// straight from the mapped section bytes.
//
// Why not libdw's dwarf_getsrclines / dwarf_getsrcfiles: libdw 0.188 decodes the whole program
// into one malloc'd record per row, qsorts them, and dwarf_getsrcfiles does all of that too just
// to get the file names. On the 92 MB benchmark binary that was 70 % of a cold 50-address
// lookup (10-15 ms per unit) and the biggest single cost of a whole index build. This reader
// decodes rows into one flat vector with no per-row allocation.
//
// The answers are libdw's, which the index builder was written against: file names are the
// directory and the name joined with one '/' (absolute names kept), DWARF 4 file 0 is a "???"
// placeholder, rows are stably sorted by address with an end of sequence before a row at the
// same address.
//
// Every read is bounds-checked against the section: a truncated or hostile table stops
// decoding (rows decoded so far are kept) or yields no table, never reads out of bounds or
// loops; work is linear in the table's size.
#ifndef HANGWATCH_SYMBOLS_DWARF_IMAGE_LINES_H_
#define HANGWATCH_SYMBOLS_DWARF_IMAGE_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::symbols {

// The sections a line table refers to (empty views when absent).
struct LineSections {
  std::string_view debug_line;
  std::string_view debug_str;       // DW_FORM_strp names
  std::string_view debug_line_str;  // DW_FORM_line_strp names (DWARF 5)
};

struct LineRow {
  uint64_t addr;
  uint32_t file;  // index into LineTable::files (may be out of range: no file)
  uint32_t line;
  uint32_t column;
  bool end_sequence;
};

struct LineTable {
  int version = 0;
  // File index -> name, directory joined ("???" for the placeholder file 0 before DWARF 5).
  std::vector<std::string> files;
  // Sorted by address (stable; an end of sequence first among rows at one address).
  std::vector<LineRow> rows;
  // Reader's buffer, kept with the table for reuse.
  std::vector<LineRow> sort_scratch;
};

// Decodes the line table at `offset` of sections.debug_line. `comp_dir` (may be null) is
// directory 0 before DWARF 5. Returns false when the header is unusable (no files, no rows).
// With `only` (sorted addresses), `rows` receives just the rows that answer them (for each
// address, the last row at or below it in sorted order), found while decoding: no row vector,
// no sort. `out` may be reused across calls (its buffers are kept).
bool ReadLineTable(const LineSections& sections, uint64_t offset, const char* comp_dir,
                   const std::vector<uint64_t>* only, LineTable* out);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DWARF_IMAGE_LINES_H_
