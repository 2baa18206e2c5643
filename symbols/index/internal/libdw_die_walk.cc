// LibdwDieWalk: the DIE walk through libdw.
#include "symbols/index/internal/libdw_die_walk.h"

#include <dwarf.h>

#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols::internal {

using index_format::kNone;

namespace {

// The first of linkage name, MIPS linkage name and name along the DIE's abstract_origin /
// specification chain.
const char* Name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
    if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
      if (const char* s = dwarf_formstring(&attr)) return s;
    }
  }
  return nullptr;
}

}  // namespace

int LibdwDieWalk::ScanAttr(Dwarf_Attribute* attr, void* arg) {
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

// Inlined and out-of-line instances name nothing themselves and point at their abstract
// origin: its name is computed once per origin.
NameCache::Entry* LibdwDieWalk::NodeName(Pending* p) {
  Dwarf_Die* die = &p->die;
  NodeAttrs& attrs = p->attrs;
  Dwarf_Die origin;
  if (!attrs.has_origin || attrs.has_name || dwarf_formref_die(&attrs.origin, &origin) == nullptr) {
    return names_->Get(Name(die));
  }
  auto [it, inserted] = names_->by_origin.try_emplace(dwarf_dieoffset(&origin), nullptr);
  if (inserted) it->second = names_->Get(Name(die));
  return it->second;
}

// The node of a subroutine, created when a range or a child's range first needs it.
uint32_t LibdwDieWalk::Materialize(Pending* p) {
  if (p->node != kNone) return p->node;
  const uint32_t parent = p->parent != nullptr ? Materialize(p->parent) : kNone;
  p->node =
      AddNode(parent, NodeName(p), p->attrs.call_file, p->attrs.call_line, p->attrs.call_column);
  return p->node;
}

// The DIE's address ranges, from the attributes of one scan: low_pc + high_pc as libdw's
// dwarf_highpc reads them, else DW_AT_ranges through dwarf_ranges. A DIE without any of them
// on itself has no code (declarations, abstract instances).
void LibdwDieWalk::Ranges(Pending* p) {
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

void LibdwDieWalk::Walk(Dwarf_Die* parent, Pending* sub, int depth) {
  Dwarf_Die child;
  if (depth > kMaxDieDepth || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      if (tag == DW_TAG_subprogram) die_map_->BeginGroup();
      Pending p{child, kNone, tag == DW_TAG_subprogram ? nullptr : sub, {}};
      dwarf_getattrs(&p.die, ScanAttr, &p.attrs, 0);
      Ranges(&p);
      // Cold path: a subroutine none of whose ranges holds an address changes no answer.
      if (!Wanted()) continue;
      // A subprogram without code (a declaration, an abstract instance) holds none either:
      // its children are the abstract parameters, variables and blocks of an inline function.
      if (ranges_.empty() && tag == DW_TAG_subprogram) continue;
      for (const auto& [lo, hi] : ranges_) die_map_->Insert(lo, hi, Materialize(&p));
      Walk(&child, &p, depth + 1);
    } else if (MayHoldCode(tag)) {
      Walk(&child, sub, depth + 1);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace hangwatch::symbols::internal
