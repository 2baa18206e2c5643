// MachOImage: the parts of a 64-bit Mach-O header and its load commands that a module map
// needs (segments with their protections, LC_UUID, the dylib install name), parsed from bytes.
//
// The bytes may be an image mapped by dyld in this process or a file read from disk, so nothing
// in them is trusted: every count and size is checked against the bytes actually present before
// it is used, and a malformed image is reported with one line of error, never read past.
//
// Portable (no <mach-o/*.h>): the constants it needs are mirrored below, and checked against the
// system headers where those exist (symbols/macho/dyld_modules.cc), so that the parser is
// unit-tested on Linux.
#ifndef HANGWATCH_SYMBOLS_MACHO_MACHO_PARSER_H_
#define HANGWATCH_SYMBOLS_MACHO_MACHO_PARSER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hangwatch::symbols::macho {

// From <mach-o/loader.h>, <mach-o/fat.h>, <mach/vm_prot.h>.
inline constexpr uint32_t kMagic64 = 0xfeedfacf;   // MH_MAGIC_64, little-endian host order
inline constexpr uint32_t kCigam64 = 0xcffaedfe;   // MH_CIGAM_64: byte-swapped
inline constexpr uint32_t kMagic32 = 0xfeedface;   // MH_MAGIC
inline constexpr uint32_t kFatMagic = 0xcafebabe;  // FAT_MAGIC, stored big-endian
inline constexpr uint32_t kLcSegment64 = 0x19;     // LC_SEGMENT_64
inline constexpr uint32_t kLcUuid = 0x1b;          // LC_UUID
inline constexpr uint32_t kLcIdDylib = 0x0d;       // LC_ID_DYLIB
inline constexpr uint32_t kVmProtExecute = 0x4;    // VM_PROT_EXECUTE
inline constexpr uint32_t kFileTypeExecute = 0x2;  // MH_EXECUTE
inline constexpr uint32_t kFileTypeDylib = 0x6;    // MH_DYLIB

// Sizes of the on-disk structures (mach_header_64, load_command, segment_command_64,
// section_64, uuid_command, dylib_command).
inline constexpr size_t kHeader64Size = 32;
inline constexpr size_t kLoadCommandSize = 8;
inline constexpr size_t kSegment64Size = 72;
inline constexpr size_t kSection64Size = 80;
inline constexpr size_t kUuidCommandSize = 24;
inline constexpr size_t kDylibCommandSize = 24;

struct Segment {
  std::string name;  // "__TEXT", "__DATA_CONST", ...
  uint64_t vmaddr = 0;
  uint64_t vmsize = 0;
  uint64_t fileoff = 0;
  uint64_t filesize = 0;
  uint32_t maxprot = 0;
  uint32_t initprot = 0;
  uint32_t nsects = 0;

  bool executable() const { return (initprot & kVmProtExecute) != 0; }
};

struct MachOImage {
  uint32_t cputype = 0;
  uint32_t cpusubtype = 0;
  uint32_t filetype = 0;
  uint32_t flags = 0;
  std::vector<Segment> segments;  // in load-command order
  bool has_uuid = false;
  std::array<uint8_t, 16> uuid{};
  std::string install_name;  // LC_ID_DYLIB's name, empty for executables

  // Lowercase hex of LC_UUID without dashes (32 characters), empty when there is none: the
  // same shape as an ELF build-id, so reports treat both alike.
  std::string UuidHex() const;
  // The first segment called `name`, or nullptr.
  const Segment* FindSegment(std::string_view name) const;
};

// Bytes a 64-bit image's header and load commands occupy, read from its first kHeader64Size
// bytes (mach_header_64::sizeofcmds + the header); 0 when `header` is not a 64-bit
// little-endian Mach-O header. Lets a caller that only holds a pointer (dyld's image header)
// build the exact span to parse.
size_t HeaderAndCommandsSize(std::span<const unsigned char> header);

// Parses a thin 64-bit little-endian Mach-O image (arm64, x86_64) starting at bytes[0]. Load
// commands other than the ones above are skipped (after their size is checked). Returns
// InvalidArgument with a one-line reason on anything malformed: wrong magic, fat or 32-bit file,
// truncated header or commands, sizeofcmds or ncmds that do not fit, a command whose cmdsize is
// smaller than its structure, not 8-byte aligned or runs past the end, a segment whose section
// count or address range overflows, a name that is not NUL-terminated inside its command.
absl::StatusOr<MachOImage> ParseMachOImage(std::span<const unsigned char> bytes);

}  // namespace hangwatch::symbols::macho

#endif  // HANGWATCH_SYMBOLS_MACHO_MACHO_PARSER_H_
