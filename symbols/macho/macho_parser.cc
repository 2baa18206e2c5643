#include "symbols/macho/macho_parser.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hangwatch::symbols::macho {
namespace {

// Little-endian reads at a checked offset: the caller has verified offset + width <= size.
uint32_t Read32(std::span<const unsigned char> b, size_t off) {
  return uint32_t{b[off]} | uint32_t{b[off + 1]} << 8 | uint32_t{b[off + 2]} << 16 |
         uint32_t{b[off + 3]} << 24;
}
uint64_t Read64(std::span<const unsigned char> b, size_t off) {
  return uint64_t{Read32(b, off)} | uint64_t{Read32(b, off + 4)} << 32;
}

// A fixed-size name field (segname[16]): up to the first NUL, at most 16 characters.
std::string FixedName(std::span<const unsigned char> b, size_t off) {
  size_t len = 0;
  while (len < 16 && b[off + len] != 0) ++len;
  return std::string(reinterpret_cast<const char*>(b.data() + off), len);
}

// Every refusal is the same kind: the bytes are not a well-formed image.
absl::Status Malformed(const std::string& message) { return absl::InvalidArgumentError(message); }

// A name read from the image, for a refusal: quoted, its control and other non-printable bytes
// escaped, so that the message stays one line and writes no terminal control sequences.
std::string Quoted(const std::string& name) { return "\"" + absl::CHexEscape(name) + "\""; }

std::string CommandContext(uint32_t index, size_t offset) {
  return absl::StrCat("load command ", index, " at offset ", offset, ": ");
}

absl::StatusOr<Segment> ParseSegment(std::span<const unsigned char> cmd, const std::string& where) {
  if (cmd.size() < kSegment64Size) {
    return Malformed(where + "LC_SEGMENT_64 cmdsize " + std::to_string(cmd.size()) +
                     " is smaller than the segment command (72)");
  }
  Segment seg;
  seg.name = FixedName(cmd, 8);
  seg.vmaddr = Read64(cmd, 24);
  seg.vmsize = Read64(cmd, 32);
  seg.fileoff = Read64(cmd, 40);
  seg.filesize = Read64(cmd, 48);
  seg.maxprot = Read32(cmd, 56);
  seg.initprot = Read32(cmd, 60);
  seg.nsects = Read32(cmd, 64);
  // Division, not multiplication: nsects * 80 could overflow.
  if (seg.nsects > (cmd.size() - kSegment64Size) / kSection64Size) {
    return Malformed(where + "segment " + Quoted(seg.name) + " declares " +
                     std::to_string(seg.nsects) + " sections, more than its cmdsize holds");
  }
  if (seg.vmsize > UINT64_MAX - seg.vmaddr) {
    return Malformed(where + "segment " + Quoted(seg.name) + " address range overflows");
  }
  if (seg.filesize > UINT64_MAX - seg.fileoff) {
    return Malformed(where + "segment " + Quoted(seg.name) + " file range overflows");
  }
  return seg;
}

absl::StatusOr<std::string> ParseDylibName(std::span<const unsigned char> cmd,
                                           const std::string& where) {
  if (cmd.size() < kDylibCommandSize) {
    return Malformed(where + "LC_ID_DYLIB cmdsize " + std::to_string(cmd.size()) +
                     " is smaller than the dylib command (24)");
  }
  const uint32_t name_offset = Read32(cmd, 8);
  if (name_offset < kDylibCommandSize || name_offset >= cmd.size()) {
    return Malformed(where + "LC_ID_DYLIB name offset " + std::to_string(name_offset) +
                     " is outside the command");
  }
  const auto* begin = reinterpret_cast<const char*>(cmd.data() + name_offset);
  const void* nul = std::memchr(begin, 0, cmd.size() - name_offset);
  if (nul == nullptr) {
    return Malformed(where + "LC_ID_DYLIB name is not NUL-terminated inside the command");
  }
  return std::string(begin, static_cast<const char*>(nul));
}

}  // namespace

std::string MachOImage::UuidHex() const {
  if (!has_uuid) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(32);
  for (uint8_t byte : uuid) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0xf]);
  }
  return hex;
}

