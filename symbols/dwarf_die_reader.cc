// DwarfUnitDies: unit header, abbreviation table, DIE and attribute decoding, range lists.
#include "symbols/dwarf_die_reader.h"

#include <dwarf.h>

#include <algorithm>
#include <cstring>

#include "symbols/dwarf_cursor.h"

namespace hangwatch::symbols {
namespace {

// Entry `index` of a table of `size`-byte values starting at `base` of `section` (.debug_addr,
// .debug_str_offsets, the offsets of .debug_rnglists); false when it is not inside.
bool TableEntry(std::string_view section, uint64_t base, uint64_t index, unsigned size,
                uint64_t* out) {
  if (base > section.size() || index > section.size() / size) return false;
  const uint64_t at = base + index * size;
  if (at > section.size() || section.size() - at < size) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(section.data()) + at;
  return ReadFixed(p, p + size, size, out) != nullptr;
}

bool IsAddrx(uint32_t form) {
  return form == DW_FORM_addrx || form == DW_FORM_GNU_addr_index ||
         (form >= DW_FORM_addrx1 && form <= DW_FORM_addrx4);
}

}  // namespace

int DwarfUnitDies::FormSize(uint32_t form) const {
  switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
      return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
      return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
      return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
      return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
    case DW_FORM_ref_sup4:
      return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
      return 8;
    case DW_FORM_data16:
      return 16;
    case DW_FORM_addr:
      return static_cast<int>(addr_size_);
    case DW_FORM_ref_addr:
      return static_cast<int>(version_ <= 2 ? addr_size_ : offset_size_);
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_GNU_strp_alt:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_strp_sup:
      return static_cast<int>(offset_size_);
    default:
      return -1;
  }
}

const uint8_t* DwarfUnitDies::ReadValue(const uint8_t* p, const AttrSpec& spec,
                                        DieAttr* out) const {
  const uint8_t* end = info_ + unit_end_;
  out->name = spec.name;
  out->form = spec.form;
  out->value = 0;
  out->data = nullptr;
  switch (spec.form) {
    case DW_FORM_flag_present:
      out->value = 1;
      return p;
    case DW_FORM_implicit_const:
      out->value = static_cast<uint64_t>(spec.implicit_const);
      return p;
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
      p = ReadUleb(p, end, &out->value);
      break;
    case DW_FORM_sdata: {
      int64_t x = 0;
      p = ReadSleb(p, end, &x);
      out->value = static_cast<uint64_t>(x);
      break;
    }
    case DW_FORM_string: {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
      if (nul == nullptr) return nullptr;
      out->data = reinterpret_cast<const char*>(p);
      return static_cast<const uint8_t*>(nul) + 1;
    }
    case DW_FORM_block:
    case DW_FORM_exprloc: {
      uint64_t n;
      p = ReadUleb(p, end, &n);
      if (p == nullptr || n > static_cast<uint64_t>(end - p)) return nullptr;
      return p + n;
    }
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4: {
      const unsigned w = spec.form == DW_FORM_block1 ? 1 : spec.form == DW_FORM_block2 ? 2 : 4;
      uint64_t n;
      p = ReadFixed(p, end, w, &n);
      if (p == nullptr || n > static_cast<uint64_t>(end - p)) return nullptr;
      return p + n;
    }
    case DW_FORM_data16:
      if (end - p < 16) return nullptr;
      return p + 16;
    default:
      // Unknown forms (DW_FORM_indirect included) have no size: libdw's turn.
      if (spec.size <= 0) return nullptr;
      p = ReadFixed(p, end, static_cast<unsigned>(spec.size), &out->value);
  }
  if (p == nullptr) return nullptr;
  switch (spec.form) {  // unit-relative references become section offsets
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
      out->value += unit_begin_;
      break;
    default:
      break;
  }
  return p;
}

const uint8_t* DwarfUnitDies::SkipValue(const uint8_t* p, const AttrSpec& spec) const {
  const uint8_t* end = info_ + unit_end_;
  if (spec.size >= 0) return spec.size <= end - p ? p + spec.size : nullptr;
  switch (spec.form) {
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_sdata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
      return SkipLeb(p, end);
    case DW_FORM_string: {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
      return nul == nullptr ? nullptr : static_cast<const uint8_t*>(nul) + 1;
    }
    default: {
      DieAttr unused;
      return ReadValue(p, spec, &unused);  // blocks; unknown forms fail there
    }
  }
}

