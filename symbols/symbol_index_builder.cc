// BuildSymbolIndex: DWARF (libdw) + ELF symbols (libelf) -> index image.
//
// The rules reproduce llvm-symbolizer's (LLVM 14 DWARFContext / SymbolizableObjectFile) so that
// answers are identical: which unit covers an address (aranges, else the unit's ranges, overlaps
// to the lowest unit), the innermost subroutine DIE (the "address -> DIE" map LLVM builds by
// inserting each subprogram / inlined subroutine range over its parents'), names (linkage name
// through abstract_origin / specification, else DW_AT_name, demangled), file paths (include
// directory and compilation directory joined as LLVM does), line rows (the last row at or below
// the address in its sequence), and the symbol table (LLVM's filter and tie-breaking).
#include "symbols/symbol_index_builder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/address_die_map.h"
#include "symbols/demangle.h"
#include "symbols/dwarf_die_reader.h"
#include "symbols/dwarf_image.h"
#include "symbols/dwarf_image_lines.h"
#include "symbols/elf_file.h"
#include "symbols/symbol_index_format.h"

namespace hangwatch::symbols {

using namespace index_format;  // NOLINT(build/namespaces)

namespace {

// Hostile DWARF can nest DIEs arbitrarily deep; real code stays far below this.
constexpr int kMaxDieDepth = 512;

// ---------------------------------------------------------------- paths, as LLVM joins them

bool IsAbsolute(std::string_view p) { return !p.empty() && p[0] == '/'; }

// llvm::sys::path::append for POSIX paths: one separator between components.
void AppendPath(std::string* path, std::string_view component) {
  if (component.empty()) return;
  const bool path_has_sep = !path->empty() && path->back() == '/';
  if (path_has_sep) {
    size_t skip = component.find_first_not_of('/');
    if (skip == std::string_view::npos) return;
    path->append(component.substr(skip));
    return;
  }
  if (!path->empty() && component[0] != '/') path->push_back('/');
  path->append(component);
}

// libdw joins a file's directory and name; a relative result is relative to the compilation
// directory, which LLVM prepends.
std::string AbsoluteFile(const char* name, const char* comp_dir) {
  if (name == nullptr) return {};
  if (IsAbsolute(name) || comp_dir == nullptr) return name;
  std::string out;
  AppendPath(&out, comp_dir);
  AppendPath(&out, name);
  return out;
}

// ---------------------------------------------------------------- one compilation unit

struct UnitResult {
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
  std::vector<const std::string*> names;  // unit-local names (demangled, owned by NameCache)
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

// Demangling is the most expensive step per name: remember results per thread.
// Keyed by the string's address: names come from .debug_str, which the linker deduplicates,
// so equal names mostly share one address within a libdw handle.
class NameCache {
 public:
  struct Entry {
    std::string demangled;
    // Its index among the names of unit `unit` (a per-thread unit number), so that a node
    // finds its unit-local name index without another lookup.
    uint32_t unit = 0;
    uint32_t local = 0;
  };

  // Abstract origin DIE offset -> its name (per thread: offsets are per libdw handle); null
  // when the origin has no name.
  absl::flat_hash_map<Dwarf_Off, Entry*> by_origin;

  // The entry of a name (null for null); stable for the cache's lifetime (units keep pointers
  // to the demangled strings, not copies).
  Entry* Get(const char* mangled) {
    if (mangled == nullptr) return nullptr;
    auto [it, inserted] = cache_.try_emplace(mangled);
    if (inserted) it->second.demangled = Demangle(mangled);
    return &it->second;
  }

 private:
  absl::node_hash_map<const char*, Entry> cache_;
};

// What a worker thread keeps from one unit to the next: its name cache, and buffers whose
// capacity is reused (fresh memory for every unit cost a tenth of a build in page faults).
struct ThreadState {
  NameCache names;
  LineTable table;
  AddressDieMap die_map;
  DwarfUnitDies dies;
  absl::flat_hash_map<const char*, uint32_t> file_index;
  uint32_t unit = 0;  // numbers this thread's units (and retries) for NameCache::Entry::unit
};

class UnitReader {
 public:
  // `only`: when not null, the sorted addresses that matter; subprograms that cover none of
  // them are skipped (the cold path reads a few functions, not the whole unit).
  // `dies`: the sections for our own DIE reader; null to read DIEs with libdw only.
  UnitReader(ThreadState* thread, const LineSections* lines, UnitResult* out,
             const std::vector<uint64_t>* only, const DieSections* dies)
      : names_(&thread->names),
        lines_(lines),
        table_(&thread->table),
        out_(out),
        file_index_(thread->file_index),
        unit_(thread->unit),
        die_map_(thread->die_map),
        only_(only),
        die_sections_(dies),
        fast_(thread->dies) {
    if (dies != nullptr && !dies->info.empty() && !dies->abbrev.empty()) dies_ = &fast_;
    file_index_.clear();
    ++unit_;
    die_map_.Clear();
  }

  void Read(Dwarf_Die* cudie, int version) {
    out_->read = true;
    const char* comp_dir = nullptr;
    Dwarf_Attribute attr;
    if (dwarf_attr(cudie, DW_AT_comp_dir, &attr) != nullptr) comp_dir = dwarf_formstring(&attr);
    Dwarf_Word stmt_list = 0;
    if (lines_->debug_line.empty()) {
      // No plain .debug_line (e.g. old-style .zdebug_line, which only libdw inflates).
      ReadFiles(cudie, version, comp_dir);
      ReadLines(cudie);
    } else if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) != nullptr &&
               dwarf_formudata(&attr, &stmt_list) == 0) {
      if (ReadLineTable(*lines_, stmt_list, comp_dir, only_, table_)) {
        AddLineTable(*table_, version, comp_dir);
      }
    }
    // Split DWARF: the DIEs live in the .dwo unit when libdw found it; lines stay here.
    Dwarf_Die subdie;
    uint8_t unit_type = 0;
    Dwarf_Die* tree = cudie;
    if (cudie->cu != nullptr &&
        dwarf_cu_info(cudie->cu, nullptr, &unit_type, nullptr, &subdie, nullptr, nullptr,
                      nullptr) == 0 &&
        unit_type == DW_UT_skeleton && subdie.addr != nullptr) {
      tree = &subdie;
    }
    // Our own DIE reader first (dwarf_die_reader.h); libdw for what it leaves to libdw, from
    // a clean slate.
    if (tree != cudie || dies_ == nullptr || !FastRead(cudie)) {
      die_map_.Clear();
      ++unit_;  // the names found so far are forgotten with out_->names
      out_->names.clear();
      out_->nodes.clear();
      out_->libdw = true;
      Walk(tree, nullptr, 0);
    }
    die_map_.Finish(&out_->map);
  }

