// UnitLines: one compilation unit's files and line rows for the index (IndexUnit::files and
// ::rows): decoded by ReadLineTable (dwarf_image_lines.h), or by libdw when there is no plain
// .debug_line (old-style .zdebug_line, which only libdw inflates).
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_LINES_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_LINES_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "symbols/dwarf_image_lines.h"
#include "symbols/index/internal/symbol_index_writer.h"

namespace hangwatch::symbols::internal {

class UnitLines {
 public:
  // `table` and `file_index`: the thread's buffers, reused from unit to unit. `only`: when not
  // null, the sorted addresses that matter; only the rows answering them are kept.
  UnitLines(const LineSections* sections, LineTable* table,
            absl::flat_hash_map<const char*, uint32_t>* file_index,
            const std::vector<uint64_t>* only, IndexUnit* out);

  // Fills out->files and out->rows for the unit of `cudie` (DWARF `version`).
  void Read(Dwarf_Die* cudie, int version);

 private:
  void ReadFiles(Dwarf_Die* cudie, int version, const char* comp_dir);
  void AddLineTable(const LineTable& table, int version, const char* comp_dir);
  void AddRow(const IndexUnit::Row& row);
  void DropRepeatedRows();
  void KeepAnsweringRows();
  uint32_t FileOf(Dwarf_Line* line);
  void ReadLines(Dwarf_Die* cudie);

  const LineSections* sections_;
  LineTable* table_;
  absl::flat_hash_map<const char*, uint32_t>& file_index_;
  const std::vector<uint64_t>* only_;
  IndexUnit* out_;
  const char* comp_dir_ = nullptr;
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_LINES_H_
