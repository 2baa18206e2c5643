// ReadLineTable: a bounds-checked DWARF line program decoder (header, file table, rows).
#include "symbols/dwarf_image_lines.h"

#include <dwarf.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "symbols/dwarf_cursor.h"

namespace hangwatch::symbols {
namespace {

// One attribute of a DWARF 5 directory or file entry. Returns false on a form this reader
// does not know (the table is then unusable: its entry sizes are unknown).
bool ReadForm(DwarfCursor* c, uint64_t form, unsigned offset_size, const LineSections& s,
              const char** str, uint64_t* num) {
  *str = nullptr;
  *num = 0;
  switch (form) {
    case DW_FORM_string:
      *str = c->CString();
      break;
    case DW_FORM_line_strp:
      *str = SectionString(s.debug_line_str, c->Fixed(offset_size));
      break;
    case DW_FORM_strp:
      *str = SectionString(s.debug_str, c->Fixed(offset_size));
      break;
    case DW_FORM_strx:
    case DW_FORM_udata:
      *num = c->Uleb();
      break;
    case DW_FORM_sdata:
      *num = static_cast<uint64_t>(c->Sleb());
      break;
    case DW_FORM_data1:
    case DW_FORM_strx1:
      *num = c->Fixed(1);
      break;
    case DW_FORM_data2:
    case DW_FORM_strx2:
      *num = c->Fixed(2);
      break;
    case DW_FORM_strx3:
      *num = c->Fixed(3);
      break;
    case DW_FORM_data4:
    case DW_FORM_strx4:
      *num = c->Fixed(4);
      break;
    case DW_FORM_data8:
      *num = c->Fixed(8);
      break;
    case DW_FORM_data16:
      c->Skip(16);
      break;
    case DW_FORM_block:
      c->Skip(c->Uleb());
      break;
    case DW_FORM_block1:
      c->Skip(c->Fixed(1));
      break;
    case DW_FORM_block2:
      c->Skip(c->Fixed(2));
      break;
    case DW_FORM_block4:
      c->Skip(c->Fixed(4));
      break;
    default:
      return false;
  }
  return c->ok();
}

// A DWARF 5 entry format: (content type, form) pairs.
struct EntryFormat {
  std::vector<std::pair<uint64_t, uint64_t>> fields;
};

bool ReadEntryFormat(DwarfCursor* c, EntryFormat* f) {
  const uint8_t n = c->U8();
  for (uint8_t i = 0; i < n && c->ok(); ++i) {
    const uint64_t type = c->Uleb();
    const uint64_t form = c->Uleb();
    f->fields.emplace_back(type, form);
  }
  return c->ok();
}

// Reads `count` entries; for each, its path (null when absent) and directory index.
template <typename F>
bool ReadEntries(DwarfCursor* c, const EntryFormat& format, unsigned offset_size,
                 const LineSections& s, F&& each) {
  const uint64_t count = c->Uleb();
  // Each entry takes at least one byte per field: refuse counts the table cannot hold.
  if (!c->ok() || (format.fields.empty() && count != 0) ||
      (!format.fields.empty() && count > c->left() / format.fields.size())) {
    return false;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const char* path = nullptr;
    uint64_t dir = ~uint64_t{0};
    for (const auto& [type, form] : format.fields) {
      const char* str;
      uint64_t num;
      if (!ReadForm(c, form, offset_size, s, &str, &num)) return false;
      if (type == DW_LNCT_path) path = str;
      if (type == DW_LNCT_directory_index) dir = num;
    }
    if (!each(path, dir)) return false;
  }
  return true;
}

std::string Join(const char* dir, const char* name) {
  if (name[0] == '/' || dir == nullptr) return name;
  std::string out(dir);
  out.push_back('/');
  out.append(name);
  return out;
}

bool RowBefore(const LineRow& a, const LineRow& b) {
  if (a.addr != b.addr) return a.addr < b.addr;
  return a.end_sequence && !b.end_sequence;
}

// A stable sort of the rows by RowBefore. Compilers emit one sequence per section (COMDAT
// template instances, .text.unlikely, .text.startup) in no particular address order, but each
// sequence is itself in address order and they rarely overlap: ordering whole sequences by
// their first address, then putting ends of sequences first among rows at one address, is then
// the same result for much less work. Anything else gets the row sort.
// `scratch` keeps its buffer for the next table (a fresh one faulted in pages every unit).
void SortRows(std::vector<LineRow>* rows, std::vector<LineRow>* scratch) {
  struct Sequence {
    uint64_t addr;
    size_t begin, end;
  };
  std::vector<Sequence> seqs;
  bool fast = true;
  for (size_t i = 0, begin = 0; i < rows->size() && fast; ++i) {
    if (i > begin && (*rows)[i].addr < (*rows)[i - 1].addr) fast = false;
    if ((*rows)[i].end_sequence || i + 1 == rows->size()) {
      seqs.push_back({(*rows)[begin].addr, begin, i + 1});
      begin = i + 1;
    }
  }
  if (fast) {
    std::stable_sort(seqs.begin(), seqs.end(),
                     [](const Sequence& a, const Sequence& b) { return a.addr < b.addr; });
    std::vector<LineRow>& out = *scratch;
    out.clear();
    out.reserve(rows->size());
    for (const Sequence& s : seqs) {
      out.insert(out.end(), rows->begin() + static_cast<ptrdiff_t>(s.begin),
                 rows->begin() + static_cast<ptrdiff_t>(s.end));
    }
    for (size_t i = 1; i < out.size() && fast; ++i) fast = out[i - 1].addr <= out[i].addr;
    if (fast) {
      for (size_t i = 0; i + 1 < out.size();) {
        size_t j = i + 1;
        while (j < out.size() && out[j].addr == out[i].addr) ++j;
        if (j - i > 1) {
          std::stable_partition(out.begin() + static_cast<ptrdiff_t>(i),
                                out.begin() + static_cast<ptrdiff_t>(j),
                                [](const LineRow& r) { return r.end_sequence; });
        }
        i = j;
      }
      rows->swap(out);
      return;
    }
  }
  std::stable_sort(rows->begin(), rows->end(), RowBefore);
}

// What the line program needs of a unit's header.
struct LineHeader {
  int version = 0;
  unsigned offset_size = 4;
  const uint8_t* unit_end = nullptr;
  const uint8_t* program = nullptr;  // the line program's first opcode
  uint8_t min_inst_length = 0;
  uint8_t max_ops = 1;
  int8_t line_base = 0;
  uint8_t line_range = 0;
  uint8_t opcode_base = 0;
  const uint8_t* std_lengths = nullptr;  // operand counts of opcodes 1 .. opcode_base - 1
};

// Reads the header of the unit at `*c` up to its directory and file tables, where it leaves
// `*c` (bounded by the unit). Sets out->version once known. False when the unit is malformed or
// of an unsupported version.
bool ReadLineHeader(DwarfCursor* c, LineHeader* h, LineTable* out) {
  uint64_t unit_length = c->Fixed(4);
  h->offset_size = 4;
  if (unit_length == 0xffffffffu) {
    unit_length = c->Fixed(8);
    h->offset_size = 8;
  } else if (unit_length >= 0xfffffff0u) {
    return false;
  }
  if (!c->ok() || unit_length > c->left()) return false;
  h->unit_end = c->pos() + unit_length;
  *c = DwarfCursor(c->pos(), h->unit_end);
  const auto version = static_cast<int>(c->Fixed(2));
  if (!c->ok() || version < 2 || version > 5) return false;
  out->version = version;
  h->version = version;
  if (version >= 5) {
    c->U8();                         // address size: DW_LNE_set_address carries its own length
    if (c->U8() != 0) return false;  // segment selectors: not for ELF
  }
  const uint64_t header_length = c->Fixed(h->offset_size);
  if (!c->ok() || header_length > c->left()) return false;
  h->program = c->pos() + header_length;
  h->min_inst_length = c->U8();
  h->max_ops = version >= 4 ? c->U8() : 1;
  const bool default_is_stmt = c->U8() != 0;
  (void)default_is_stmt;  // rows are kept whatever is_stmt says, as libdw and LLVM do
  h->line_base = static_cast<int8_t>(c->U8());
  h->line_range = c->U8();
  h->opcode_base = c->U8();
  if (!c->ok() || h->max_ops == 0 || h->line_range == 0 || h->opcode_base == 0) return false;
  h->std_lengths = c->pos();
  c->Skip(h->opcode_base - 1u);
  return true;
}

// Appends file `name` of directory `dir` to the table; false when either is missing.
bool AddFile(const std::vector<const char*>& dirs, const char* name, uint64_t dir, LineTable* out) {
  if (name == nullptr || dir >= dirs.size()) return false;
  out->files.push_back(Join(dirs[dir], name));
  return true;
}

// Reads the directory and file tables at `*c` into `*dirs` and out->files.
bool ReadFileTables(DwarfCursor* c, const LineHeader& h, const char* comp_dir,
                    const LineSections& sections, std::vector<const char*>* dirs, LineTable* out) {
  if (h.version < 5) {
    dirs->push_back(comp_dir);
    while (c->ok() && !c->at_end() && *c->pos() != 0) dirs->push_back(c->CString());
    c->U8();
    // File 0 does not exist before DWARF 5: a placeholder keeps indexes aligned.
    out->files.emplace_back("???");
    while (c->ok() && !c->at_end() && *c->pos() != 0) {
      const char* name = c->CString();
      const uint64_t dir = c->Uleb();
      c->Uleb();  // mtime
      c->Uleb();  // length
      if (!c->ok() || !AddFile(*dirs, name, dir, out)) return false;
    }
    c->U8();
    return c->ok();
  }
  EntryFormat dir_format, file_format;
  if (!ReadEntryFormat(c, &dir_format)) return false;
  if (!ReadEntries(c, dir_format, h.offset_size, sections, [&](const char* path, uint64_t) {
        if (path == nullptr) return false;
        dirs->push_back(path);
        return true;
      })) {
    return false;
  }
  if (!ReadEntryFormat(c, &file_format)) return false;
  return ReadEntries(c, file_format, h.offset_size, sections, [&](const char* name, uint64_t dir) {
    return AddFile(*dirs, name, dir, out);
  });
}

// Runs a unit's line program, appending its rows to out->rows, or with `only` (ascending
// addresses) keeping just the row that answers each of them.
class LineProgram {
 public:
  LineProgram(const LineHeader& h, const std::vector<const char*>& dirs,
              const std::vector<uint64_t>* only, LineTable* out)
      : h_(h), dirs_(dirs), only_(only), out_(out), best_(only != nullptr ? only->size() : 0) {}

