// libFuzzer target: ReadLineTable (symbols/dwarf_image_lines.h), our own .debug_line decoder,
// on arbitrary bytes: the whole input is the .debug_line section (also standing in for the
// string sections), read from every offset a small header points at, with and without an
// address filter. Seeded with real .debug_line sections by the test that runs it.
#include <cstdint>
#include <string_view>
#include <vector>

#include "symbols/dwarf_image_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::symbols;  // NOLINT(build/namespaces)
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  LineSections sections{bytes, bytes, bytes};
  LineTable table;
  const std::vector<uint64_t> only = {0, 0x1000, 0x1139, 0x401000, ~uint64_t{0}};
  // Offset 0, then each unit that follows (unit_length chains), as the builder would visit.
  uint64_t offset = 0;
  for (int unit = 0; unit < 16 && offset < size; ++unit) {
    ReadLineTable(sections, offset, unit % 2 == 0 ? "/comp/dir" : nullptr, nullptr, &table);
    for (const LineRow& r : table.rows) {
      if (r.file < table.files.size()) (void)table.files[r.file].size();
    }
    ReadLineTable(sections, offset, "/comp/dir", &only, &table);
    if (size - offset < 4) break;
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i) length |= uint32_t{data[offset + i]} << (8 * i);
    if (length == 0 || length >= 0xfffffff0u) break;
    offset += 4 + uint64_t{length};
  }
  return 0;
}