const Segment* MachOImage::FindSegment(std::string_view name) const {
  for (const Segment& seg : segments) {
    if (seg.name == name) return &seg;
  }
  return nullptr;
}

size_t HeaderAndCommandsSize(std::span<const unsigned char> header) {
  if (header.size() < kHeader64Size || Read32(header, 0) != kMagic64) return 0;
  return kHeader64Size + size_t{Read32(header, 20)};
}

absl::StatusOr<MachOImage> ParseMachOImage(std::span<const unsigned char> bytes) {
  if (bytes.size() < 4) {
    return Malformed("truncated Mach-O: " + std::to_string(bytes.size()) + " bytes");
  }
  const uint32_t magic = Read32(bytes, 0);
  const uint32_t magic_be = __builtin_bswap32(magic);
  if (magic_be == kFatMagic) {
    return Malformed("universal (fat) Mach-O: parse one architecture's slice");
  }
  if (magic == kMagic32) {
    return Malformed("32-bit Mach-O is not supported");
  }
  if (magic == kCigam64) {
    return Malformed("big-endian Mach-O is not supported");
  }
  if (magic != kMagic64) {
    return Malformed("not a Mach-O image (bad magic)");
  }
  if (bytes.size() < kHeader64Size) {
    return Malformed("truncated Mach-O header: " + std::to_string(bytes.size()) + " of 32 bytes");
  }
  MachOImage image;
  image.cputype = Read32(bytes, 4);
  image.cpusubtype = Read32(bytes, 8);
  image.filetype = Read32(bytes, 12);
  const uint32_t ncmds = Read32(bytes, 16);
  const uint32_t sizeofcmds = Read32(bytes, 20);
  image.flags = Read32(bytes, 24);
  if (sizeofcmds > bytes.size() - kHeader64Size) {
    return Malformed("sizeofcmds " + std::to_string(sizeofcmds) + " runs past the " +
                     std::to_string(bytes.size()) + " bytes of the image");
  }
  // Every command is at least 8 bytes: more than sizeofcmds / 8 of them cannot be real, and
  // this bounds the loop below by the input size, whatever ncmds claims.
  if (ncmds > sizeofcmds / kLoadCommandSize) {
    return Malformed("ncmds " + std::to_string(ncmds) + " cannot fit in sizeofcmds " +
                     std::to_string(sizeofcmds));
  }
  const auto commands = bytes.subspan(kHeader64Size, sizeofcmds);
  size_t offset = 0;
  for (uint32_t i = 0; i < ncmds; ++i) {
    const std::string where = CommandContext(i, kHeader64Size + offset);
    if (commands.size() - offset < kLoadCommandSize) {
      return Malformed(where + "truncated: commands end inside it");
    }
    const uint32_t cmd = Read32(commands, offset);
    const uint32_t cmdsize = Read32(commands, offset + 4);
    if (cmdsize < kLoadCommandSize) {
      return Malformed(where + "cmdsize " + std::to_string(cmdsize) + " is too small");
    }
    if (cmdsize % 8 != 0) {
      return Malformed(where + "cmdsize " + std::to_string(cmdsize) + " is not 8-byte aligned");
    }
    if (cmdsize > commands.size() - offset) {
      return Malformed(where + "cmdsize " + std::to_string(cmdsize) + " runs past sizeofcmds");
    }
    const auto body = commands.subspan(offset, cmdsize);
    switch (cmd) {
      case kLcSegment64: {
        absl::StatusOr<Segment> seg = ParseSegment(body, where);
        if (!seg.ok()) return seg.status();
        image.segments.push_back(*std::move(seg));
        break;
      }
      case kLcUuid:
        if (cmdsize < kUuidCommandSize) {
          return Malformed(where + "LC_UUID cmdsize " + std::to_string(cmdsize) +
                           " is smaller than the uuid command (24)");
        }
        std::memcpy(image.uuid.data(), body.data() + 8, image.uuid.size());
        image.has_uuid = true;
        break;
      case kLcIdDylib: {
        absl::StatusOr<std::string> name = ParseDylibName(body, where);
        if (!name.ok()) return name.status();
        image.install_name = *std::move(name);
        break;
      }
      default:
        break;
    }
    offset += cmdsize;
  }
  return image;
}

}  // namespace hangwatch::symbols::macho