bool DwarfUnitDies::ParseAbbrevs(uint64_t offset) {
  if (offset >= s_.abbrev.size()) return false;
  const auto* base = reinterpret_cast<const uint8_t*>(s_.abbrev.data());
  DwarfCursor c(base + offset, base + s_.abbrev.size());
  abbrevs_.assign(1, Abbrev{});
  specs_.clear();
  std::vector<std::pair<uint64_t, uint32_t>> codes;
  uint64_t max_code = 0;
  for (;;) {
    const uint64_t code = c.Uleb();
    if (!c.ok()) return false;
    if (code == 0) break;
    Abbrev ab;
    const uint64_t tag = c.Uleb();
    ab.tag = tag > 0xffffffffu ? 0 : static_cast<uint32_t>(tag);
    ab.has_children = c.U8() == DW_CHILDREN_yes;  // as libdw: any other value is "no"
    ab.first_spec = static_cast<uint32_t>(specs_.size());
    int32_t fixed = 0;
    for (;;) {
      const uint64_t name = c.Uleb();
      const uint64_t form = c.Uleb();
      int64_t implicit = 0;
      if (form == DW_FORM_implicit_const) implicit = c.Sleb();
      if (!c.ok()) return false;
      if (name == 0 && form == 0) break;
      if (name > 0xffffffffu || form > 0xffffffffu) return false;
      const int size = FormSize(static_cast<uint32_t>(form));
      if (name == DW_AT_sibling && ab.sibling_spec < 0) {
        ab.sibling_spec = static_cast<int32_t>(specs_.size() - ab.first_spec);
        ab.sibling_at = fixed;  // -1 when an earlier attribute has a variable size
      }
      specs_.push_back({static_cast<uint32_t>(name), static_cast<uint32_t>(form), implicit, size});
      fixed = size < 0 || fixed < 0 ? -1 : fixed + size;
    }
    ab.spec_count = static_cast<uint32_t>(specs_.size()) - ab.first_spec;
    ab.fixed_size = fixed;
    codes.emplace_back(code, static_cast<uint32_t>(abbrevs_.size()));
    abbrevs_.push_back(ab);
    max_code = std::max(max_code, code);
  }
  // Compilers number abbreviations 1, 2, 3...: a direct table. Anything sparser: binary search.
  abbrev_by_code_.clear();
  sparse_.clear();
  if (max_code <= 4 * codes.size() + 64) {
    abbrev_by_code_.assign(max_code + 1, 0);
    for (const auto& [code, index] : codes) {
      if (abbrev_by_code_[code] == 0) abbrev_by_code_[code] = index;
    }
  } else {
    std::stable_sort(codes.begin(), codes.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    sparse_ = std::move(codes);
  }
  return true;
}

bool DwarfUnitDies::Open(const DieSections& sections, uint64_t unit_offset) {
  s_ = sections;
  ok_ = true;
  info_ = reinterpret_cast<const uint8_t*>(s_.info.data());
  if (unit_offset >= s_.info.size()) return Fail();
  DwarfCursor c(info_ + unit_offset, info_ + s_.info.size());
  uint64_t length = c.Fixed(4);
  offset_size_ = 4;
  if (length == 0xffffffffu) {
    offset_size_ = 8;
    length = c.Fixed(8);
  } else if (length >= 0xfffffff0u) {
    return Fail();
  }
  if (!c.ok() || length > c.left()) return Fail();
  unit_begin_ = unit_offset;
  unit_end_ = static_cast<uint64_t>(c.pos() - info_) + length;
  DwarfCursor h(c.pos(), info_ + unit_end_);
  version_ = static_cast<int>(h.Fixed(2));
  if (version_ < 2 || version_ > 5) return Fail();
  uint64_t abbrev_offset;
  if (version_ >= 5) {
    const uint8_t unit_type = h.U8();
    addr_size_ = h.U8();
    abbrev_offset = h.Fixed(offset_size_);
    // Skeleton, split and type units: libdw pairs them with their other halves.
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) return Fail();
  } else {
    abbrev_offset = h.Fixed(offset_size_);
    addr_size_ = h.U8();
  }
  if (!h.ok() || (addr_size_ != 4 && addr_size_ != 8)) return Fail();
  // Units often share one table (one per object file; one for a whole Go binary): a table is
  // parsed again only when it, or what its forms' sizes depend on, changes.
  const AbbrevKey key{s_.abbrev.data(), abbrev_offset, addr_size_, offset_size_, version_ <= 2};
  if (!(parsed_ == key)) {
    parsed_ = AbbrevKey{};
    if (!ParseAbbrevs(abbrev_offset)) return Fail();
    parsed_ = key;
  }
  unit_die_ = static_cast<uint64_t>(h.pos() - info_);

  Die cu;
  if (!ReadDie(unit_die_, &cu)) return Fail();
  if (cu.tag != DW_TAG_compile_unit && cu.tag != DW_TAG_partial_unit) return Fail();
  has_str_base_ = has_addr_base_ = has_rnglists_base_ = false;
  DieAttr low{}, entry{};
  bool has_low = false, has_entry = false, split = false;
  ForEachAttr(cu, [&](const DieAttr& a) {
    switch (a.name) {
      case DW_AT_str_offsets_base:
        str_offsets_base_ = a.value;
        has_str_base_ = true;
        break;
      case DW_AT_addr_base:
      case DW_AT_GNU_addr_base:
        addr_base_ = a.value;
        has_addr_base_ = true;
        break;
      case DW_AT_rnglists_base:
        rnglists_base_ = a.value;
        has_rnglists_base_ = true;
        break;
      case DW_AT_low_pc:
        low = a;
        has_low = true;
        break;
      case DW_AT_entry_pc:
        entry = a;
        has_entry = true;
        break;
      case DW_AT_GNU_dwo_name:
      case DW_AT_dwo_name:
      case DW_AT_GNU_dwo_id:
        split = true;
        break;
      default:
        break;
    }
  });
  if (!ok_ || split) return Fail();
  // A form indexing a table whose base the unit does not give (libdw then guesses from the
  // table's header) makes the unit libdw's: see AddressAt, String, Ranges.
  // The base address of range lists: low_pc, else entry_pc, else 0 (as libdw).
  base_address_ = 0;
  if (!(has_low && Address(low, &base_address_)) && has_entry) Address(entry, &base_address_);
  return ok_;
}

