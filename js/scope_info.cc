#include "js/scope_info.h"

#include <vector>

#include "js/unpublished_layout.h"

namespace hangwatch::js {
namespace {

// Context locals a ScopeInfo may have and still be read (its slots are read in one go).
constexpr int64_t kMaxContextLocals = 1024;

}  // namespace

bool ReadScopeInfo(const HeapReader& heap, uint64_t scope_info, ScopeInfoFacts* out) {
  const V8Metadata& m = heap.metadata();
  const uint64_t slots = m.Untag(scope_info) + m.heap_object_map + m.tagged_size;
  uint64_t header[3] = {};
  const int32_t count_index = m.scope_info_context_local_count_index;
  if (count_index < 1 || count_index > 2 ||
      !heap.memory().Read(slots, header, sizeof(uint64_t) * (count_index + 1))) {
    return false;
  }
  if (!m.IsSmi(header[0]) || !m.IsSmi(header[count_index])) return false;
  const uint32_t flags = static_cast<uint32_t>(m.SmiValue(header[0]));
  const int64_t locals = m.SmiValue(header[count_index]);
  if (locals < 0 || locals > kMaxContextLocals) return false;
  const bool inlined_names = locals < v8_11::kMaxInlinedLocalNames;
  const int64_t names_slots = inlined_names ? locals : 1;
  // locals' names, their infos, then at most 1 + 2 + 1 + 2 optional slots.
  const int64_t first = m.scope_info_first_vars_index;
  const int64_t total = first + names_slots + locals + 6;
  std::vector<uint64_t> words(static_cast<size_t>(total));
  // The optional slots that are absent may lie past the object's end: read what can be read.
  int64_t readable = total;
  while (readable > first && readable > total - 7 &&
         !heap.memory().Read(slots, words.data(), sizeof(uint64_t) * readable)) {
    readable -= 1;
  }
  if (readable <= first || readable <= total - 7) return false;
  auto slot = [&](int64_t i, uint64_t* w) {
    if (i >= readable) return false;
    *w = words[static_cast<size_t>(i)];
    return true;
  };
  int64_t at = first;
  for (int64_t i = 0; i < names_slots; ++i, ++at) {
    uint64_t w = 0;
    if (!slot(at, &w) || !m.IsHeapObject(w)) return false;
  }
  for (int64_t i = 0; i < locals; ++i, ++at) {
    uint64_t w = 0;
    if (!slot(at, &w) || !m.IsSmi(w)) return false;
  }
  if ((flags & v8_11::kHasSavedClassVariable) != 0) ++at;
  auto is_string = [&](uint64_t w) {
    uint16_t type = 0;
    return heap.InstanceType(w, &type) && heap.IsString(type);
  };
  if (((flags >> v8_11::kFunctionVariableShift) & 3) != 0) {
    uint64_t name = 0, index = 0;
    if (!slot(at, &name) || !slot(at + 1, &index) || !m.IsSmi(index)) return false;
    if (m.IsHeapObject(name)) {
      if (!is_string(name)) return false;
      out->name = name;
    } else if (name != 0) {
      return false;
    }
    at += 2;
  }
  if ((flags & v8_11::kHasInferredFunctionName) != 0) {
    uint64_t inferred = 0;
    if (!slot(at, &inferred) || !m.IsHeapObject(inferred)) return false;
    if (is_string(inferred)) out->inferred_name = inferred;  // else undefined
    ++at;
  }
  if ((flags & v8_11::kScopeTypeMask) == v8_11::kFunctionScope) {
    uint64_t start = 0, end = 0;
    if (!slot(at, &start) || !slot(at + 1, &end) || !m.IsSmi(start) || !m.IsSmi(end)) {
      return false;
    }
    if (m.SmiValue(start) < 0 || m.SmiValue(end) < m.SmiValue(start)) return false;
    out->start_position = m.SmiValue(start);
    out->end_position = m.SmiValue(end);
  }
  return true;
}

}  // namespace hangwatch::js