  void Run() {
    DwarfCursor p(h_.program, h_.unit_end);
    // With room to spare: the table is reused, and a slightly bigger unit would otherwise move
    // the rows to fresh memory every time.
    const size_t expected = static_cast<size_t>(h_.unit_end - h_.program) / 3;
    if (only_ == nullptr && out_->rows.capacity() < expected)
      out_->rows.reserve(expected + expected / 2);
    while (p.ok() && !p.at_end()) {
      const uint8_t op = p.U8();
      if (op >= h_.opcode_base) {  // special opcode
        const unsigned adjusted = op - h_.opcode_base;
        Advance(adjusted / h_.line_range);
        st_.line +=
            static_cast<uint64_t>(h_.line_base + static_cast<int>(adjusted % h_.line_range));
        Emit(false);
        continue;
      }
      if (op == 0) {
        Extended(&p);
      } else {
        Standard(op, &p);
      }
    }
  }

  // The rows in address order (with `only`: one per address asked, when there is one).
  void Finish() {
    if (only_ != nullptr) {
      // The answer for only[j] is the best row among buckets 0..j.
      const Best* running = nullptr;
      for (const Best& b : best_) {
        if (b.set && (running == nullptr || !RowBefore(b.row, running->row))) running = &b;
        if (running != nullptr &&
            (out_->rows.empty() || out_->rows.back().addr != running->row.addr ||
             out_->rows.back().end_sequence != running->row.end_sequence)) {
          out_->rows.push_back(running->row);
        }
      }
      return;
    }
    if (!sorted_) SortRows(&out_->rows, &out_->sort_scratch);
  }