bool DwarfUnitDies::ReadDie(uint64_t offset, Die* die) {
  if (!ok_ || offset < unit_die_ || offset >= unit_end_) return Fail();
  const uint8_t* end = info_ + unit_end_;
  uint64_t code;
  const uint8_t* p = ReadUleb(info_ + offset, end, &code);
  if (p == nullptr) return Fail();
  die->offset = offset;
  die->attrs = static_cast<uint64_t>(p - info_);
  if (code == 0) {
    die->tag = 0;
    die->has_children = false;
    die->abbrev = 0;
    return false;
  }
  uint32_t index = 0;
  if (code < abbrev_by_code_.size()) {
    index = abbrev_by_code_[code];
  } else if (!sparse_.empty()) {
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(code, uint32_t{0}));
    if (it != sparse_.end() && it->first == code) index = it->second;
  }
  if (index == 0) return Fail();
  const Abbrev& ab = abbrevs_[index];
  die->tag = ab.tag;
  die->has_children = ab.has_children;
  die->abbrev = index;
  return true;
}

uint64_t DwarfUnitDies::AttrsEnd(const Die& die) {
  const Abbrev& ab = abbrevs_[die.abbrev];
  if (ab.fixed_size >= 0) {
    const uint64_t end = die.attrs + static_cast<uint64_t>(ab.fixed_size);
    if (end > unit_end_) {
      Fail();
      return 0;
    }
    return end;
  }
  const uint8_t* p = info_ + die.attrs;
  for (uint32_t i = 0; i < ab.spec_count && p != nullptr; ++i) {
    p = SkipValue(p, specs_[ab.first_spec + i]);
  }
  if (p == nullptr) {
    Fail();
    return 0;
  }
  return static_cast<uint64_t>(p - info_);
}