 private:
  void ReadFiles(Dwarf_Die* cudie, int version, const char* comp_dir) {
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
  // same results as ReadFiles + ReadLines below.
  void AddLineTable(const LineTable& table, int version, const char* comp_dir) {
    for (size_t i = 0; i < table.files.size(); ++i) {
      // Before DWARF 5, file 0 does not exist.
      out_->files.push_back(version >= 5 || i > 0 ? AbsoluteFile(table.files[i].c_str(), comp_dir)
                                                  : std::string());
    }
    uint32_t no_file = kNone;  // one shared entry for rows naming a file that does not exist
    auto& rows = out_->rows;
    // With room to spare: the buffer is recycled for the next unit (see UnitResult::Clear).
    if (rows.capacity() < table.rows.size()) rows.reserve(table.rows.size() * 3 / 2);
    for (const LineRow& l : table.rows) {
      UnitResult::Row row{l.addr, 0, 0, 0};
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

  void AddRow(const UnitResult::Row& row) {
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
  void DropRepeatedRows() {
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
  void KeepAnsweringRows() {
    auto& rows = out_->rows;
    size_t kept = 0, r = 0;
    for (uint64_t a : *only_) {
      while (r < rows.size() && rows[r].addr <= a) ++r;
      if (r == 0) continue;
      if (kept == 0 || rows[kept - 1].addr != rows[r - 1].addr) rows[kept++] = rows[r - 1];
    }
    rows.resize(kept);
  }

  uint32_t FileOf(Dwarf_Line* line) {
    const char* name = dwarf_linesrc(line, nullptr, nullptr);
    auto it = file_index_.find(name);
    if (it != file_index_.end()) return it->second;
    const auto idx = static_cast<uint32_t>(out_->files.size());
    file_index_[name] = idx;
    out_->files.push_back(name == nullptr ? std::string() : AbsoluteFile(name, comp_dir_));
    return idx;
  }

  void ReadLines(Dwarf_Die* cudie) {
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
      UnitResult::Row row{addr, 0, 0, 0};
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

  const char* Name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
      if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
        if (const char* s = dwarf_formstring(&attr)) return s;
      }
    }
    return nullptr;
  }

  static uint32_t Clamp(Dwarf_Word v) {
    return v > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(v);
  }

  // The attributes a node needs, in one pass over the DIE (libdw rescans the abbreviation for
  // every dwarf_attr call).
  struct NodeAttrs {
    Dwarf_Attribute origin, low_pc, high_pc;
    bool has_origin = false;
    bool has_name = false;  // any name attribute on the DIE itself
    bool has_low_pc = false, has_high_pc = false, has_ranges = false;
    Dwarf_Word call_file = 0, call_line = 0, call_column = 0;
  };
  static int ScanAttr(Dwarf_Attribute* attr, void* arg) {
    auto* a = static_cast<NodeAttrs*>(arg);
    switch (dwarf_whatattr(attr)) {
      case DW_AT_low_pc:
        a->low_pc = *attr;
        a->has_low_pc = true;
        break;
      case DW_AT_high_pc:
        a->high_pc = *attr;
        a->has_high_pc = true;
        break;
      case DW_AT_ranges:
        a->has_ranges = true;
        break;
      case DW_AT_abstract_origin:
        a->origin = *attr;
        a->has_origin = true;
        break;
      case DW_AT_linkage_name:
      case DW_AT_MIPS_linkage_name:
      case DW_AT_name:
        a->has_name = true;
        break;
      case DW_AT_call_file:
        dwarf_formudata(attr, &a->call_file);
        break;
      case DW_AT_call_line:
        dwarf_formudata(attr, &a->call_line);
        break;
      case DW_AT_call_column:
        dwarf_formudata(attr, &a->call_column);
        break;
      default:
        break;
    }
    return DWARF_CB_OK;
  }

  struct Pending {
    Dwarf_Die die;
    uint32_t node;
    Pending* parent;  // enclosing subroutine in the inline chain; null for subprograms
    NodeAttrs attrs;
  };

  // The name of a node. Inlined and out-of-line instances name nothing themselves and point at
  // their abstract origin: its name is computed once per origin.
  NameCache::Entry* NodeName(Pending* p) {
    Dwarf_Die* die = &p->die;
    NodeAttrs& attrs = p->attrs;
    Dwarf_Die origin;
    if (!attrs.has_origin || attrs.has_name ||
        dwarf_formref_die(&attrs.origin, &origin) == nullptr) {
      return names_->Get(Name(die));
    }
    auto [it, inserted] = names_->by_origin.try_emplace(dwarf_dieoffset(&origin), nullptr);
    if (inserted) it->second = names_->Get(Name(die));
    return it->second;
  }

  // The node of a subroutine, created when a range or a child's range first needs it
  // (P: Pending or FastPending).
  template <typename P>
  uint32_t Materialize(P* p) {
    if (p->node != kNone) return p->node;
    const uint32_t parent = p->parent != nullptr ? Materialize(p->parent) : kNone;
    UnitResult::LocalNode node{kNone, parent, 0, 0, 0};
    const auto& attrs = p->attrs;
    if (NameCache::Entry* name = NodeName(p)) {
      if (name->unit != unit_) {  // first use in this unit
        name->unit = unit_;
        name->local = static_cast<uint32_t>(out_->names.size());
        out_->names.push_back(&name->demangled);
      }
      node.name = name->local;
    }
    node.call_file = Clamp(attrs.call_file);
    node.call_line = Clamp(attrs.call_line);
    node.call_column = Clamp(attrs.call_column);
    p->node = static_cast<uint32_t>(out_->nodes.size());
    out_->nodes.push_back(node);
    return p->node;
  }

  // Subtrees that can hold subprograms or inlined subroutines with code. Types (classes,
  // structs, unions, enums...) only declare member functions: GCC and Clang put the definitions
  // (DW_AT_specification) at namespace or unit level, so type subtrees, the bulk of C++ DWARF,
  // are skipped.
  static bool MayHoldCode(int tag) {
    switch (tag) {
      case DW_TAG_namespace:
      case DW_TAG_lexical_block:
      case DW_TAG_module:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
      case DW_TAG_partial_unit:
      case DW_TAG_compile_unit:
      case DW_TAG_skeleton_unit:
        return true;
      default:
        return false;
    }
  }

  // The DIE's address ranges, from the attributes of one scan: low_pc + high_pc as libdw's
  // dwarf_highpc reads them, else DW_AT_ranges through dwarf_ranges. A DIE without any of them
  // on itself has no code (declarations, abstract instances).
  void Ranges(Pending* p) {
    ranges_.clear();
    const NodeAttrs& a = p->attrs;
    if (a.has_low_pc && a.has_high_pc) {
      Dwarf_Attribute low = a.low_pc, high = a.high_pc;
      Dwarf_Addr lo, hi;
      if (dwarf_formaddr(&low, &lo) == 0) {
        const unsigned form = dwarf_whatform(&high);
        bool ok;
        if (form == DW_FORM_addr || form == DW_FORM_addrx || form == DW_FORM_GNU_addr_index ||
            (form >= DW_FORM_addrx1 && form <= DW_FORM_addrx4)) {
          ok = dwarf_formaddr(&high, &hi) == 0;
        } else {
          Dwarf_Word size;
          ok = dwarf_formudata(&high, &size) == 0;
          hi = lo + size;
        }
        if (ok) {
          if (lo < hi) ranges_.emplace_back(lo, hi);
          return;
        }
      }
    }
    if (!a.has_ranges && !(a.has_low_pc && a.has_high_pc)) return;
    ptrdiff_t off = 0;
    Dwarf_Addr base, start, end;
    while ((off = dwarf_ranges(&p->die, off, &base, &start, &end)) > 0) {
      if (start < end) ranges_.emplace_back(start, end);
    }
  }

  void Walk(Dwarf_Die* parent, Pending* sub, int depth) {
    Dwarf_Die child;
    if (depth > kMaxDieDepth || dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
        if (tag == DW_TAG_subprogram) die_map_.BeginGroup();
        Pending p{child, kNone, tag == DW_TAG_subprogram ? nullptr : sub, {}};
        dwarf_getattrs(&p.die, ScanAttr, &p.attrs, 0);
        Ranges(&p);
        // Cold path: a subroutine none of whose ranges holds an address changes no answer.
        bool wanted = only_ == nullptr;
        for (size_t i = 0; i < ranges_.size() && !wanted; ++i) {
          auto it = std::lower_bound(only_->begin(), only_->end(), ranges_[i].first);
          wanted = it != only_->end() && *it < ranges_[i].second;
        }
        if (!wanted) continue;
        // A subprogram without code (a declaration, an abstract instance) holds none either:
        // its children are the abstract parameters, variables and blocks of an inline function.
        if (ranges_.empty() && tag == DW_TAG_subprogram) continue;
        for (const auto& [lo, hi] : ranges_) die_map_.Insert(lo, hi, Materialize(&p));
        Walk(&child, &p, depth + 1);
      } else if (MayHoldCode(tag)) {
        Walk(&child, sub, depth + 1);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // ------------------------------------------------ the same walk over our own DIE reader

  struct FastAttrs {
    DieAttr low_pc{}, high_pc{}, ranges{}, origin{}, sibling{};
    bool has_origin = false, has_name = false;
    bool has_low_pc = false, has_high_pc = false, has_ranges = false;
    uint64_t call_file = 0, call_line = 0, call_column = 0;
  };
  struct FastPending {
    uint64_t offset;  // of the DIE
    uint32_t node;
    FastPending* parent;
    FastAttrs attrs;
  };

  // The attributes ScanFastAttr looks at.
  static bool ScansAttr(uint32_t name) {
    switch (name) {
      case DW_AT_low_pc:
      case DW_AT_high_pc:
      case DW_AT_ranges:
      case DW_AT_abstract_origin:
      case DW_AT_linkage_name:
      case DW_AT_MIPS_linkage_name:
      case DW_AT_name:
      case DW_AT_call_file:
      case DW_AT_call_line:
      case DW_AT_call_column:
      case DW_AT_sibling:
        return true;
      default:
        return false;
    }
  }

  void ScanFastAttr(const DieAttr& a, FastAttrs* f) {
    switch (a.name) {
      case DW_AT_low_pc:
        f->low_pc = a;
        f->has_low_pc = true;
        break;
      case DW_AT_high_pc:
        f->high_pc = a;
        f->has_high_pc = true;
        break;
      case DW_AT_ranges:
        f->ranges = a;
        f->has_ranges = true;
        break;
      case DW_AT_abstract_origin:
        f->origin = a;
        f->has_origin = true;
        break;
      case DW_AT_linkage_name:
      case DW_AT_MIPS_linkage_name:
      case DW_AT_name:
        f->has_name = true;
        break;
      case DW_AT_call_file:
        dies_->Constant(a, &f->call_file);
        break;
      case DW_AT_call_line:
        dies_->Constant(a, &f->call_line);
        break;
      case DW_AT_call_column:
        dies_->Constant(a, &f->call_column);
        break;
      case DW_AT_sibling:
        f->sibling = a;
        break;
      default:
        break;
    }
  }

  // Name(): the first of linkage name, MIPS linkage name and name found along the DIE's
  // abstract_origin / specification chain (libdw's dwarf_attr_integrate: at most 17 DIEs).
  const char* FastName(uint64_t offset) {
    enum { kLinkage, kMips, kName, kKinds };
    struct Link {
      DieAttr attr[kKinds];
      bool has[kKinds];
    };
    constexpr int kChain = 17;
    Link chain[kChain];
    int count = 0;
    for (uint64_t at = offset; count < kChain;) {
      DwarfUnitDies::Die d;
      if (!dies_->ReadDie(at, &d)) break;
      Link& link = chain[count++];
      link = Link{};
      DieAttr origin{}, spec{};
      const uint64_t end = dies_->ForEachAttr(
          d,
          [&](const DieAttr& a) {
            int kind = a.name == DW_AT_linkage_name        ? kLinkage
                       : a.name == DW_AT_MIPS_linkage_name ? kMips
                       : a.name == DW_AT_name              ? kName
                                                           : -1;
            if (kind >= 0 && !link.has[kind]) {
              link.attr[kind] = a;
              link.has[kind] = true;
            }
            if (a.name == DW_AT_abstract_origin && origin.form == 0) origin = a;
            if (a.name == DW_AT_specification && spec.form == 0) spec = a;
          },
          [](uint32_t name) {
            return name == DW_AT_linkage_name || name == DW_AT_MIPS_linkage_name ||
                   name == DW_AT_name || name == DW_AT_abstract_origin ||
                   name == DW_AT_specification;
          });
      if (end == 0) break;
      const DieAttr& next = origin.form != 0 ? origin : spec;
      if (next.form == 0 || !dies_->Reference(next, &at)) break;
    }
    for (int kind = 0; kind < kKinds; ++kind) {
      for (int i = 0; i < count; ++i) {
        if (!chain[i].has[kind]) continue;
        if (const char* s = dies_->String(chain[i].attr[kind])) return s;
        break;  // found, but not a string: the next kind
      }
    }
    return nullptr;
  }

  NameCache::Entry* NodeName(FastPending* p) {
    uint64_t origin;
    if (!p->attrs.has_origin || p->attrs.has_name || !dies_->Reference(p->attrs.origin, &origin)) {
      return names_->Get(FastName(p->offset));
    }
    if (auto it = names_->by_origin.find(origin); it != names_->by_origin.end()) return it->second;
    NameCache::Entry* name = names_->Get(FastName(p->offset));
    // A failed read may have cut the chain short: such a name is not remembered.
    if (dies_->ok()) names_->by_origin.emplace(origin, name);
    return name;
  }

  // Ranges() over our reader; false when the unit must go to libdw.
  bool FastRanges(const FastPending& p) {
    ranges_.clear();
    const FastAttrs& a = p.attrs;
    if (a.has_low_pc && a.has_high_pc) {
      uint64_t lo, hi, size;
      if (!dies_->Address(a.low_pc, &lo)) return false;
      if (dies_->Address(a.high_pc, &hi)) {
      } else if (dies_->Constant(a.high_pc, &size)) {
        hi = lo + size;
      } else {
        return false;
      }
      if (lo < hi) ranges_.emplace_back(lo, hi);
      return true;
    }
    return !a.has_ranges || dies_->Ranges(a.ranges, &ranges_);
  }

  // Walk() over our reader: the sibling list at `offset`. Returns the offset past its null
  // entry, or 0 when the unit must go to libdw.
  uint64_t FastWalk(uint64_t offset, FastPending* sub, int depth) {
    if (depth > kMaxDieDepth) return dies_->SkipSiblings(offset);
    DwarfUnitDies::Die d;
    while (dies_->ReadDie(offset, &d)) {
      if (d.tag == DW_TAG_subprogram || d.tag == DW_TAG_inlined_subroutine) {
        if (d.tag == DW_TAG_subprogram) die_map_.BeginGroup();
        FastPending p{d.offset, kNone, d.tag == DW_TAG_subprogram ? nullptr : sub, {}};
        const uint64_t attrs_end = dies_->ForEachAttr(
            d, [&](const DieAttr& a) { ScanFastAttr(a, &p.attrs); }, ScansAttr);
        if (attrs_end == 0 || !FastRanges(p)) return 0;
        bool wanted = only_ == nullptr;
        for (size_t i = 0; i < ranges_.size() && !wanted; ++i) {
          auto it = std::lower_bound(only_->begin(), only_->end(), ranges_[i].first);
          wanted = it != only_->end() && *it < ranges_[i].second;
        }
        if (!wanted || (ranges_.empty() && d.tag == DW_TAG_subprogram)) {
          offset = dies_->NextAfter(d, attrs_end, p.attrs.sibling);
        } else {
          for (const auto& [lo, hi] : ranges_) die_map_.Insert(lo, hi, Materialize(&p));
          offset = d.has_children ? FastWalk(attrs_end, &p, depth + 1) : attrs_end;
          // libdw goes on at the sibling, wherever the children ended.
          if (offset != 0 && p.attrs.sibling.form != 0 &&
              dies_->NextAfter(d, attrs_end, p.attrs.sibling) != offset) {
            return 0;
          }
        }
      } else if (d.has_children && MayHoldCode(static_cast<int>(d.tag))) {
        const uint64_t sibling = dies_->SiblingTarget(d);
        offset = dies_->AttrsEnd(d);
        if (offset != 0) offset = FastWalk(offset, sub, depth + 1);
        if (sibling != 0 && offset != sibling) return 0;
      } else {
        offset = dies_->Next(d);
      }
      if (offset == 0 || !dies_->ok()) return 0;
    }
    return dies_->ok() ? d.attrs : 0;
  }

  bool FastRead(Dwarf_Die* cudie) {
    const uint64_t unit = dwarf_dieoffset(cudie) - dwarf_cuoffset(cudie);
    if (!fast_.Open(*die_sections_, unit)) return false;
    DwarfUnitDies::Die cu;
    if (!fast_.ReadDie(fast_.unit_die_offset(), &cu)) return false;
    if (!cu.has_children) return true;
    const uint64_t first = fast_.AttrsEnd(cu);
    return first != 0 && FastWalk(first, nullptr, 0) != 0 && fast_.ok();
  }

  NameCache* names_;
  const LineSections* lines_;
  LineTable* table_;
  UnitResult* out_;
  const char* comp_dir_ = nullptr;
  absl::flat_hash_map<const char*, uint32_t>& file_index_;
  uint32_t& unit_;
  AddressDieMap& die_map_;
  const std::vector<uint64_t>* only_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // scratch
  const DieSections* die_sections_;
  DwarfUnitDies& fast_;
  DwarfUnitDies* dies_ = nullptr;  // &fast_ when our reader may be used
};

// Reserves room in `v` for `left` more units like the `merged` ones so far (with a quarter to
// spare) when it has less, but never more than four times what it holds: one huge first unit
// must not make it ask for a hundred times its size. A refused reservation is only a missed
// optimization.
template <typename V>
void GrowFor(V* v, size_t merged, size_t left) {
  const size_t size = v->size();
  const size_t want = size + size / merged * left;
  if (v->capacity() >= want) return;  // (the quarter to spare keeps this from firing every unit)
  try {
    v->reserve(std::min(want + want / 4, size * 4 + 4096));
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
  }
}

// ---------------------------------------------------------------- units and their ranges

struct UnitRef {
  Dwarf_Off die_offset;
  int version;
};

struct Endpoint {
  uint64_t addr;
  uint32_t unit;
  bool start;
  bool operator<(const Endpoint& o) const { return addr < o.addr; }
};

// LLVM's DWARFDebugAranges::construct: sweep the endpoints; an address covered by several units
// belongs to the lowest one, extending the previous range when possible.
std::vector<CuRange> SweepRanges(std::vector<Endpoint> endpoints) {
  std::stable_sort(endpoints.begin(), endpoints.end());
  std::multiset<uint32_t> valid;
  std::vector<CuRange> out;
  uint64_t prev = ~uint64_t{0};
  for (const Endpoint& e : endpoints) {
    if (prev < e.addr && !valid.empty()) {
      if (!out.empty() && out.back().hi == prev && valid.count(out.back().cu) != 0) {
        out.back().hi = e.addr;
      } else {
        out.push_back({prev, e.addr, *valid.begin(), 0});
      }
    }
    if (e.start) {
      valid.insert(e.unit);
    } else if (auto it = valid.find(e.unit); it != valid.end()) {
      valid.erase(it);
    }
    prev = e.addr;
  }
  return out;
}

void CollectUnits(Dwarf* dbg, std::vector<UnitRef>* units, std::vector<CuRange>* ranges) {
  std::unordered_map<Dwarf_Off, uint32_t> by_offset;
  std::vector<Endpoint> endpoints;
  std::vector<Dwarf_Die> dies;
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die cudie;
  while (dwarf_get_units(dbg, cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) continue;
    const Dwarf_Off off = dwarf_dieoffset(&cudie);
    by_offset[off] = static_cast<uint32_t>(units->size());
    units->push_back({off, version});
    dies.push_back(cudie);
  }
  std::vector<bool> in_aranges(units->size(), false);
  Dwarf_Aranges* aranges = nullptr;
  size_t naranges = 0;
  if (dwarf_getaranges(dbg, &aranges, &naranges) == 0) {
    for (size_t i = 0; i < naranges; ++i) {
      Dwarf_Addr start;
      Dwarf_Word length;
      Dwarf_Off die_off;
      if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, &die_off) != 0) {
        continue;
      }
      auto it = by_offset.find(die_off);
      if (it == by_offset.end()) continue;
      in_aranges[it->second] = true;
      if (length > 0 && start + length > start) {
        endpoints.push_back({start, it->second, true});
        endpoints.push_back({start + length, it->second, false});
      }
    }
  }
  for (uint32_t u = 0; u < units->size(); ++u) {
    if (in_aranges[u]) continue;
    ptrdiff_t off = 0;
    Dwarf_Addr base, start, end;
    while ((off = dwarf_ranges(&dies[u], off, &base, &start, &end)) > 0) {
      if (start < end) {
        endpoints.push_back({start, u, true});
        endpoints.push_back({end, u, false});
      }
    }
  }
  *ranges = SweepRanges(std::move(endpoints));
}

// ---------------------------------------------------------------- the ELF symbol table

struct RawSymbol {
  uint64_t addr, size;
  std::string_view name;
  std::string_view file;  // local symbols: the STT_FILE before them in the table
};

// Appends the symbols of every section of `type`, with LLVM's filter (SymbolizableObjectFile):
// function, object, notype and ifunc symbols defined in a section.
void CollectSymbols(Elf* elf, Elf64_Word type, std::vector<RawSymbol>* out) {
  ForEachElfSymbol(elf, type, [&](const GElf_Sym& sym, const char* name, std::string_view file) {
    const int st_type = GELF_ST_TYPE(sym.st_info);
    if (st_type != STT_NOTYPE && st_type != STT_FUNC && st_type != STT_OBJECT &&
        st_type != STT_GNU_IFUNC) {
      return;
    }
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return;
    out->push_back({sym.st_value, sym.st_size, name, file});
  });
}

// Keeps the MiniDebugInfo image alive while symbol names point into it.
struct SymbolSource {
  std::string mini;
  ElfHandle mini_elf;
};

// .symtab, else .dynsym as llvm-symbolizer; then, going beyond it, a binary without .symtab
// also gets the symbols of its MiniDebugInfo (.gnu_debugdata), as in process. Sorted by
// (address, size), the last one per address.
std::vector<RawSymbol> ReadSymbols(Elf* elf, SymbolSource* source) {
  std::vector<RawSymbol> out;
  CollectSymbols(elf, SHT_SYMTAB, &out);
  if (out.empty()) {
    CollectSymbols(elf, SHT_DYNSYM, &out);
    auto mini = InflateMiniDebugInfo(elf);
    if (mini.ok() && !mini->empty()) {
      source->mini = std::move(*mini);
      source->mini_elf.reset(elf_memory(source->mini.data(), source->mini.size()));
      if (source->mini_elf != nullptr && elf_kind(source->mini_elf.get()) == ELF_K_ELF) {
        CollectSymbols(source->mini_elf.get(), SHT_SYMTAB, &out);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RawSymbol& a, const RawSymbol& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.size < b.size;
  });
  size_t kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[kept - 1].addr == out[i].addr) {
      out[kept - 1] = out[i];
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
  return out;
}

// ---------------------------------------------------------------- serialization

// Deduplicated NUL-terminated strings; the set holds offsets into bytes_ and is searched by
// content (no per-string allocation).
class StringTable {
 public:
  StringTable() : offsets_(0, Hash{&bytes_}, Eq{&bytes_}) { Add(""); }
  uint32_t Add(std::string_view s) {
    auto it = offsets_.find(s);
    if (it != offsets_.end()) return *it;
    // Each string is preceded by its 32-bit length, so that readers need no strlen.
    const auto length = static_cast<uint32_t>(s.size());
    bytes_.append(reinterpret_cast<const char*>(&length), sizeof(length));
    const auto offset = static_cast<uint32_t>(bytes_.size());
    bytes_.append(s);
    bytes_.push_back('\0');
    offsets_.insert(offset);
    return offset;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  struct Hash {
    using is_transparent = void;
    const std::string* bytes;
    size_t operator()(std::string_view s) const { return absl::HashOf(s); }
    size_t operator()(uint32_t off) const { return absl::HashOf(View(*bytes, off)); }
  };
  struct Eq {
    using is_transparent = void;
    const std::string* bytes;
    static std::string_view Of(const std::string&, std::string_view s) { return s; }
    static std::string_view Of(const std::string& b, uint32_t off) { return View(b, off); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Of(*bytes, a) == Of(*bytes, b);
    }
  };
  static std::string_view View(const std::string& b, uint32_t off) {
    return std::string_view(b.data() + off);
  }

  std::string bytes_;
  absl::flat_hash_set<uint32_t, Hash, Eq> offsets_;
};

// Varints are encoded into a small buffer and appended at once (a push_back per byte was 4 % of
// an index build).
void PutUleb(std::string* out, uint64_t v) {
  if (v < 0x80) {
    out->push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    buf[n++] = static_cast<char>(b);
  } while (v != 0);
  out->append(buf, n);
}

void PutSleb(std::string* out, int64_t v) {
  if (v >= -64 && v < 64) {
    out->push_back(static_cast<char>(v & 0x7f));
    return;
  }
  char buf[10];
  size_t n = 0;
  bool more = true;
  while (more) {
    uint8_t b = v & 0x7f;
    v >>= 7;  // arithmetic shift
    if ((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0)) {
      more = false;
    } else {
      b |= 0x80;
    }
    buf[n++] = static_cast<char>(b);
  }
  out->append(buf, n);
}

// Function names, deduplicated, stored as runs of tokens (symbol_index_format.h): the name cut
// after every '<', '>', '(', ')' and ','. Token ids are given by frequency, so that the most
// common pieces take one byte.
class NameTable {
 public:
  uint32_t Add(std::string_view name) {
    auto it = ids_.find(absl::string_view(name.data(), name.size()));
    if (it == ids_.end()) {
      it = ids_.emplace(std::string(name), static_cast<uint32_t>(names_.size())).first;
      names_.push_back(&it->first);
      uses_.push_back(0);
    }
    return it->second;
  }
  size_t size() const { return names_.size(); }
  // Counts one reference to a name: the most used names get the smallest (shortest) indexes.
  uint32_t Use(uint32_t id) {
    ++uses_[id];
    return id;
  }

  // Fills the token, name and name-data tables (token strings go into `strings`); `order`
  // maps the ids given by Add to the final name indexes.
  void Finish(StringTable* strings, std::vector<uint32_t>* tokens, std::vector<uint32_t>* names,
              std::string* data, std::vector<uint32_t>* order) const {
    std::vector<uint32_t> by_use(names_.size());
    for (uint32_t i = 0; i < by_use.size(); ++i) by_use[i] = i;
    std::stable_sort(by_use.begin(), by_use.end(),
                     [&](uint32_t a, uint32_t b) { return uses_[a] > uses_[b]; });
    order->assign(names_.size(), 0);
    for (uint32_t i = 0; i < by_use.size(); ++i) (*order)[by_use[i]] = i;
    // One tokenizing pass: provisional token ids in order of appearance, with counts.
    absl::flat_hash_map<std::string_view, uint32_t> provisional;
    std::vector<std::string_view> text;
    std::vector<uint32_t> count, sequence, begin;
    for (uint32_t i : by_use) {
      begin.push_back(static_cast<uint32_t>(sequence.size()));
      ForEachToken(*names_[i], [&](std::string_view t) {
        auto [it, inserted] = provisional.try_emplace(t, static_cast<uint32_t>(text.size()));
        if (inserted) {
          text.push_back(t);
          count.push_back(0);
        }
        ++count[it->second];
        sequence.push_back(it->second);
      });
    }
    begin.push_back(static_cast<uint32_t>(sequence.size()));
    std::vector<uint32_t> by_count(text.size());
    for (uint32_t i = 0; i < by_count.size(); ++i) by_count[i] = i;
    std::sort(by_count.begin(), by_count.end(), [&](uint32_t a, uint32_t b) {
      return count[a] != count[b] ? count[a] > count[b] : text[a] < text[b];
    });
    std::vector<uint32_t> id(text.size());
    for (uint32_t i = 0; i < by_count.size(); ++i) {
      id[by_count[i]] = i;
      tokens->push_back(strings->Add(text[by_count[i]]));
    }
    for (size_t n = 0; n + 1 < begin.size(); ++n) {
      names->push_back(static_cast<uint32_t>(data->size()));
      for (uint32_t k = begin[n]; k < begin[n + 1]; ++k) PutUleb(data, id[sequence[k]]);
    }
  }

 private:
  template <typename F>
  static void ForEachToken(std::string_view name, F&& f) {
    size_t begin = 0;
    for (size_t i = 0; i < name.size(); ++i) {
      const char c = name[i];
      if (c == '<' || c == '>' || c == '(' || c == ')' || c == ',') {
        f(name.substr(begin, i + 1 - begin));
        begin = i + 1;
      }
    }
    if (begin < name.size()) f(name.substr(begin));
  }

  // Node-based: names_ points at the keys.
  absl::node_hash_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> names_;
  std::vector<uint32_t> uses_;
};

class ImageWriter {
 public:
  ImageWriter() { image_.resize(sizeof(Header)); }
  // An upper bound of the image size (compression only shrinks), to grow it once.
  void Reserve(size_t bytes) { image_.reserve(sizeof(Header) + bytes + 4096); }
  template <typename T>
  void Put(Section s, const std::vector<T>& v) {
    PutBytes(s, v.data(), v.size() * sizeof(T), v.size());
  }
  void PutBytes(Section s, const void* p, size_t bytes, size_t count) {
    image_.resize((image_.size() + 7) & ~size_t{7});
    header_.sections[s] = {image_.size(), count};
    image_.append(static_cast<const char*>(p), bytes);
  }
  // A byte section as zstd frames of kChunkBytes (symbol_index_format.h), or plain when
  // `compress` is false.
  void PutBytes(Section s, const std::string& bytes, bool compress) {
    if (!compress || bytes.empty()) {
      PutBytes(s, bytes.data(), bytes.size(), bytes.size());
      return;
    }
    header_.sections[s] = {0, bytes.size()};
    header_.chunks[s].begin = static_cast<uint32_t>(chunks_.size());
    std::string frame;
    for (size_t at = 0; at < bytes.size(); at += kChunkBytes) {
      const size_t raw = std::min<size_t>(kChunkBytes, bytes.size() - at);
      frame.resize(ZSTD_compressBound(raw));
      const size_t n =
          ZSTD_compressCCtx(cctx_.get(), frame.data(), frame.size(), bytes.data() + at, raw, 1);
      if (ZSTD_isError(n)) frame.clear();  // cannot happen with a bound-sized buffer
      chunks_.push_back({image_.size(), static_cast<uint32_t>(ZSTD_isError(n) ? 0 : n), 0});
      image_.append(frame.data(), ZSTD_isError(n) ? 0 : n);
    }
    header_.chunks[s].end = static_cast<uint32_t>(chunks_.size());
  }
  std::string Finish(uint32_t build_id, uint32_t flags, uint32_t node_count) {
    Put(kChunks, chunks_);
    image_.resize((image_.size() + 7) & ~size_t{7});
    std::memcpy(header_.magic, kMagic, sizeof(kMagic));
    header_.version = kVersion;
    header_.header_size = sizeof(Header);
    header_.file_size = image_.size();
    header_.build_id = build_id;
    header_.flags = flags;
    header_.node_count = node_count;
    std::memcpy(image_.data(), &header_, sizeof(header_));
    return std::move(image_);
  }

 private:
  struct FreeCCtx {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };

  Header header_{};
  std::string image_;
  std::vector<Chunk> chunks_;
  // One context for every chunk: ZSTD_compress would allocate (and fault in) a fresh one each.
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx_{ZSTD_createCCtx()};
};

}  // namespace

absl::StatusOr<std::string> BuildSymbolIndex(const SymbolIndexOptions& options,
                                             SymbolIndexStats* stats) {
  SymbolIndexStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = SymbolIndexStats();
  ElfLibraryInit();

  // The symbol table (and the build-id) come from the binary.
  const std::string& symbols_path =
      options.symbols_path.empty() ? options.debug_path : options.symbols_path;
  auto symbols_file = ElfFile::Open(symbols_path);
  if (!symbols_file.ok()) return symbols_file.status();
  std::string build_id = ReadBuildId((*symbols_file)->elf());
  SymbolSource symbol_source;
  std::vector<RawSymbol> raw_symbols = ReadSymbols((*symbols_file)->elf(), &symbol_source);

  std::vector<UnitRef> units;
  std::vector<CuRange> cu_ranges;
  std::unique_ptr<DwarfImage> image;
  LineSections line_sections;
  DieSections die_sections;
  if (!options.debug_path.empty()) {
    auto opened = DwarfImage::Open(options.debug_path);
    if (!opened.ok()) return opened.status();
    image = std::move(*opened);
    stats->debug_bytes = image->debug_bytes();
    stats->debug_bytes_on_disk = image->debug_bytes_on_disk();
    ElfHandle elf = image->NewElf();
    DwarfHandle dbg = DwarfImage::NewDwarf(elf.get());
    if (dbg != nullptr) CollectUnits(dbg.get(), &units, &cu_ranges);
    line_sections.debug_line = image->Section(elf.get(), ".debug_line");
    line_sections.debug_str = image->Section(elf.get(), ".debug_str");
    line_sections.debug_line_str = image->Section(elf.get(), ".debug_line_str");
    die_sections.info = image->Section(elf.get(), ".debug_info");
    die_sections.abbrev = image->Section(elf.get(), ".debug_abbrev");
    die_sections.str = line_sections.debug_str;
    die_sections.line_str = line_sections.debug_line_str;
    die_sections.str_offsets = image->Section(elf.get(), ".debug_str_offsets");
    die_sections.addr = image->Section(elf.get(), ".debug_addr");
    die_sections.ranges = image->Section(elf.get(), ".debug_ranges");
    die_sections.rnglists = image->Section(elf.get(), ".debug_rnglists");
  }
  stats->units = units.size();

  // Which units to read.
  std::vector<uint32_t> todo;
  if (options.only_addresses.empty()) {
    for (uint32_t u = 0; u < units.size(); ++u) todo.push_back(u);
  } else {
    std::vector<bool> want(units.size(), false);
    for (uint64_t a : options.only_addresses) {
      auto it = std::upper_bound(cu_ranges.begin(), cu_ranges.end(), a,
                                 [](uint64_t x, const CuRange& r) { return x < r.lo; });
      if (it != cu_ranges.begin() && a < (it - 1)->hi) want[(it - 1)->cu] = true;
    }
    for (uint32_t u = 0; u < units.size(); ++u) {
      if (want[u]) todo.push_back(u);
    }
  }
  stats->units_read = todo.size();

  std::vector<uint64_t> only = options.only_addresses;
  std::sort(only.begin(), only.end());
  // The global tables, filled unit by unit in unit order.
  StringTable strings;
  NameTable names;
  absl::flat_hash_map<const std::string*, uint32_t> name_by_string;  // NameCache entries
  std::vector<uint32_t> files;
  std::unordered_map<uint32_t, uint32_t> file_by_string;
  std::vector<CuInfo> cus(units.size());
  std::vector<uint32_t> cu_files;
  std::vector<MapBlock> map_blocks;
  std::string map_data;
  std::vector<UnitResult::LocalNode> nodes;  // name: name index, parent: index distance
  uint64_t node_count = 0;
  std::vector<LineBlock> blocks;
  std::string line_data;
  std::vector<uint32_t> name_ids;
  auto merge_unit = [&](uint32_t u, const UnitResult& r) {
    CuInfo& cu = cus[u];
    cu = CuInfo{};
    cu.files_begin = static_cast<uint32_t>(cu_files.size());
    cu.files_count = static_cast<uint32_t>(r.files.size());
    for (const std::string& f : r.files) {
      if (f.empty()) {
        cu_files.push_back(kNone);
        continue;
      }
      const uint32_t s = strings.Add(f);
      auto [it, inserted] = file_by_string.try_emplace(s, static_cast<uint32_t>(files.size()));
      if (inserted) files.push_back(s);
      cu_files.push_back(it->second);
    }
    uint64_t base = ~uint64_t{0};
    for (const auto& m : r.map) base = std::min(base, m.lo);
    for (const auto& row : r.rows) base = std::min(base, row.addr);
    cu.base = base == ~uint64_t{0} ? 0 : base;

    // Nodes (global index = node_base + unit-local index).
    const uint64_t node_base = node_count;
    name_ids.clear();
    for (const std::string* n : r.names) {
      auto [it, inserted] = name_by_string.try_emplace(n, 0);
      if (inserted) it->second = names.Add(*n);
      name_ids.push_back(it->second);
    }
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      UnitResult::LocalNode n = r.nodes[i];
      if (n.name != kNone) n.name = names.Use(name_ids[n.name]);
      n.parent = n.parent == kNone ? 0 : static_cast<uint32_t>(i - n.parent);
      nodes.push_back(n);
      ++node_count;
    }

    // Map entries, in blocks.
    cu.map_block_begin = static_cast<uint32_t>(map_blocks.size());
    uint64_t prev_end = 0, prev_node = 0;
    uint32_t in_block = kMapBlockEntries;
    for (const auto& m : r.map) {
      const uint64_t lo = m.lo - cu.base, size = m.hi - m.lo, node = node_base + m.node;
      if (lo > 0xffffffffu || size > 0xffffffffu) continue;  // not representable: drop
      if (in_block == kMapBlockEntries) {
        map_blocks.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(node),
                              static_cast<uint32_t>(map_data.size())});
        prev_end = lo;
        prev_node = node;
        in_block = 0;
      }
      ++in_block;
      PutSleb(&map_data, static_cast<int64_t>(lo - prev_end));
      PutUleb(&map_data, size);
      PutSleb(&map_data, static_cast<int64_t>(node - prev_node));
      prev_end = lo + size;
      prev_node = node;
    }
    cu.map_block_end = static_cast<uint32_t>(map_blocks.size());
    cu.map_data_end = static_cast<uint32_t>(map_data.size());

    cu.block_begin = static_cast<uint32_t>(blocks.size());
    uint32_t prev_line = 0;
    uint64_t prev_addr = 0;
    uint32_t rows_in_block = kLineBlockRows;
    for (const auto& row : r.rows) {
      if (row.addr - cu.base > 0xffffffffu) break;  // not representable: drop (sorted)
      if (rows_in_block == kLineBlockRows) {
        blocks.push_back(
            {static_cast<uint32_t>(row.addr - cu.base), static_cast<uint32_t>(line_data.size())});
        prev_line = 0;
        prev_addr = row.addr;
        rows_in_block = 0;
      }
      ++rows_in_block;
      PutUleb(&line_data, row.addr - prev_addr);
      PutUleb(&line_data, row.file);
      if (row.file != 0) {
        PutSleb(&line_data, static_cast<int64_t>(row.line) - static_cast<int64_t>(prev_line));
        PutUleb(&line_data, row.column);
        prev_line = row.line;
      }
      prev_addr = row.addr;
    }
    cu.block_end = static_cast<uint32_t>(blocks.size());
    cu.line_data_end = static_cast<uint32_t>(line_data.size());
  };

  // Units are merged in order as soon as they are read, and their buffers go back to the
  // readers: memory stays at a few units' worth instead of the whole DWARF's.
  std::vector<bool> wanted(units.size(), false);
  for (uint32_t u : todo) wanted[u] = true;
  std::mutex merge_mu;
  uint32_t next_merge = 0;
  size_t merged = 0;  // units read and merged
  std::vector<std::unique_ptr<UnitResult>> ready(units.size());
  std::vector<std::unique_ptr<UnitResult>> spare;
  const UnitResult unread;
  // Merges every unit whose turn has come (with `all`, missing ones as unread).
  auto drain = [&](bool all) {
    for (; next_merge < units.size(); ++next_merge) {
      const uint32_t u = next_merge;
      if (wanted[u] && ready[u] == nullptr && !all) return;
      const UnitResult& r = ready[u] != nullptr ? *ready[u] : unread;
      stats->units_libdw += r.libdw ? 1 : 0;
      merge_unit(u, r);
      // Room for the units still to come, extrapolated from those merged so far: one move of
      // each table instead of a doubling series (every move faults in fresh pages).
      if (r.read) {
        ++merged;
        const size_t left = todo.size() - std::min(todo.size(), merged);
        GrowFor(&nodes, merged, left);
        GrowFor(&map_data, merged, left);
        GrowFor(&line_data, merged, left);
        GrowFor(&map_blocks, merged, left);
        GrowFor(&blocks, merged, left);
        GrowFor(&cu_files, merged, left);
      }
      if (ready[u] != nullptr) {
        ready[u]->Clear();
        spare.push_back(std::move(ready[u]));
      }
    }
  };

  // Per-thread state outlives the threads: merged units point at the names it caches.
  std::vector<ThreadState> states;
  if (!todo.empty()) {
    unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                           : std::max(1u, std::thread::hardware_concurrency());
    threads = std::min<unsigned>(threads, static_cast<unsigned>(todo.size()));
    // A cold lookup reads a unit in a couple of milliseconds: another thread (its own libdw
    // handle, and a core that a busy machine may not have free) only pays off for many units.
    if (!only.empty()) threads = std::min<unsigned>(threads, std::max<size_t>(1, todo.size() / 8));
    std::atomic<size_t> next{0};
    states.resize(threads);
    auto work = [&](unsigned thread) {
      ElfHandle elf = image->NewElf();
      DwarfHandle dbg = DwarfImage::NewDwarf(elf.get());
      if (dbg == nullptr) return;
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        const uint32_t u = todo[i];
        std::unique_ptr<UnitResult> result;
        {
          std::lock_guard<std::mutex> lock(merge_mu);
          if (!spare.empty()) {
            result = std::move(spare.back());
            spare.pop_back();
          }
        }
        if (result == nullptr) result = std::make_unique<UnitResult>();
        Dwarf_Die cudie;
        if (dwarf_offdie(dbg.get(), units[u].die_offset, &cudie) != nullptr) {
          UnitReader(&states[thread], &line_sections, result.get(), only.empty() ? nullptr : &only,
                     options.libdw_dies ? nullptr : &die_sections)
              .Read(&cudie, units[u].version);
        }
        std::lock_guard<std::mutex> lock(merge_mu);
        ready[u] = std::move(result);
        drain(false);
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& t : pool) t.join();
  }
  drain(true);
  spare.clear();

  if (!only.empty()) {
    // Cold path: only the symbols that the lookups of these addresses will find.
    std::vector<RawSymbol> kept;
    for (uint64_t a : only) {
      auto it = std::upper_bound(raw_symbols.begin(), raw_symbols.end(), a,
                                 [](uint64_t x, const RawSymbol& r) { return x < r.addr; });
      if (it == raw_symbols.begin()) continue;
      --it;
      if (kept.empty() || kept.back().addr != it->addr) kept.push_back(*it);
    }
    raw_symbols = std::move(kept);
  }
  std::vector<SymbolEntry> symbols;
  symbols.reserve(raw_symbols.size());
  for (const RawSymbol& s : raw_symbols) {
    uint32_t mangled = kNone, demangled = kNone;
    if (!options.demangle_symbols) {
      mangled = names.Use(names.Add(s.name));
    } else if (s.name.size() >= 2 && s.name[0] == '_' && s.name[1] == 'Z') {
      demangled = names.Use(names.Add(Demangle(s.name)));
    } else {
      demangled = names.Use(names.Add(s.name));
    }
    symbols.push_back(
        {s.addr, s.size, mangled, demangled, s.file.empty() ? kNone : strings.Add(s.file), 0});
  }

  std::vector<uint32_t> tokens, name_offsets, name_order;
  std::string name_data;
  names.Finish(&strings, &tokens, &name_offsets, &name_data, &name_order);
  for (SymbolEntry& e : symbols) {
    if (e.mangled != kNone) e.mangled = name_order[e.mangled];
    if (e.demangled != kNone) e.demangled = name_order[e.demangled];
  }
  std::string node_data;
  node_data.reserve(nodes.size() * sizeof(Node));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    const Node node{n.name == kNone ? kNone : name_order[n.name],
                    n.parent == 0 ? kNone : static_cast<uint32_t>(i - n.parent), n.call_line,
                    static_cast<uint16_t>(n.call_file >= kNoFile ? kNoFile : n.call_file),
                    static_cast<uint16_t>(std::min<uint32_t>(n.call_column, 0xffff))};
    node_data.append(reinterpret_cast<const char*>(&node), sizeof(node));
  }
  nodes = {};
  const uint32_t build_id_str = strings.Add(build_id);

