// UnitLines: a unit's files and line rows, as LLVM answers them.
#include "symbols/index/internal/unit_lines.h"

#include <dwarf.h>

#include "symbols/index/internal/dwarf_paths.h"
#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols::internal {

using index_format::kNone;

UnitLines::UnitLines(const LineSections* sections, LineTable* table,
                     absl::flat_hash_map<const char*, uint32_t>* file_index,
                     const std::vector<uint64_t>* only, IndexUnit* out)
    : sections_(sections), table_(table), file_index_(*file_index), only_(only), out_(out) {
  file_index_.clear();
}

void UnitLines::Read(Dwarf_Die* cudie, int version) {
  const char* comp_dir = nullptr;
  Dwarf_Attribute attr;
  if (dwarf_attr(cudie, DW_AT_comp_dir, &attr) != nullptr) comp_dir = dwarf_formstring(&attr);
  Dwarf_Word stmt_list = 0;
  if (sections_->debug_line.empty()) {
    // No plain .debug_line (e.g. old-style .zdebug_line, which only libdw inflates).
    ReadFiles(cudie, version, comp_dir);
    ReadLines(cudie);
  } else if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) != nullptr &&
             dwarf_formudata(&attr, &stmt_list) == 0) {
    if (ReadLineTable(*sections_, stmt_list, comp_dir, only_, table_)) {
      AddLineTable(*table_, version, comp_dir);
    }
  }
}

void UnitLines::ReadFiles(Dwarf_Die* cudie, int version, const char* comp_dir) {
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) return;
  for (size_t i = 0; i < nfiles; ++i) {
    const char* name = dwarf_filesrc(files, i, nullptr, nullptr);
    // Before DWARF 5, file 0 does not exist (libdw puts a placeholder there).
    const bool valid = name != nullptr && (version >= 5 || i > 0);
    file_index_[name] = static_cast<uint32_t>(out_->files.size());
    out_->files.push_back(valid ? AbsoluteFile(name, comp_dir) : std::string());
  }
  comp_dir_ = comp_dir;
}

// The unit's files and rows from our own line-table reader (dwarf_image_lines.h), with the
// same results as ReadFiles + ReadLines.
void UnitLines::AddLineTable(const LineTable& table, int version, const char* comp_dir) {
  for (size_t i = 0; i < table.files.size(); ++i) {
    // Before DWARF 5, file 0 does not exist.
    out_->files.push_back(version >= 5 || i > 0 ? AbsoluteFile(table.files[i].c_str(), comp_dir)
                                                : std::string());
  }
  uint32_t no_file = kNone;  // one shared entry for rows naming a file that does not exist
  auto& rows = out_->rows;
  // With room to spare: the buffer is recycled for the next unit (see IndexUnit::Clear).
  if (rows.capacity() < table.rows.size()) rows.reserve(table.rows.size() * 3 / 2);
  for (const LineRow& l : table.rows) {
    IndexUnit::Row row{l.addr, 0, 0, 0};
    if (!l.end_sequence) {
      uint32_t file = l.file;
      if (file >= table.files.size()) {
        if (no_file == kNone) {
          no_file = static_cast<uint32_t>(out_->files.size());
          out_->files.emplace_back();
        }
        file = no_file;
      }
      row.file = file + 1;
      row.line = l.line;
      row.column = l.column;
    }
    AddRow(row);
  }
  DropRepeatedRows();
}

void UnitLines::AddRow(const IndexUnit::Row& row) {
  // Rows sharing an address: the last one answers (LLVM takes the last row at or below
  // the address; an end-of-sequence sorts before a new sequence's first row).
  auto& rows = out_->rows;
  if (!rows.empty() && rows.back().addr == row.addr) {
    rows.back() = row;
  } else if (rows.empty() || rows.back().addr < row.addr) {
    rows.push_back(row);
  }  // else: overlapping sequences (discarded code): keep the first
}

// Rows that repeat the previous answer add nothing; on the cold path, only the rows that
// answer one of the addresses matter (the index is asked nothing else).
void UnitLines::DropRepeatedRows() {
  if (only_ != nullptr) {
    KeepAnsweringRows();
    return;
  }
  auto& rows = out_->rows;
  size_t kept = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (kept > 0) {
      const auto& p = rows[kept - 1];
      const auto& r = rows[i];
      if (p.file == r.file && p.line == r.line && p.column == r.column) continue;
    }
    rows[kept++] = rows[i];
  }
  rows.resize(kept);
}

// The last row at or below each address of `only_` (both sorted), nothing else.
void UnitLines::KeepAnsweringRows() {
  auto& rows = out_->rows;
  size_t kept = 0, r = 0;
  for (uint64_t a : *only_) {
    while (r < rows.size() && rows[r].addr <= a) ++r;
    if (r == 0) continue;
    if (kept == 0 || rows[kept - 1].addr != rows[r - 1].addr) rows[kept++] = rows[r - 1];
  }
  rows.resize(kept);
}

uint32_t UnitLines::FileOf(Dwarf_Line* line) {
  const char* name = dwarf_linesrc(line, nullptr, nullptr);
  auto it = file_index_.find(name);
  if (it != file_index_.end()) return it->second;
  const auto idx = static_cast<uint32_t>(out_->files.size());
  file_index_[name] = idx;
  out_->files.push_back(name == nullptr ? std::string() : AbsoluteFile(name, comp_dir_));
  return idx;
}

void UnitLines::ReadLines(Dwarf_Die* cudie) {
  Dwarf_Lines* lines = nullptr;
  size_t n = 0;
  if (dwarf_getsrclines(cudie, &lines, &n) != 0) return;
  auto& rows = out_->rows;
  rows.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Dwarf_Line* l = dwarf_onesrcline(lines, i);
    Dwarf_Addr addr;
    if (l == nullptr || dwarf_lineaddr(l, &addr) != 0) continue;
    bool end = false;
    dwarf_lineendsequence(l, &end);
    IndexUnit::Row row{addr, 0, 0, 0};
    if (!end) {
      int line = 0, col = 0;
      dwarf_lineno(l, &line);
      dwarf_linecol(l, &col);
      row.file = FileOf(l) + 1;
      row.line = static_cast<uint32_t>(line);
      row.column = static_cast<uint32_t>(col);
    }
    AddRow(row);
  }
  DropRepeatedRows();
}

}  // namespace hangwatch::symbols::internal