uint64_t DwarfUnitDies::SiblingTarget(const Die& die) {
  const Abbrev& ab = abbrevs_[die.abbrev];
  if (ab.sibling_spec < 0) return 0;
  DieAttr sibling{};
  if (ab.sibling_at >= 0) {  // read in place
    const uint64_t at = die.attrs + static_cast<uint64_t>(ab.sibling_at);
    const AttrSpec& spec = specs_[ab.first_spec + static_cast<uint32_t>(ab.sibling_spec)];
    if (at >= unit_end_ || ReadValue(info_ + at, spec, &sibling) == nullptr) {
      Fail();
      return 0;
    }
  } else if (ForEachAttr(
                 die, [&](const DieAttr& a) { sibling = a; },
                 [](uint32_t name) { return name == DW_AT_sibling; }) == 0) {
    return 0;
  }
  return CheckedSibling(die, sibling);
}

uint64_t DwarfUnitDies::CheckedSibling(const Die& die, const DieAttr& sibling) {
  // libdw jumps to any sibling it is given; one that does not lead forward inside this unit
  // is not followed here: the unit goes to libdw.
  uint64_t to;
  if (!LocalReference(sibling, &to) || to <= die.attrs) {
    Fail();
    return 0;
  }
  return to;
}

uint64_t DwarfUnitDies::Next(const Die& die) {
  const uint64_t sibling = SiblingTarget(die);
  if (!ok_) return 0;
  if (sibling != 0 && die.has_children) return sibling;
  const uint64_t attrs_end = AttrsEnd(die);
  if (attrs_end == 0) return 0;
  if (!die.has_children) {
    // A sibling on a childless DIE must be the next DIE (libdw would jump to it).
    if (sibling != 0 && sibling != attrs_end) {
      Fail();
      return 0;
    }
    return attrs_end;
  }
  return SkipSiblings(attrs_end);
}

uint64_t DwarfUnitDies::NextAfter(const Die& die, uint64_t attrs_end, const DieAttr& sibling) {
  if (attrs_end == 0) return 0;
  if (sibling.form == 0) return die.has_children ? SkipSiblings(attrs_end) : attrs_end;
  const uint64_t to = CheckedSibling(die, sibling);
  if (to == 0) return 0;
  if (!die.has_children && to != attrs_end) {
    Fail();
    return 0;
  }
  return to;
}

uint64_t DwarfUnitDies::SkipSiblings(uint64_t offset) {
  // Iterative: a hostile unit may nest as deep as it is long. Every step moves forward.
  uint64_t depth = 1;
  Die d;
  while (depth > 0) {
    if (!ReadDie(offset, &d)) {
      if (!ok_) return 0;
      offset = d.attrs;  // past the null entry
      --depth;
      continue;
    }
    const uint64_t sibling = d.has_children ? SiblingTarget(d) : 0;
    if (!ok_) return 0;
    if (sibling != 0) {
      offset = sibling;
      continue;
    }
    offset = d.has_children ? AttrsEnd(d) : Next(d);
    if (offset == 0) return 0;
    if (d.has_children) ++depth;
  }
  return offset;
}

bool DwarfUnitDies::AddressAt(uint64_t index, uint64_t* out) const {
  if (!has_addr_base_) return Fail();
  return TableEntry(s_.addr, addr_base_, index, addr_size_, out) || Fail();
}

bool DwarfUnitDies::Address(const DieAttr& a, uint64_t* out) const {
  if (a.form == DW_FORM_addr) {
    *out = a.value;
    return true;
  }
  if (IsAddrx(a.form)) return AddressAt(a.value, out);
  return false;
}

bool DwarfUnitDies::Constant(const DieAttr& a, uint64_t* out) const {
  switch (a.form) {
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_udata:
    case DW_FORM_sdata:
    case DW_FORM_implicit_const:
      *out = a.value;
      return true;
    default:
      return false;
  }
}

const char* DwarfUnitDies::String(const DieAttr& a) const {
  switch (a.form) {
    case DW_FORM_string:
      return a.data;
    case DW_FORM_strp:
      return SectionString(s_.str, a.value);
    case DW_FORM_line_strp:
      return SectionString(s_.line_str, a.value);
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
    case DW_FORM_GNU_str_index: {
      uint64_t off;
      if (!has_str_base_) {
        Fail();
        return nullptr;
      }
      if (!TableEntry(s_.str_offsets, str_offsets_base_, a.value, offset_size_, &off)) {
        return nullptr;
      }
      return SectionString(s_.str, off);
    }
    case DW_FORM_GNU_strp_alt:
    case DW_FORM_strp_sup:
      Fail();  // in a supplementary (dwz) file, which libdw finds
      return nullptr;
    default:
      return nullptr;
  }
}

