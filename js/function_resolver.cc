#include "js/function_resolver.h"

#include <algorithm>
#include <vector>

#include "js/scope_info.h"
#include "js/source_positions.h"
#include "js/unpublished_layout.h"

namespace hangwatch::js {
namespace {

// A source position table larger than this is not read (one function of 64 KiB of entries is
// tens of thousands of statements).
constexpr int64_t kMaxPositionTable = 64 * 1024;
// Lines in a line_ends array searched (a binary search: ~25 reads).
constexpr int64_t kMaxLines = int64_t{1} << 24;

}  // namespace

bool FunctionResolver::Resolve(uint64_t sfi, FunctionInfo* out) const {
  const V8Metadata& m = heap_.metadata();
  uint16_t type = 0;
  if (!heap_.InstanceType(sfi, &type) || type != m.type_shared_function_info) return false;
  uint64_t name_or_scope = 0, script = 0;
  if (!heap_.Field(sfi, m.sfi_name_or_scope_info, &name_or_scope) ||
      !heap_.Field(sfi, m.sfi_script_or_debug_info, &script)) {
    return false;
  }
  *out = FunctionInfo{};
  ScopeInfoFacts facts;
  uint16_t name_type = 0;
  if (m.IsHeapObject(name_or_scope) && heap_.InstanceType(name_or_scope, &name_type)) {
    if (heap_.IsString(name_type)) {
      facts.name = name_or_scope;
    } else if (name_type == m.type_scope_info) {
      if (!ReadScopeInfo(heap_, name_or_scope, &facts)) return false;
    } else {
      return false;
    }
  } else if (name_or_scope != 0 && !m.IsSmi(name_or_scope)) {
    return false;
  }
  std::string name;
  if (facts.name != 0 && !heap_.ReadString(facts.name, kMaxName, &name)) return false;
  if (name.empty() && facts.inferred_name != 0) {
    heap_.ReadString(facts.inferred_name, kMaxName, &name);
  }
  out->name = name.empty() ? "(anonymous)" : name;
  uint16_t script_type = 0;
  if (heap_.InstanceType(script, &script_type) && script_type == m.type_script) {
    out->script_object = script;
    uint64_t script_name = 0;
    if (heap_.Field(script, m.script_name, &script_name) && m.IsHeapObject(script_name)) {
      heap_.ReadString(script_name, kMaxScript, &out->script);  // undefined: no name
    }
  }
  out->start_position = facts.start_position;
  if (out->script_object != 0 && out->start_position >= 0) {
    out->line = LineOf(out->script_object, out->start_position);
  }
  return true;
}

bool FunctionResolver::IsBytecodeOf(uint64_t sfi, uint64_t bytecode_array) const {
  const V8Metadata& m = heap_.metadata();
  uint64_t data = 0;
  if (!heap_.Field(sfi, m.sfi_function_data, &data)) return false;
  if (data == bytecode_array) return true;
  // Baseline code (or InterpreterData) in between: its bytecode field.
  uint64_t inner = 0;
  if (m.code_bytecode_or_interpreter_data >= 0 && m.IsHeapObject(data) &&
      heap_.Field(data, m.code_bytecode_or_interpreter_data, &inner) && inner == bytecode_array) {
    return true;
  }
  return false;
}

int64_t FunctionResolver::BytecodePosition(uint64_t bytecode_array, int64_t offset) const {
  const V8Metadata& m = heap_.metadata();
  uint16_t type = 0;
  if (!heap_.InstanceType(bytecode_array, &type) || type != m.type_bytecode_array) return -1;
  uint64_t table = 0;
  if (!heap_.Field(bytecode_array,
                   m.heap_object_map + m.tagged_size * v8_11::kBytecodeSourcePositionsSlot,
                   &table) ||
      !heap_.InstanceType(table, &type) || type != m.type_byte_array) {
    return -1;  // undefined (not collected yet) or the exception marker
  }
  uint64_t length = 0;
  if (!heap_.Field(table, m.fixed_array_length, &length) || !m.IsSmi(length)) return -1;
  const int64_t size = m.SmiValue(length);
  if (size <= 0 || size > kMaxPositionTable) return -1;
  // A ByteArray's bytes start where a FixedArray's elements do (both after map and length).
  std::vector<unsigned char> bytes(static_cast<size_t>(size));
  if (!heap_.memory().Read(m.Untag(table) + m.fixed_array_data, bytes.data(), bytes.size())) {
    return -1;
  }
  return ScriptOffsetAt(bytes.data(), bytes.size(), offset);
}

int FunctionResolver::LineOf(uint64_t script, int64_t position) const {
  const V8Metadata& m = heap_.metadata();
  uint64_t line_ends = 0;
  uint16_t type = 0;
  if (heap_.Field(script, m.script_line_ends, &line_ends) && heap_.InstanceType(line_ends, &type) &&
      type == m.type_fixed_array) {
    uint64_t length = 0;
    if (heap_.Field(line_ends, m.fixed_array_length, &length) && m.IsSmi(length) &&
        m.SmiValue(length) > 0 && m.SmiValue(length) <= kMaxLines) {
      // The first line whose end (its newline's position) is at or after `position`.
      int64_t lo = 0, hi = m.SmiValue(length);
      bool ok = true;
      while (lo < hi && ok) {
        const int64_t mid = lo + (hi - lo) / 2;
        uint64_t end = 0;
        ok = heap_.Field(line_ends, m.fixed_array_data + static_cast<int32_t>(8 * mid), &end) &&
             m.IsSmi(end);
        if (ok && m.SmiValue(end) < position) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (ok) return static_cast<int>(lo + 1);
    }
  }
  uint64_t source = 0;
  int line = 0;
  if (heap_.Field(script, m.script_source, &source) &&
      heap_.LineOfPosition(source, position, &line)) {
    return line;
  }
  return 0;
}

}  // namespace hangwatch::js