 private:
  struct State {
    uint64_t addr = 0;
    uint64_t op_index = 0;
    uint64_t file = 1;
    uint64_t line = 1;  // wraps on hostile input, as unsigned arithmetic may
    uint64_t column = 0;
  };
  // With `only`: the best row so far among those whose first address at or above them is
  // only[k] (RowBefore order, later rows winning ties as the stable sort would have them).
  struct Best {
    bool set = false;
    LineRow row;
  };

  void Emit(bool end_sequence) {
    const LineRow row{st_.addr, static_cast<uint32_t>(std::min<uint64_t>(st_.file, 0xffffffffu)),
                      static_cast<uint32_t>(st_.line),
                      static_cast<uint32_t>(std::min<uint64_t>(st_.column, 0xffffffffu)),
                      end_sequence};
    if (only_ != nullptr) {
      KeepIfBest(row);
      return;
    }
    if (!out_->rows.empty()) {
      const LineRow& prev = out_->rows.back();
      if (prev.addr > row.addr || (prev.addr == row.addr && !prev.end_sequence && end_sequence)) {
        sorted_ = false;
      }
    }
    out_->rows.push_back(row);
  }

  void KeepIfBest(const LineRow& row) {
    // The first address at or above the row: rows mostly ascend, so walk on from the last
    // row's answer; search again when they do not.
    size_t k = last_k_;
    if (row.addr < last_addr_) {
      k = static_cast<size_t>(std::lower_bound(only_->begin(), only_->end(), row.addr) -
                              only_->begin());
    }
    while (k < only_->size() && (*only_)[k] < row.addr) ++k;
    last_k_ = k;
    last_addr_ = row.addr;
    if (k < best_.size() && (!best_[k].set || !RowBefore(row, best_[k].row)))
      best_[k] = {true, row};
  }

