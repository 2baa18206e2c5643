#include "js/v8_metadata.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>

#include "absl/status/status.h"
#include "symbols/elf_file.h"

namespace hangwatch::js {
namespace {

struct Symbol {
  uint64_t value = 0;
  uint64_t size = 0;
};

// The module's `v8dbg_*` dynamic symbols, and the range of its `Builtins_*` static symbols.
struct Exports {
  std::map<std::string, Symbol, std::less<>> constants;
  uint64_t builtins_lo = 0;
  uint64_t builtins_hi = 0;
  uint64_t text_lo = 0;  // the PF_X PT_LOAD segments' span
  uint64_t text_hi = 0;
};

Exports ReadExports(Elf* elf) {
  Exports e;
  symbols::ForEachElfSymbol(elf, SHT_DYNSYM,
                            [&](const GElf_Sym& sym, const char* name, std::string_view) {
                              if (sym.st_shndx == SHN_UNDEF) return;
                              if (std::strncmp(name, "v8dbg_", 6) != 0) return;
                              e.constants[name] = Symbol{sym.st_value, sym.st_size};
                            });
  if (e.constants.empty()) return e;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD ||
          (ph.p_flags & PF_X) == 0) {
        continue;
      }
      if (e.text_hi == 0 || ph.p_vaddr < e.text_lo) e.text_lo = ph.p_vaddr;
      e.text_hi = std::max(e.text_hi, ph.p_vaddr + ph.p_memsz);
    }
  }
  symbols::ForEachElfSymbol(
      elf, SHT_SYMTAB, [&](const GElf_Sym& sym, const char* name, std::string_view) {
        if (sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC) return;
        if (std::strncmp(name, "Builtins_", 9) != 0 || sym.st_value == 0) return;
        if (e.builtins_lo == 0 || sym.st_value < e.builtins_lo) e.builtins_lo = sym.st_value;
        e.builtins_hi = std::max(e.builtins_hi, sym.st_value + std::max<uint64_t>(sym.st_size, 1));
      });
  return e;
}

class ConstantReader {
 public:
  ConstantReader(const Exports& exports, uint64_t bias, const MemoryReader& memory)
      : exports_(exports), bias_(bias), memory_(memory) {}

  // The constant `name` (an int, or a 64-bit integer) into *out, within [lo, hi]; otherwise the
  // first failure is kept for the message.
  template <typename T>
  void Get(const char* name, T* out, int64_t lo, int64_t hi) {
    if (!failed_.empty()) return;
    auto it = exports_.constants.find(name);
    if (it == exports_.constants.end()) {
      failed_ = std::string(name) + " is not exported";
      return;
    }
    int64_t value = 0;
    if (it->second.size == 8) {
      if (!memory_.Read(bias_ + it->second.value, &value, 8)) failed_ = name;
    } else {
      int32_t v32 = 0;
      if (!memory_.Read(bias_ + it->second.value, &v32, 4)) failed_ = name;
      value = v32;
    }
    if (!failed_.empty()) {
      failed_ = std::string(name) + " cannot be read";
      return;
    }
    if (value < lo || value > hi) {
      failed_ = std::string(name) + " = " + std::to_string(value) + " is out of range";
      return;
    }
    *out = static_cast<T>(value);
  }
  const std::string& failed() const { return failed_; }

 private:
  const Exports& exports_;
  uint64_t bias_;
  const MemoryReader& memory_;
  std::string failed_;
};

constexpr int64_t kMaxOffset = 4096;  // any field this reader reads lies in an object's start
constexpr int64_t kMaxType = 0xffff;

