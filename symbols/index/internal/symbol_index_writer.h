// SymbolIndexWriter: lays out an index image (symbol_index_format.h) from what the builder
// read: compilation units in order (files, inline-tree nodes, the address -> node map, line
// rows), then the ELF symbols. Names, files and tokens are deduplicated across units; byte
// sections are varint-coded and, optionally, zstd-compressed in chunks.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_SYMBOL_INDEX_WRITER_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_SYMBOL_INDEX_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/address_die_map.h"
#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols {

// What one compilation unit contributes to the index, in unit-local numbering.
struct IndexUnit {
  // Empties it for the next unit, keeping the buffers.
  void Clear() {
    read = libdw = false;
    files.clear();
    names.clear();
    nodes.clear();
    map.clear();
    rows.clear();
  }

  bool read = false;
  bool libdw = false;                     // the DIEs were read with libdw
  std::vector<std::string> files;         // unit-local file index -> path ("" = invalid index)
  std::vector<const std::string*> names;  // unit-local names (demangled, owned by the reader)
  struct LocalNode {
    uint32_t name, parent, call_file, call_line, call_column;
  };
  std::vector<LocalNode> nodes;
  std::vector<AddressDieMap::Range> map;  // sorted by lo
  struct Row {
    uint64_t addr;
    uint32_t file;  // 0 = end of sequence, else local file + 1
    uint32_t line, column;
  };
  std::vector<Row> rows;  // sorted by addr, one per address
};

class SymbolIndexWriter {
 public:
  // `units`: how many compilation units the DWARF has (every one is added, read or not).
  explicit SymbolIndexWriter(size_t units);
  ~SymbolIndexWriter();
  SymbolIndexWriter(const SymbolIndexWriter&) = delete;
  SymbolIndexWriter& operator=(const SymbolIndexWriter&) = delete;

  // Adds unit `u`; units come in order, each once (one that was not read as an empty unit).
  // A unit's names must stay valid (at the same address) until Finish.
  void AddUnit(uint32_t u, const IndexUnit& unit);
  // Reserves room for `left` more units like the `merged` read ones so far: one move of each
  // table instead of a doubling series (every move faults in fresh pages).
  void GrowFor(size_t merged, size_t left);

  // After the units: a symbol-table entry, sorted by address. `name` is stored as mangled
  // (demangled at lookup) or as the name to print.
  void AddSymbol(uint64_t addr, uint64_t size, std::string_view name, bool mangled,
                 std::string_view file);

  // The image. `cu_ranges`: address -> unit; `has_dwarf`: the file had DWARF units; `compress`:
  // byte sections as zstd chunks. Errors: tables too large for the format's 32-bit offsets.
  absl::StatusOr<std::string> Finish(std::string_view build_id,
                                     const std::vector<index_format::CuRange>& cu_ranges,
                                     bool has_dwarf, bool compress);

 private:
  struct Tables;
  std::unique_ptr<Tables> t_;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_SYMBOL_INDEX_WRITER_H_
