// libFuzzer target: SymbolIndex::FromBytes + lookups on arbitrary bytes (a truncated, corrupted
// or hostile index file must be refused or answer "??", never crash or loop).
#include <cstdint>
#include <cstring>
#include <string>

#include "symbols/index/symbol_index.h"
#include "symbols/index/symbol_index_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::symbols;  // NOLINT(build/namespaces)
  std::string bytes(reinterpret_cast<const char*>(data), size);
  // Most random inputs die at the magic check: give half of them a valid-looking header so
  // the fuzzer reaches the section tables quickly.
  if (size >= sizeof(index_format::Header) && (data[0] & 1)) {
    std::memcpy(bytes.data(), index_format::kMagic, sizeof(index_format::kMagic));
    const uint32_t version = index_format::kVersion, header = sizeof(index_format::Header);
    const uint64_t file_size = size;
    std::memcpy(bytes.data() + 8, &version, 4);
    std::memcpy(bytes.data() + 12, &header, 4);
    std::memcpy(bytes.data() + 16, &file_size, 8);
  }
  auto index = SymbolIndex::FromBytes(std::move(bytes));
  if (!index.ok()) return 0;
  SymbolizedAddress out;
  std::string text;
  for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
    uint64_t addr;
    std::memcpy(&addr, data + i, 8);
    (*index)->Lookup(addr, &out);
    (*index)->Lookup(addr & 0xffff, &out);
    AppendLlvmStyle(out, &text);
  }
  return 0;
}
