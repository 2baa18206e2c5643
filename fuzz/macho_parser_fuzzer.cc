// libFuzzer target: ParseMachOImage (symbols/macho/macho_parser.h) on arbitrary bytes, as a file
// read from disk would give them, then the accessors on what parses. Seeds: images built with the
// parser tests' MachOBuilder (HANGWATCH_FUZZ_WRITE_SEEDS=DIR writes them).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "symbols/macho/macho_parser.h"
#include "tests/symbols/macho_builder.h"

namespace {

using namespace hangwatch::symbols::macho;  // NOLINT(build/namespaces)

void WriteSeeds(const std::string& dir) {
  auto write = [&](const char* name, const std::vector<unsigned char>& bytes) {
    hangwatch::fuzz::WriteFile(
        dir + "/" + name,
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  };
  write("dylib", ValidDylib());
  write("executable", MachOBuilder()
                          .Segment("__PAGEZERO", 0, 0x100000000, 0)
                          .Segment("__TEXT", 0x100000000, 0x8000, 5, 3)
                          .Segment("__LINKEDIT", 0x100008000, 0x4000, 1)
                          .Uuid(kUuid)
                          .Build(kFileTypeExecute));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hangwatch::fuzz::WriteSeedsIfAsked(WriteSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  const size_t header_and_commands = HeaderAndCommandsSize(bytes);
  const auto image = ParseMachOImage(bytes);
  if (!image.ok()) {
    const std::string why(image.status().message());
    if (why.empty() || why.find('\n') != std::string::npos)
      __builtin_trap();  // one line saying why
    return 0;
  }
  if (header_and_commands == 0 || header_and_commands > size) __builtin_trap();
  if (image->has_uuid != (image->UuidHex().size() == 32)) __builtin_trap();
  for (const Segment& s : image->segments) {
    if (image->FindSegment(s.name) == nullptr) __builtin_trap();
  }
  return 0;
}
