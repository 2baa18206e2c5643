// libFuzzer target: the index builder (libelf + libdw + our DWARF walk, decompression, symbol
// tables, MiniDebugInfo) on arbitrary / mutated ELF files, then lookups in the result. Seeded
// with real binaries by the test that runs it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "symbols/elf_symbol_table.h"
#include "symbols/symbol_index.h"
#include "symbols/symbol_index_builder.h"

namespace {

std::string TempPath() {
  static std::string path = [] {
    char tmpl[] = "/tmp/hw-fuzz-elf-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    return std::string(tmpl);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::symbols;  // NOLINT(build/namespaces)
  const std::string path = TempPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  auto table =
      ElfSymbolTable::LoadFromMemory(std::string_view(reinterpret_cast<const char*>(data), size));
  if (table.ok()) {
    for (uint64_t a : {uint64_t{0x1000}, uint64_t{0x401000}, uint64_t{0x1139}}) {
      if (auto* s = (*table)->Find(a)) (void)(*table)->DemangledName(*s);
    }
  }

  SymbolIndexOptions options;
  options.debug_path = options.symbols_path = path;
  options.threads = 1;
  auto bytes = BuildSymbolIndex(options);
  if (!bytes.ok()) return 0;
  auto index = SymbolIndex::FromBytes(std::move(*bytes));
  if (!index.ok()) __builtin_trap();  // the builder's own output must always load
  SymbolizedAddress out;
  std::string text;
  for (uint64_t a = 0; a < 0x3000; a += 0x11) {
    (*index)->Lookup(a, &out);
    (*index)->Lookup(a + 0x400000, &out);
    AppendLlvmStyle(out, &text);
  }
  return 0;
}
