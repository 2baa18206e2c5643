// DwarfUnitDies: the debugging information entries (DIEs) of one compilation unit, decoded
// straight from the mapped .debug_info and .debug_abbrev bytes.
//
// Why not libdw: building a symbol index walks every DIE that may hold code, and libdw 0.188
// rescans the abbreviation for each attribute it is asked for (__libdw_find_attr), takes a
// read-write lock per abbreviation lookup, and skips a subtree by decoding every attribute in
// it. On the 92 MB benchmark binary that was 40 % of an index build. This reader parses the
// abbreviation table once per unit into a flat array, skips a DIE whose attributes all have a
// fixed size with one addition, and jumps over subtrees by DW_AT_sibling.
//
// Scope: DWARF 2 to 5 compile and partial units (32- and 64-bit), every standard form and the
// GNU extensions that compilers emit; addrx / strx / rnglistx through the unit's bases; range
// lists of .debug_ranges and .debug_rnglists. What it cannot answer exactly as libdw would (type,
// skeleton and split units, references into other units or into a supplementary file,
// DW_FORM_indirect, a table index without the unit's base for it, a sibling that does not lead
// forward, malformed data) fails the walk (ok() false), and the caller reads that unit with
// libdw instead.
//
// Every read is bounds-checked; offsets only move forward while walking, so hostile input ends
// the walk (ok() false) instead of reading out of bounds or looping.
#ifndef HANGWATCH_SYMBOLS_DWARF_DIE_READER_H_
#define HANGWATCH_SYMBOLS_DWARF_DIE_READER_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace hangwatch::symbols {

// The sections DIEs refer to (empty views when absent), uncompressed.
struct DieSections {
  std::string_view info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists;
};

// One attribute as stored: `value` is the constant, address, offset, index or reference
// (unit-relative references already made section-relative); `data` points at an in-place
// string (DW_FORM_string). Interpret with DwarfUnitDies' accessors.
struct DieAttr {
  uint32_t name;
  uint32_t form;
  uint64_t value;
  const char* data;
};

class DwarfUnitDies {
 public:
  // Parses the unit header at `unit_offset` of sections.info, its abbreviation table and its
  // unit DIE (for the string, address and range-list bases). False when the unit is not one
  // this reader handles or is malformed.
  bool Open(const DieSections& sections, uint64_t unit_offset);

  struct Die {
    uint64_t offset = 0;  // of the DIE in .debug_info
    uint64_t attrs = 0;   // of its first attribute (past a null entry: of what follows it)
    uint32_t tag = 0;
    bool has_children = false;
    uint32_t abbrev = 0;  // index into the parsed table
  };

  // The DIE at `offset`. False at a null entry (the end of a sibling list; ok() stays true) or
  // on an error (ok() turns false).
  bool ReadDie(uint64_t offset, Die* die);
  // Calls f(const DieAttr&) for each attribute of `die`, in order; returns the offset just past
  // them (the first child, when the DIE has children), or 0 on an error.
  template <typename F>
  uint64_t ForEachAttr(const Die& die, F&& f) {
    return ForEachAttr(die, std::forward<F>(f), [](uint32_t) { return true; });
  }
  // Same, for the attributes whose name `wanted(name)` accepts; the others are skipped
  // without being decoded.
  template <typename F, typename W>
  uint64_t ForEachAttr(const Die& die, F&& f, W&& wanted);
  // The offset just past the DIE's attributes, without decoding what is not needed.
  uint64_t AttrsEnd(const Die& die);
  // The offset of the DIE after `die` and all its children: DW_AT_sibling when present, else
  // by skipping the subtree. 0 on an error, and on a sibling libdw would follow differently
  // (backwards, outside the unit, or on a childless DIE not to the next one).
  uint64_t Next(const Die& die);
  // The DIE's DW_AT_sibling target, 0 when it has none (or on an error, ok() then false).
  uint64_t SiblingTarget(const Die& die);
  // Same, for a caller that has decoded the attributes already: `attrs_end` from ForEachAttr,
  // `sibling` the DW_AT_sibling attribute (form 0 when there is none).
  uint64_t NextAfter(const Die& die, uint64_t attrs_end, const DieAttr& sibling);
  // The offset after the null entry that ends the sibling list starting at `offset`.
  uint64_t SkipSiblings(uint64_t offset);

  // Interpretations of an attribute; false (or null) when its form is not of that class or it
  // cannot be resolved here.
  bool Address(const DieAttr& a, uint64_t* out) const;    // addr, addrx*
  bool Constant(const DieAttr& a, uint64_t* out) const;   // data*, udata, sdata, implicit_const
  const char* String(const DieAttr& a) const;             // string, strp, line_strp, strx*
  bool Reference(const DieAttr& a, uint64_t* out) const;  // a DIE of this unit (section offset)
  // Address ranges of a DW_AT_ranges attribute, appended to `out` as [lo, hi) with lo < hi.
  bool Ranges(const DieAttr& a, std::vector<std::pair<uint64_t, uint64_t>>* out) const;

