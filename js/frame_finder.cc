#include "js/frame_finder.h"

#include <algorithm>
#include <cstring>

namespace hangwatch::js {
namespace {

// Reads every range; those that fail are zeroed (a batch stops at its first failure: the rest
// is read again after it).
void ReadAll(const MemoryReader& memory, ReadRange* ranges, size_t count) {
  size_t at = 0;
  while (at < count) {
    at += memory.ReadV(ranges + at, count - at);
    if (at < count) {
      std::memset(ranges[at].out, 0, ranges[at].size);
      ++at;
    }
  }
}

}  // namespace

FrameFinder::FrameFinder(const V8Metadata& metadata, const MemoryReader& memory, size_t max_frames)
    : m_(metadata),
      memory_(memory),
      max_frames_(std::max<size_t>(max_frames, 1)),
      candidates_(new Candidate[max_frames_]),
      ranges_(new ReadRange[3 * max_frames_]) {}

size_t FrameFinder::Candidates(const uintptr_t* pcs, size_t n, const unwind::MemoryView& stack) {
  size_t count = 0;
  if (stack.size < 16) return 0;
  // The lowest slot the next return address may be in: slots ascend with the frames.
  uintptr_t from = stack.base;
  const uintptr_t end = stack.base + stack.size - sizeof(uintptr_t);
  for (size_t i = 0; i + 1 < n && count < max_frames_; ++i) {
    // The slot holding frame i+1's pc (frame i's return address), at or above `from`.
    uintptr_t slot = 0;
    for (uintptr_t a = (from + 7) & ~uintptr_t{7}; a <= end; a += 8) {
      uintptr_t word = 0;
      stack.ReadWord(a, &word);
      if (word == pcs[i + 1]) {
        slot = a;
        break;
      }
    }
    if (slot == 0) break;  // beyond the copy: so are the outer frames' slots
    from = slot + 8;
    if (filter_ != nullptr && !filter_(filter_context_, pcs[i])) continue;
    const uint64_t fp = slot - 8;
    uintptr_t context = 0, function = 0;
    if (!stack.ReadWord(fp + m_.fp_context, &context) ||
        !stack.ReadWord(fp + m_.fp_function, &function) || !m_.IsHeapObject(context) ||
        !m_.IsHeapObject(function)) {
      continue;
    }
    Candidate& c = candidates_[count++];
    c = Candidate{};
    c.index = i;
    c.fp = fp;
    c.function = function;
    uintptr_t array = 0, offset = 0;
    if (stack.ReadWord(fp + m_.fp_bytecode_array, &array) &&
        stack.ReadWord(fp + m_.fp_bytecode_offset, &offset) && m_.IsHeapObject(array) &&
        m_.IsSmi(offset)) {
      c.bytecode_array = array;
      c.bytecode_offset = offset;
    }
  }
  return count;
}

size_t FrameFinder::Find(const uintptr_t* pcs, size_t n, const unwind::MemoryView& stack,
                         JsFrame* out) {
  const size_t count = Candidates(pcs, n, stack);
  if (count == 0) return 0;
  ReadRange* r = ranges_.get();
  // 1. Each function's map and shared.
  for (size_t i = 0; i < count; ++i) {
    Candidate& c = candidates_[i];
    r[2 * i] = ReadRange{m_.Untag(c.function) + m_.heap_object_map, &c.header[0], 8};
    r[2 * i + 1] = ReadRange{m_.Untag(c.function) + m_.js_function_shared, &c.header[1], 8};
  }
  ReadAll(memory_, r, 2 * count);
  // 2. The map's instance type; the SharedFunctionInfo's map, name or scope info, script.
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    Candidate& c = candidates_[i];
    c.function_type = 0;
    c.sfi_type = 0;
    std::memset(c.sfi_header, 0, sizeof(c.sfi_header));
    if (!m_.IsHeapObject(c.header[0]) || !m_.IsHeapObject(c.header[1])) continue;
    r[k++] = ReadRange{m_.Untag(c.header[0]) + m_.map_instance_type, &c.function_type, 2};
  }
  ReadAll(memory_, r, k);
  k = 0;
  for (size_t i = 0; i < count; ++i) {
    Candidate& c = candidates_[i];
    if (c.function_type < m_.type_js_function ||
        c.function_type >= m_.type_js_function + kFunctionTypeSpan) {
      continue;
    }
    const uint64_t sfi = m_.Untag(c.header[1]);
    r[k++] = ReadRange{sfi + m_.heap_object_map, &c.sfi_header[0], 8};
    r[k++] = ReadRange{sfi + m_.sfi_name_or_scope_info, &c.sfi_header[1], 8};
    r[k++] = ReadRange{sfi + m_.sfi_script_or_debug_info, &c.sfi_header[2], 8};
  }
  ReadAll(memory_, r, k);
  // 3. The SharedFunctionInfo's instance type.
  k = 0;
  for (size_t i = 0; i < count; ++i) {
    Candidate& c = candidates_[i];
    if (!m_.IsHeapObject(c.sfi_header[0])) continue;
    r[k++] = ReadRange{m_.Untag(c.sfi_header[0]) + m_.map_instance_type, &c.sfi_type, 2};
  }
  ReadAll(memory_, r, k);
  size_t found = 0;
  for (size_t i = 0; i < count; ++i) {
    const Candidate& c = candidates_[i];
    if (c.sfi_type != m_.type_shared_function_info) continue;
    JsFrame& f = out[found++];
    f = JsFrame{};
    f.index = c.index;
    f.sfi = c.header[1];
    f.sfi_name_or_scope = c.sfi_header[1];
    f.sfi_script = c.sfi_header[2];
    // The innermost frame was interrupted, not calling: the interpreter keeps its offset in a
    // register and stores it only at calls and stack checks, so the slot may be far behind
    // (the function's entry while a loop spins): no offset, the function's first line instead.
    if (c.bytecode_array != 0 && c.index > 0) {
      f.bytecode_array = c.bytecode_array;
      // The slot holds the offset from the array's tagged pointer: header size minus the tag.
      f.bytecode_offset = m_.SmiValue(c.bytecode_offset) -
                          (m_.bytecode_array_data - static_cast<int64_t>(m_.heap_object_tag));
      if (f.bytecode_offset < 0) {
        f.bytecode_array = 0;
        f.bytecode_offset = -1;
      }
    }
  }
  return found;
}

}  // namespace hangwatch::js