  void Advance(uint64_t operation_advance) {
    const uint64_t ops = st_.op_index + operation_advance;
    st_.addr += h_.min_inst_length * (ops / h_.max_ops);
    st_.op_index = ops % h_.max_ops;
  }

  // An extended opcode (after its 0 byte).
  void Extended(DwarfCursor* p) {
    const uint64_t len = p->Uleb();
    if (!p->ok() || len == 0 || len > p->left()) {
      p->Skip(len);
      return;
    }
    const uint8_t* next = p->pos() + len;
    const uint8_t sub = p->U8();
    if (sub == DW_LNE_end_sequence) {
      Emit(true);
      st_ = State();
    } else if (sub == DW_LNE_set_address) {
      if (len - 1 <= 8) st_.addr = p->Fixed(len - 1);
      st_.op_index = 0;
    } else if (sub == DW_LNE_define_file && h_.version < 5) {
      const char* name = p->CString();
      const uint64_t dir = p->Uleb();
      if (p->ok()) AddFile(dirs_, name, dir, out_);
    }
    *p = DwarfCursor(next, h_.unit_end);
  }

  // A standard opcode (1 .. opcode_base - 1).
  void Standard(uint8_t op, DwarfCursor* p) {
    switch (op) {
      case DW_LNS_copy:
        Emit(false);
        break;
      case DW_LNS_advance_pc:
        Advance(p->Uleb());
        break;
      case DW_LNS_advance_line:
        st_.line += static_cast<uint64_t>(p->Sleb());
        break;
      case DW_LNS_set_file:
        st_.file = p->Uleb();
        break;
      case DW_LNS_set_column:
        st_.column = p->Uleb();
        break;
      case DW_LNS_const_add_pc:
        Advance((255u - h_.opcode_base) / h_.line_range);
        break;
      case DW_LNS_fixed_advance_pc:
        st_.addr += p->Fixed(2);
        st_.op_index = 0;
        break;
      case DW_LNS_negate_stmt:
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin:
        break;
      default:  // known or unknown: skip its declared operands
        for (uint8_t i = 0; i < h_.std_lengths[op - 1] && p->ok(); ++i) p->Uleb();
        break;
    }
  }

  const LineHeader& h_;
  const std::vector<const char*>& dirs_;
  const std::vector<uint64_t>* only_;
  LineTable* out_;
  State st_;
  bool sorted_ = true;
  std::vector<Best> best_;
  size_t last_k_ = 0;
  uint64_t last_addr_ = 0;
};

}  // namespace

bool ReadLineTable(const LineSections& sections, uint64_t offset, const char* comp_dir,
                   const std::vector<uint64_t>* only, LineTable* out) {
  out->version = 0;
  out->files.clear();
  out->rows.clear();
  const std::string_view sec = sections.debug_line;
  if (offset >= sec.size()) return false;
  const auto* base = reinterpret_cast<const uint8_t*>(sec.data());
  DwarfCursor c(base + offset, base + sec.size());
  LineHeader header;
  if (!ReadLineHeader(&c, &header, out)) return false;
  std::vector<const char*> dirs;
  if (!ReadFileTables(&c, header, comp_dir, sections, &dirs, out)) return false;
  if (header.program > header.unit_end) return false;
  LineProgram program(header, dirs, only, out);
  program.Run();
  program.Finish();
  return true;
}

}  // namespace hangwatch::symbols