absl::StatusOr<V8Metadata> ReadMetadata(const Exports& e, const std::string& path, uint64_t bias,
                                        const MemoryReader& memory) {
  V8Metadata m;
  m.module_path = path;
  m.load_bias = bias;
  if (e.builtins_hi > e.builtins_lo && e.builtins_lo != 0) {
    m.builtins_lo = bias + e.builtins_lo;
    m.builtins_hi = bias + e.builtins_hi;
  }
  if (e.text_hi > e.text_lo) {
    m.text_lo = bias + e.text_lo;
    m.text_hi = bias + e.text_hi;
  }
  ConstantReader r(e, bias, memory);
  int64_t smi_shift_size = 0;
  r.Get("v8dbg_HeapObjectTag", &m.heap_object_tag, 0, 7);
  r.Get("v8dbg_HeapObjectTagMask", &m.heap_object_tag_mask, 1, 7);
  r.Get("v8dbg_SmiTag", &m.smi_tag, 0, 7);
  r.Get("v8dbg_SmiTagMask", &m.smi_tag_mask, 1, 7);
  r.Get("v8dbg_SmiShiftSize", &smi_shift_size, 0, 62);
  r.Get("v8dbg_TaggedSize", &m.tagged_size, 4, 8);
  r.Get("v8dbg_off_fp_function", &m.fp_function, -kMaxOffset, kMaxOffset);
  r.Get("v8dbg_off_fp_context", &m.fp_context, -kMaxOffset, kMaxOffset);
  r.Get("v8dbg_off_fp_bytecode_array", &m.fp_bytecode_array, -kMaxOffset, kMaxOffset);
  r.Get("v8dbg_off_fp_bytecode_offset", &m.fp_bytecode_offset, -kMaxOffset, kMaxOffset);
  r.Get("v8dbg_type_JSFunction__JS_FUNCTION_TYPE", &m.type_js_function, 0, kMaxType);
  r.Get("v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", &m.type_shared_function_info, 0,
        kMaxType);
  r.Get("v8dbg_type_Script__SCRIPT_TYPE", &m.type_script, 0, kMaxType);
  r.Get("v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", &m.type_scope_info, 0, kMaxType);
  r.Get("v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE", &m.type_bytecode_array, 0, kMaxType);
  r.Get("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", &m.type_byte_array, 0, kMaxType);
  r.Get("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", &m.type_fixed_array, 0, kMaxType);
  r.Get("v8dbg_FirstNonstringType", &m.first_nonstring_type, 1, kMaxType);
  r.Get("v8dbg_StringRepresentationMask", &m.string_representation_mask, 1, kMaxType);
  r.Get("v8dbg_StringEncodingMask", &m.string_encoding_mask, 1, kMaxType);
  r.Get("v8dbg_OneByteStringTag", &m.one_byte_string_tag, 0, kMaxType);
  r.Get("v8dbg_SeqStringTag", &m.seq_string_tag, 0, kMaxType);
  r.Get("v8dbg_ConsStringTag", &m.cons_string_tag, 0, kMaxType);
  r.Get("v8dbg_SlicedStringTag", &m.sliced_string_tag, 0, kMaxType);
  r.Get("v8dbg_ThinStringTag", &m.thin_string_tag, 0, kMaxType);
  r.Get("v8dbg_class_HeapObject__map__Map", &m.heap_object_map, 0, kMaxOffset);
  r.Get("v8dbg_class_Map__instance_type__uint16_t", &m.map_instance_type, 0, kMaxOffset);
  r.Get("v8dbg_class_JSFunction__shared__SharedFunctionInfo", &m.js_function_shared, 0, kMaxOffset);
  r.Get("v8dbg_class_SharedFunctionInfo__function_data__Object", &m.sfi_function_data, 0,
        kMaxOffset);
  r.Get("v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object", &m.sfi_name_or_scope_info, 0,
        kMaxOffset);
  r.Get("v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject",
        &m.sfi_script_or_debug_info, 0, kMaxOffset);
  r.Get("v8dbg_class_Script__source__Object", &m.script_source, 0, kMaxOffset);
  r.Get("v8dbg_class_Script__name__Object", &m.script_name, 0, kMaxOffset);
  r.Get("v8dbg_class_Script__line_ends__Object", &m.script_line_ends, 0, kMaxOffset);
  r.Get("v8dbg_class_String__length__int32_t", &m.string_length, 0, kMaxOffset);
  r.Get("v8dbg_class_SeqOneByteString__chars__char", &m.seq_one_byte_chars, 0, kMaxOffset);
  r.Get("v8dbg_class_SeqTwoByteString__chars__char", &m.seq_two_byte_chars, 0, kMaxOffset);
  r.Get("v8dbg_class_ConsString__first__String", &m.cons_first, 0, kMaxOffset);
  r.Get("v8dbg_class_ConsString__second__String", &m.cons_second, 0, kMaxOffset);
  r.Get("v8dbg_class_SlicedString__parent__String", &m.sliced_parent, 0, kMaxOffset);
  r.Get("v8dbg_class_SlicedString__offset__SMI", &m.sliced_offset, 0, kMaxOffset);
  r.Get("v8dbg_class_ThinString__actual__String", &m.thin_actual, 0, kMaxOffset);
  r.Get("v8dbg_class_FixedArrayBase__length__SMI", &m.fixed_array_length, 0, kMaxOffset);
  r.Get("v8dbg_class_FixedArray__data__uintptr_t", &m.fixed_array_data, 0, kMaxOffset);
  r.Get("v8dbg_class_BytecodeArray__data__uintptr_t", &m.bytecode_array_data, 0, kMaxOffset);
  r.Get("v8dbg_scopeinfo_idx_ncontextlocals", &m.scope_info_context_local_count_index, 0, 64);
  r.Get("v8dbg_scopeinfo_idx_first_vars", &m.scope_info_first_vars_index, 0, 64);
  if (!r.failed().empty()) {
    return absl::FailedPreconditionError(path + ": V8's postmortem metadata: " + r.failed());
  }
  if (e.constants.count("v8dbg_class_Code__bytecode_or_interpreter_data__HeapObject") != 0) {
    r.Get("v8dbg_class_Code__bytecode_or_interpreter_data__HeapObject",
          &m.code_bytecode_or_interpreter_data, 0, kMaxOffset);
    if (!r.failed().empty()) m.code_bytecode_or_interpreter_data = -1;
  }
  // Smi tag bits plus the shift: 1 + 31 on x86_64 without pointer compression.
  m.smi_shift = static_cast<int>(smi_shift_size) + __builtin_popcountll(m.smi_tag_mask);
  if (m.tagged_size != 8) {
    return absl::FailedPreconditionError(path + ": V8 with pointer compression (tagged size " +
                                         std::to_string(m.tagged_size) + "): not read");
  }
  return m;
}

}  // namespace

absl::StatusOr<V8Metadata> LoadV8Metadata(const symbols::ProcessModules& modules,
                                          const MemoryReader& memory) {
  symbols::ElfLibraryInit();
  const auto all = modules.map->modules();
  for (size_t i = 0; i < all.size() && i < modules.open_paths.size(); ++i) {
    if (modules.open_paths[i].empty() || all[i].path == "[vdso]") continue;
    absl::StatusOr<std::unique_ptr<symbols::ElfFile>> file =
        symbols::ElfFile::Open(modules.open_paths[i]);
    if (!file.ok()) continue;
    const Exports e = ReadExports((*file)->elf());
    if (e.constants.count(kV8MetadataMarker) == 0) continue;
    return ReadMetadata(e, all[i].path, all[i].load_bias, memory);
  }
  return absl::NotFoundError("no module exports V8's postmortem metadata (v8dbg_*)");
}

}  // namespace hangwatch::js