bool DwarfUnitDies::LocalReference(const DieAttr& a, uint64_t* out) const {
  switch (a.form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
    case DW_FORM_ref_addr:
      if (a.value < unit_die_ || a.value >= unit_end_) return false;
      *out = a.value;
      return true;
    default:
      return false;
  }
}

bool DwarfUnitDies::Reference(const DieAttr& a, uint64_t* out) const {
  if (LocalReference(a, out)) return true;
  switch (a.form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
    case DW_FORM_ref_addr:  // another unit's DIE needs that unit's abbreviations: libdw's turn
    case DW_FORM_ref_sig8:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_ref_sup4:
    case DW_FORM_ref_sup8:
      return Fail();
    default:
      return false;
  }
}

bool DwarfUnitDies::Ranges(const DieAttr& a,
                           std::vector<std::pair<uint64_t, uint64_t>>* out) const {
  if (a.form == DW_FORM_rnglistx) {
    if (version_ < 5 || !has_rnglists_base_) return Fail();
    uint64_t rel;
    if (!TableEntry(s_.rnglists, rnglists_base_, a.value, offset_size_, &rel)) return Fail();
    return RangeList5(rnglists_base_ + rel, out);
  }
  const bool offset_form = a.form == DW_FORM_sec_offset ||
                           (version_ < 4 && (a.form == DW_FORM_data4 || a.form == DW_FORM_data8));
  if (!offset_form) return Fail();
  return version_ >= 5 ? RangeList5(a.value, out) : RangeList4(a.value, out);
}

bool DwarfUnitDies::RangeList4(uint64_t offset,
                               std::vector<std::pair<uint64_t, uint64_t>>* out) const {
  if (offset >= s_.ranges.size()) return Fail();
  const auto* base_p = reinterpret_cast<const uint8_t*>(s_.ranges.data());
  DwarfCursor c(base_p + offset, base_p + s_.ranges.size());
  const uint64_t escape = addr_size_ == 8 ? ~uint64_t{0} : 0xffffffffu;
  uint64_t base = base_address_;
  for (;;) {
    const uint64_t start = c.Fixed(addr_size_);
    const uint64_t end = c.Fixed(addr_size_);
    if (!c.ok()) return Fail();
    if (start == 0 && end == 0) return true;
    if (start == escape) {
      if (end == escape) return Fail();  // libdw: an error
      base = end;
      continue;
    }
    if (base + start < base + end) out->emplace_back(base + start, base + end);
  }
}

bool DwarfUnitDies::RangeList5(uint64_t offset,
                               std::vector<std::pair<uint64_t, uint64_t>>* out) const {
  if (offset >= s_.rnglists.size()) return Fail();
  const auto* base_p = reinterpret_cast<const uint8_t*>(s_.rnglists.data());
  DwarfCursor c(base_p + offset, base_p + s_.rnglists.size());
  uint64_t base = base_address_;
  auto add = [&](uint64_t lo, uint64_t hi) {
    if (lo < hi) out->emplace_back(lo, hi);
  };
  for (;;) {
    const uint8_t kind = c.U8();
    if (!c.ok()) return Fail();
    uint64_t a = 0, b = 0;
    switch (kind) {
      case DW_RLE_end_of_list:
        return true;
      case DW_RLE_base_addressx:
        if (!AddressAt(c.Uleb(), &base)) return false;
        break;
      case DW_RLE_startx_endx:
        if (!AddressAt(c.Uleb(), &a) || !AddressAt(c.Uleb(), &b)) return false;
        add(a, b);
        break;
      case DW_RLE_startx_length:
        if (!AddressAt(c.Uleb(), &a)) return false;
        add(a, a + c.Uleb());
        break;
      case DW_RLE_offset_pair:
        a = c.Uleb();
        b = c.Uleb();
        add(base + a, base + b);
        break;
      case DW_RLE_base_address:
        base = c.Fixed(addr_size_);
        break;
      case DW_RLE_start_end:
        a = c.Fixed(addr_size_);
        b = c.Fixed(addr_size_);
        add(a, b);
        break;
      case DW_RLE_start_length:
        a = c.Fixed(addr_size_);
        add(a, a + c.Uleb());
        break;
      default:
        return Fail();
    }
    if (!c.ok()) return Fail();
  }
}

}  // namespace hangwatch::symbols
