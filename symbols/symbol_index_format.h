// The on-disk layout of a symbol index (one file per build-id, memory-mapped by SymbolIndex).
//
// Everything is little-endian, naturally aligned, and reached through the section table in the
// header, so a reader maps the file and casts. Readers validate the header and every index they
// follow (the file may be truncated or hostile); see SymbolIndex.
//
// What it holds (the idea of Breakpad symbol files and LLVM's GSYM, shaped for
// llvm-symbolizer-identical answers):
//   strings   names and paths (function names already demangled), each NUL-terminated and
//             preceded by its uint32 length; a string offset points at its first byte
//   files     string offset per source file (absolute path as llvm-symbolizer prints it)
//   cu_ranges non-overlapping address ranges -> compilation unit (from .debug_aranges or the
//             unit's own ranges, overlaps resolved as LLVM's DWARFDebugAranges does)
//   cus       per unit: its base address and slices of the tables below
//   cu_files  per unit: unit-local file index -> global file (for line rows and call_file)
//   map       per unit: address ranges -> innermost subprogram / inlined subroutine node
//   nodes     the inline tree: name, parent link, call file/line/column
//   line_blocks + line_data: the unit's line table rows, varint-coded in blocks of up to
//             kLineBlockRows rows, each block starting with an absolute address
//   symbols   the ELF symbol table (LLVM's selection rules), names mangled and demangled
#ifndef HANGWATCH_SYMBOLS_SYMBOL_INDEX_FORMAT_H_
#define HANGWATCH_SYMBOLS_SYMBOL_INDEX_FORMAT_H_

#include <cstdint>

namespace hangwatch::symbols::index_format {

inline constexpr char kMagic[8] = {'H', 'W', 'S', 'Y', 'M', 'I', 'D', 'X'};
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kNone = 0xffffffffu;
inline constexpr uint32_t kLineBlockRows = 16;

enum Section : uint32_t {
  kStrings,     // char
  kFiles,       // uint32_t string offset
  kCuRanges,    // CuRange
  kCus,         // CuInfo
  kCuFiles,     // uint32_t global file index (kNone when unknown)
  kMap,         // MapEntry
  kNodes,       // Node
  kLineBlocks,  // LineBlock
  kLineData,    // uint8_t
  kSymbols,     // SymbolEntry
  kNumSections,
};

struct SectionRef {
  uint64_t offset = 0;  // from the start of the file, 8-byte aligned
  uint64_t count = 0;   // elements, not bytes
};

// Header flags.
inline constexpr uint32_t kHasDwarf = 1;  // built from DWARF (not only a symbol table)

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t file_size;
  uint32_t build_id;  // string offset of the lowercase hex build-id ("" when none)
  uint32_t flags;
  SectionRef sections[kNumSections];
};

struct CuRange {
  uint64_t lo, hi;  // [lo, hi)
  uint32_t cu;
  uint32_t pad;
};

struct CuInfo {
  uint64_t base;  // map and line addresses are relative to this
  uint32_t map_begin, map_end;
  uint32_t block_begin, block_end;
  uint32_t files_begin, files_count;
  uint32_t line_data_end;  // end of the unit's bytes in kLineData
  uint32_t pad;
};

struct MapEntry {
  uint32_t lo;    // relative to CuInfo::base
  uint32_t size;  // [lo, lo + size)
  uint32_t node;
};

struct Node {
  uint32_t name;         // string offset, kNone when the DIE has no name
  uint32_t parent;       // enclosing subroutine in the inline chain, kNone at a subprogram
  uint32_t call_line;    // call site (in the parent)
  uint16_t call_file;    // unit-local file index; kNoFile when not representable
  uint16_t call_column;  // clamped to 65535
};
inline constexpr uint16_t kNoFile = 0xffff;

// Rows of one block: the first row's address is `addr`; each row is then
//   uleb(address delta from the previous row; 0 for the first)
//   uleb(file)   0 = end of a sequence (no line information from here), else unit file + 1
//   sleb(line delta from the previous row), uleb(column)   (absent for end rows)
struct LineBlock {
  uint64_t addr;
  uint32_t data;  // offset into kLineData
  uint32_t rows;
};

struct SymbolEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t mangled;    // string offsets
  uint32_t demangled;  // kNone: demangle `mangled` when needed
  uint32_t file;       // for local symbols, the preceding STT_FILE symbol's name, else kNone
  uint32_t pad;
};

}  // namespace hangwatch::symbols::index_format

#endif  // HANGWATCH_SYMBOLS_SYMBOL_INDEX_FORMAT_H_
