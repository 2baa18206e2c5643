// FastDieWalk: LibdwDieWalk's walk over our own DIE reader.
#include "symbols/index/internal/fast_die_walk.h"

#include <dwarf.h>

#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols::internal {

using index_format::kNone;

// The attributes ScanAttr looks at.
bool FastDieWalk::ScansAttr(uint32_t name) {
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

void FastDieWalk::ScanAttr(const DieAttr& a, Attrs* f) {
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

// The first of linkage name, MIPS linkage name and name found along the DIE's
// abstract_origin / specification chain (libdw's dwarf_attr_integrate: at most 17 DIEs).
const char* FastDieWalk::Name(uint64_t offset) {
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
                 name == DW_AT_name || name == DW_AT_abstract_origin || name == DW_AT_specification;
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

NameCache::Entry* FastDieWalk::NodeName(Pending* p) {
  uint64_t origin;
  if (!p->attrs.has_origin || p->attrs.has_name || !dies_->Reference(p->attrs.origin, &origin)) {
    return names_->Get(Name(p->offset));
  }
  if (auto it = names_->by_origin.find(origin); it != names_->by_origin.end()) return it->second;
  NameCache::Entry* name = names_->Get(Name(p->offset));
  // A failed read may have cut the chain short: such a name is not remembered.
  if (dies_->ok()) names_->by_origin.emplace(origin, name);
  return name;
}

uint32_t FastDieWalk::Materialize(Pending* p) {
  if (p->node != kNone) return p->node;
  const uint32_t parent = p->parent != nullptr ? Materialize(p->parent) : kNone;
  p->node =
      AddNode(parent, NodeName(p), p->attrs.call_file, p->attrs.call_line, p->attrs.call_column);
  return p->node;
}

// LibdwDieWalk::Ranges over our reader; false when the unit must go to libdw.
bool FastDieWalk::Ranges(const Pending& p) {
  ranges_.clear();
  const Attrs& a = p.attrs;
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

// LibdwDieWalk::Walk over our reader: the sibling list at `offset`. Returns the offset past its
// null entry, or 0 when the unit must go to libdw.
uint64_t FastDieWalk::Walk(uint64_t offset, Pending* sub, int depth) {
  if (depth > kMaxDieDepth) return dies_->SkipSiblings(offset);
  DwarfUnitDies::Die d;
  while (dies_->ReadDie(offset, &d)) {
    if (d.tag == DW_TAG_subprogram || d.tag == DW_TAG_inlined_subroutine) {
      if (d.tag == DW_TAG_subprogram) die_map_->BeginGroup();
      Pending p{d.offset, kNone, d.tag == DW_TAG_subprogram ? nullptr : sub, {}};
      const uint64_t attrs_end = dies_->ForEachAttr(
          d, [&](const DieAttr& a) { ScanAttr(a, &p.attrs); }, ScansAttr);
      if (attrs_end == 0 || !Ranges(p)) return 0;
      if (!Wanted() || (ranges_.empty() && d.tag == DW_TAG_subprogram)) {
        offset = dies_->NextAfter(d, attrs_end, p.attrs.sibling);
      } else {
        for (const auto& [lo, hi] : ranges_) die_map_->Insert(lo, hi, Materialize(&p));
        offset = d.has_children ? Walk(attrs_end, &p, depth + 1) : attrs_end;
        // libdw goes on at the sibling, wherever the children ended.
        if (offset != 0 && p.attrs.sibling.form != 0 &&
            dies_->NextAfter(d, attrs_end, p.attrs.sibling) != offset) {
          return 0;
        }
      }
    } else if (d.has_children && MayHoldCode(static_cast<int>(d.tag))) {
      const uint64_t sibling = dies_->SiblingTarget(d);
      offset = dies_->AttrsEnd(d);
      if (offset != 0) offset = Walk(offset, sub, depth + 1);
      if (sibling != 0 && offset != sibling) return 0;
    } else {
      offset = dies_->Next(d);
    }
    if (offset == 0 || !dies_->ok()) return 0;
  }
  return dies_->ok() ? d.attrs : 0;
}

bool FastDieWalk::Run(const DieSections& sections, uint64_t unit_offset) {
  if (!dies_->Open(sections, unit_offset)) return false;
  DwarfUnitDies::Die cu;
  if (!dies_->ReadDie(dies_->unit_die_offset(), &cu)) return false;
  if (!cu.has_children) return true;
  const uint64_t first = dies_->AttrsEnd(cu);
  return first != 0 && Walk(first, nullptr, 0) != 0 && dies_->ok();
}

}  // namespace hangwatch::symbols::internal
