// V8Metadata: the layout of V8's frames and heap objects that a JS frame reader needs, read
// from V8's own postmortem metadata: the `v8dbg_*` integer constants that V8 builds export
// (node's `v8_postmortem_support`, the data llnode and mdb_v8 read). Each constant is a dynamic
// symbol of the module holding V8 (the `node` executable, or `libnode.so` when node is linked
// that way) whose value, an int, is read from the process's memory at the symbol's address.
//
// Nothing here is a table of offsets per V8 version: a constant the module does not export
// makes LoadV8Metadata fail with one message naming it. The one exception is documented in
// scope_info.h (the flag bits of a ScopeInfo, which V8 does not publish) and each object read
// with it is checked by its type.
#ifndef HANGWATCH_JS_V8_METADATA_H_
#define HANGWATCH_JS_V8_METADATA_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "js/memory_reader.h"
#include "symbols/process_modules.h"

namespace hangwatch::js {

struct V8Metadata {
  std::string module_path;  // the module exporting the constants
  uint64_t load_bias = 0;
  // Where V8's builtins are (the embedded blob inside the module's text): the lowest and
  // highest `Builtins_*` symbol of its static symbol table; 0, 0 when that table is stripped.
  uint64_t builtins_lo = 0;
  uint64_t builtins_hi = 0;
  // The module's own executable segments (its ELF's PF_X PT_LOADs, lowest to highest). V8 may
  // map a second copy of the builtins elsewhere (short builtin calls: next to its JIT code),
  // backed by the same file: code of the module outside this range is that copy.
  uint64_t text_lo = 0;
  uint64_t text_hi = 0;

  // Tagging: a heap object pointer has (word & heap_object_tag_mask) == heap_object_tag; a Smi
  // has (word & smi_tag_mask) == smi_tag, its value word >> smi_shift (arithmetic).
  uint64_t heap_object_tag = 0;
  uint64_t heap_object_tag_mask = 0;
  uint64_t smi_tag = 0;
  uint64_t smi_tag_mask = 0;
  int smi_shift = 0;
  int tagged_size = 0;  // 8: no pointer compression (the only layout read)

  // A JavaScript frame: slots at these offsets from its frame pointer.
  int32_t fp_function = 0;
  int32_t fp_context = 0;
  int32_t fp_bytecode_array = 0;   // interpreted frames
  int32_t fp_bytecode_offset = 0;  // interpreted frames: a Smi, from the array's tagged start

  // Instance types.
  uint16_t type_js_function = 0;
  uint16_t type_shared_function_info = 0;
  uint16_t type_script = 0;
  uint16_t type_scope_info = 0;
  uint16_t type_bytecode_array = 0;
  uint16_t type_byte_array = 0;
  uint16_t type_fixed_array = 0;
  uint16_t first_nonstring_type = 0;
  // Strings: representation (type & mask) and encoding (type & mask) tags.
  uint16_t string_representation_mask = 0;
  uint16_t string_encoding_mask = 0;
  uint16_t one_byte_string_tag = 0;
  uint16_t seq_string_tag = 0;
  uint16_t cons_string_tag = 0;
  uint16_t sliced_string_tag = 0;
  uint16_t thin_string_tag = 0;

  // Field offsets (from an object's untagged start).
  int32_t heap_object_map = 0;
  int32_t map_instance_type = 0;  // uint16
  int32_t js_function_shared = 0;
  int32_t sfi_function_data = 0;
  int32_t sfi_name_or_scope_info = 0;
  int32_t sfi_script_or_debug_info = 0;
  int32_t script_source = 0;
  int32_t script_name = 0;
  int32_t script_line_ends = 0;
  int32_t string_length = 0;  // int32
  int32_t seq_one_byte_chars = 0;
  int32_t seq_two_byte_chars = 0;
  int32_t cons_first = 0;
  int32_t cons_second = 0;
  int32_t sliced_parent = 0;
  int32_t sliced_offset = 0;  // Smi
  int32_t thin_actual = 0;
  int32_t fixed_array_length = 0;  // Smi
  int32_t fixed_array_data = 0;
  int32_t bytecode_array_data = 0;
  // Optional (-1 when not exported): a baseline Code object's bytecode (or InterpreterData).
  int32_t code_bytecode_or_interpreter_data = -1;
  // ScopeInfo: its slots are tagged words after the map; these are slot indices.
  int32_t scope_info_context_local_count_index = 0;
  int32_t scope_info_first_vars_index = 0;

  bool IsHeapObject(uint64_t word) const {
    return (word & heap_object_tag_mask) == heap_object_tag;
  }
  bool IsSmi(uint64_t word) const { return (word & smi_tag_mask) == smi_tag; }
  int64_t SmiValue(uint64_t word) const { return static_cast<int64_t>(word) >> smi_shift; }
  // The untagged address of a heap object pointer.
  uint64_t Untag(uint64_t word) const { return word - heap_object_tag; }
};

// Finds the module of `modules` that exports V8's postmortem metadata and reads it through
// `memory` (the process those modules are mapped in). NotFound: no module exports it (not a V8
// process, or a V8 built without postmortem support); FailedPrecondition: a constant this
// reader needs is missing or out of range (the message names it).
absl::StatusOr<V8Metadata> LoadV8Metadata(const symbols::ProcessModules& modules,
                                          const MemoryReader& memory);

// The symbol every V8 build with postmortem metadata exports (the agent's cheap first test).
inline constexpr const char* kV8MetadataMarker = "v8dbg_off_fp_function";

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_V8_METADATA_H_