  // Offsets and counts are 32-bit in the format.
  for (uint64_t n :
       {uint64_t{strings.bytes().size()}, uint64_t{line_data.size()}, node_count,
        uint64_t{node_data.size()}, uint64_t{map_data.size()}, uint64_t{name_data.size()},
        uint64_t{blocks.size()}, uint64_t{cu_files.size()}}) {
    if (n >= kNone) {
      return absl::ResourceExhaustedError("debug information too large for a symbol index");
    }
  }
  ImageWriter w;
  w.Reserve(strings.bytes().size() + node_data.size() + map_data.size() + line_data.size() +
            name_data.size() + symbols.size() * sizeof(SymbolEntry) +
            (files.size() + cu_files.size() + tokens.size() + name_offsets.size()) * 4 +
            cus.size() * sizeof(CuInfo) + cu_ranges.size() * sizeof(CuRange) +
            map_blocks.size() * sizeof(MapBlock) + blocks.size() * sizeof(LineBlock));
  w.PutBytes(kStrings, strings.bytes().data(), strings.bytes().size(), strings.bytes().size());
  w.Put(kFiles, files);
  w.Put(kCuRanges, cu_ranges);
  w.Put(kCus, cus);
  w.Put(kCuFiles, cu_files);
  w.Put(kMapBlocks, map_blocks);
  w.PutBytes(kMapData, map_data, options.compress);
  w.PutBytes(kNodeData, node_data, options.compress);
  w.Put(kLineBlocks, blocks);
  w.PutBytes(kLineData, line_data, options.compress);
  w.Put(kSymbols, symbols);
  w.Put(kTokens, tokens);
  w.Put(kNames, name_offsets);
  w.PutBytes(kNameData, name_data, options.compress);
  std::string out =
      w.Finish(build_id_str, units.empty() ? 0 : kHasDwarf, static_cast<uint32_t>(node_count));
  stats->index_bytes = out.size();
  return out;
}

}  // namespace hangwatch::symbols
