// SubroutineNodes: the inline-tree nodes both DIE walks create.
#include "symbols/index/internal/subroutine_nodes.h"

#include <dwarf.h>

#include <algorithm>

#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols::internal {

using index_format::kNone;

namespace {

uint32_t Clamp(uint64_t v) { return v > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(v); }

}  // namespace

// Types (classes, structs, unions, enums...) only declare member functions: GCC and Clang put
// the definitions (DW_AT_specification) at namespace or unit level, so type subtrees, the bulk
// of C++ DWARF, are skipped.
bool SubroutineNodes::MayHoldCode(int tag) {
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

bool SubroutineNodes::Wanted() const {
  bool wanted = only_ == nullptr;
  for (size_t i = 0; i < ranges_.size() && !wanted; ++i) {
    auto it = std::lower_bound(only_->begin(), only_->end(), ranges_[i].first);
    wanted = it != only_->end() && *it < ranges_[i].second;
  }
  return wanted;
}

uint32_t SubroutineNodes::AddNode(uint32_t parent, NameCache::Entry* name, uint64_t call_file,
                                  uint64_t call_line, uint64_t call_column) {
  IndexUnit::LocalNode node{kNone, parent, 0, 0, 0};
  if (name != nullptr) {
    if (name->unit != *unit_) {  // first use in this unit
      name->unit = *unit_;
      name->local = static_cast<uint32_t>(out_->names.size());
      out_->names.push_back(&name->demangled);
    }
    node.name = name->local;
  }
  node.call_file = Clamp(call_file);
  node.call_line = Clamp(call_line);
  node.call_column = Clamp(call_column);
  const auto index = static_cast<uint32_t>(out_->nodes.size());
  out_->nodes.push_back(node);
  return index;
}

}  // namespace hangwatch::symbols::internal