  bool ok() const { return ok_; }
  int version() const { return version_; }
  uint64_t unit_die_offset() const { return unit_die_; }

 private:
  struct AttrSpec {
    uint32_t name;
    uint32_t form;
    int64_t implicit_const;
    int32_t size;  // FormSize(form), computed once
  };
  struct Abbrev {
    uint32_t tag = 0;
    bool has_children = false;
    uint32_t first_spec = 0, spec_count = 0;
    // Bytes of the attributes when every form has a fixed size, else -1.
    int32_t fixed_size = -1;
    // Index among the specs of DW_AT_sibling, or -1.
    int32_t sibling_spec = -1;
    // Byte offset of DW_AT_sibling's value when every attribute before it has a fixed size
    // (GCC puts it first), else -1: the sibling is then read without decoding anything else.
    int32_t sibling_at = -1;
  };

  bool ParseAbbrevs(uint64_t offset);
  // Decodes one attribute value at `p`; returns the position after it, or null on an error.
  const uint8_t* ReadValue(const uint8_t* p, const AttrSpec& spec, DieAttr* out) const;
  // The position after the value at `p`, or null on an error.
  const uint8_t* SkipValue(const uint8_t* p, const AttrSpec& spec) const;
  // Fixed byte size of a form in this unit, or -1 (variable, or unknown).
  int FormSize(uint32_t form) const;
  // Marks the walk failed (errors, and what only libdw resolves); returns false.
  bool Fail() const {
    ok_ = false;
    return false;
  }
  // The target of a DW_AT_sibling attribute of `die`, or 0 with the walk failed when it does
  // not lead forward inside the unit.
  uint64_t CheckedSibling(const Die& die, const DieAttr& sibling);
  bool RangeList4(uint64_t offset, std::vector<std::pair<uint64_t, uint64_t>>* out) const;
  bool RangeList5(uint64_t offset, std::vector<std::pair<uint64_t, uint64_t>>* out) const;
  bool AddressAt(uint64_t index, uint64_t* out) const;
  // A reference to a DIE of this unit; false otherwise (without failing the walk).
  bool LocalReference(const DieAttr& a, uint64_t* out) const;

  DieSections s_;
  const uint8_t* info_ = nullptr;  // section start
  uint64_t unit_begin_ = 0, unit_end_ = 0, unit_die_ = 0;
  int version_ = 0;
  unsigned offset_size_ = 4, addr_size_ = 8;
  uint64_t str_offsets_base_ = 0, addr_base_ = 0, rnglists_base_ = 0, base_address_ = 0;
  bool has_str_base_ = false, has_addr_base_ = false, has_rnglists_base_ = false;
  mutable bool ok_ = true;
  // What the parsed abbreviation table was parsed for.
  struct AbbrevKey {
    const char* section = nullptr;
    uint64_t offset = 0;
    unsigned addr_size = 0, offset_size = 0;
    bool dwarf2 = false;  // DW_FORM_ref_addr is address-sized
    bool operator==(const AbbrevKey& o) const {
      return section == o.section && offset == o.offset && addr_size == o.addr_size &&
             offset_size == o.offset_size && dwarf2 == o.dwarf2;
    }
  };
  AbbrevKey parsed_;
  std::vector<AttrSpec> specs_;
  std::vector<Abbrev> abbrevs_;                        // index 0 unused
  std::vector<uint32_t> abbrev_by_code_;               // dense codes -> index (0 = none)
  std::vector<std::pair<uint64_t, uint32_t>> sparse_;  // else sorted (code, index)
};

// ---------------------------------------------------------------- inline implementation

template <typename F, typename W>
uint64_t DwarfUnitDies::ForEachAttr(const Die& die, F&& f, W&& wanted) {
  const Abbrev& ab = abbrevs_[die.abbrev];
  const uint8_t* p = info_ + die.attrs;  // ReadDie checked it
  for (uint32_t i = 0; i < ab.spec_count; ++i) {
    const AttrSpec& spec = specs_[ab.first_spec + i];
    if (!wanted(spec.name)) {
      p = SkipValue(p, spec);
      if (p == nullptr) {
        Fail();
        return 0;
      }
      continue;
    }
    DieAttr a;
    p = ReadValue(p, spec, &a);
    if (p == nullptr) {
      Fail();
      return 0;
    }
    f(a);
  }
  return static_cast<uint64_t>(p - info_);
}

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DWARF_DIE_READER_H_
