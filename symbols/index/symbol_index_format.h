// The on-disk layout of a symbol index (one file per build-id, memory-mapped by SymbolIndex).
//
// Everything is little-endian, naturally aligned, and reached through the section table in the
// header, so a reader maps the file and casts. Readers validate the header and every index they
// follow (the file may be truncated or hostile); see SymbolIndex.
//
// What it holds (the idea of Breakpad symbol files and LLVM's GSYM, shaped for
// llvm-symbolizer-identical answers, and compact: fixed-width records and repeated C++ names
// made version 3 a quarter of the DWARF's size):
//   strings   paths, name tokens and the build-id, each NUL-terminated and preceded by its
//             uint32 length; a string offset points at its first byte
//   files     string offset per source file (absolute path as llvm-symbolizer prints it)
//   names     function names (already demangled), each a run of tokens: the name cut after
//             every '<', '>', '(', ')' and ',' (C++ names repeat the same template arguments
//             endlessly). Name i is the uleb token ids in name_data from names[i] to
//             names[i + 1] (or the section's end); tokens holds each token's string offset.
//   cu_ranges non-overlapping address ranges -> compilation unit (from .debug_aranges or the
//             unit's own ranges, overlaps resolved as LLVM's DWARFDebugAranges does)
//   cus       per unit: its base address and slices of the tables below
//   cu_files  per unit: unit-local file index -> global file (for line rows and call_file)
//   map       per unit: address ranges -> innermost subprogram / inlined subroutine node,
//             varint-coded in blocks (MapBlock)
//   nodes     the inline tree (name, parent link, call file/line/column): fixed-size Node
//             records, so that a lookup reaches each frame of a chain in one step
//   line_blocks + line_data: the unit's line table rows, varint-coded in blocks of up to
//             kLineBlockRows rows, each block starting with an absolute address
//   symbols   the ELF symbol table (LLVM's selection rules), names demangled (or mangled, to be
//             demangled at lookup)
//   chunks    the byte sections (map, node, line and name data) of a cached index are stored
//             as independent zstd frames of kChunkBytes each (those varint streams still
//             shrink 4x: an index of a C++ program is then ~4 % of its DWARF instead of 10 %);
//             the reader inflates a chunk the first time a lookup touches it
#ifndef HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_FORMAT_H_
#define HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_FORMAT_H_

#include <cstdint>

namespace hangwatch::symbols::index_format {

inline constexpr char kMagic[8] = {'H', 'W', 'S', 'Y', 'M', 'I', 'D', 'X'};
inline constexpr uint32_t kVersion = 5;
inline constexpr uint32_t kNone = 0xffffffffu;
inline constexpr uint32_t kLineBlockRows = 16;
inline constexpr uint32_t kMapBlockEntries = 16;
// Names are cut short here: a hostile file could make one of a million long tokens.
inline constexpr uint32_t kMaxNameBytes = 1 << 16;
inline constexpr uint32_t kChunkBytes = 1 << 16;

enum Section : uint32_t {
  kStrings,     // char
  kFiles,       // uint32_t string offset
  kCuRanges,    // CuRange
  kCus,         // CuInfo
  kCuFiles,     // uint32_t global file index (kNone when unknown)
  kMapBlocks,   // MapBlock
  kMapData,     // uint8_t
  kNodeData,    // uint8_t: Node records
  kLineBlocks,  // LineBlock
  kLineData,    // uint8_t
  kSymbols,     // SymbolEntry
  kTokens,      // uint32_t string offset
  kNames,       // uint32_t offset into kNameData
  kNameData,    // uint8_t
  kChunks,      // Chunk
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
  uint32_t node_count;
  uint32_t reserved;
  // A section with chunks (only kMapData, kNodeData, kLineData, kNameData may have them) is
  // stored compressed: its count is the inflated size, its offset is unused, and
  // chunk[begin, end) of kChunks hold it in order.
  SectionRef sections[kNumSections];
  struct {
    uint32_t begin, end;
  } chunks[kNumSections];
};

// kChunkBytes of a section (fewer for its last chunk): a zstd frame of `size` bytes at `offset`
// in the file.
struct Chunk {
  uint64_t offset;
  uint32_t size;
  uint32_t pad;
};

struct CuRange {
  uint64_t lo, hi;  // [lo, hi)
  uint32_t cu;
  uint32_t pad;
};

struct CuInfo {
  uint64_t base;  // map and line addresses are relative to this
  uint32_t map_block_begin, map_block_end;
  uint32_t map_data_end;  // end of the unit's bytes in kMapData
  uint32_t block_begin, block_end;
  uint32_t files_begin, files_count;
  uint32_t line_data_end;  // end of the unit's bytes in kLineData
};

// Up to kMapBlockEntries map entries, sorted by `lo`, their bytes running to the next block's
// (or the unit's end). Each entry is
//   sleb(lo - the previous entry's end (lo + size); 0 for the first)
//   uleb(size)                             the entry covers [lo, lo + size) from CuInfo::base
//   sleb(node - the previous entry's node; 0 for the first)
struct MapBlock {
  uint32_t lo;    // of the first entry
  uint32_t node;  // of the first entry
  uint32_t data;  // offset into kMapData
};

// A node of the inline tree (stored as bytes of kNodeData, node i at i * sizeof(Node)).
struct Node {
  uint32_t name;         // name index, kNone when the DIE has no name
  uint32_t parent;       // enclosing subroutine in the inline chain, kNone at a subprogram
  uint32_t call_line;    // where this node was inlined into its parent
  uint16_t call_file;    // unit-local file index; kNoFile when unknown or not representable
  uint16_t call_column;  // clamped to 65535
};
inline constexpr uint16_t kNoFile = 0xffff;

// Up to kLineBlockRows rows, their bytes running to the next block's (or the unit's end). The
// first row's address is `addr` (from CuInfo::base); each row is then
//   uleb(address delta from the previous row; 0 for the first)
//   uleb(file)   0 = end of a sequence (no line information from here), else unit file + 1
//   sleb(line delta from the previous row), uleb(column)   (absent for end rows)
struct LineBlock {
  uint32_t addr;
  uint32_t data;  // offset into kLineData
};

struct SymbolEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t mangled;    // name index; kNone when `demangled` is set
  uint32_t demangled;  // name index; kNone: demangle `mangled` when needed
  uint32_t file;       // local symbols: the preceding STT_FILE symbol (string offset), or kNone
  uint32_t pad;
};

}  // namespace hangwatch::symbols::index_format

#endif  // HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_FORMAT_H_
