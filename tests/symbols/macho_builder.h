// MachOBuilder: writes 64-bit little-endian Mach-O images one load command at a time, for the
// parser's tests (macho_parser_test.cc) and the seeds of its fuzz target
// (fuzz/macho_parser_fuzzer.cc).
#ifndef HANGWATCH_TESTS_SYMBOLS_MACHO_BUILDER_H_
#define HANGWATCH_TESTS_SYMBOLS_MACHO_BUILDER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "symbols/macho/macho_parser.h"

namespace hangwatch::symbols::macho {

inline constexpr uint32_t kCpuTypeArm64 = 0x0100000c;
inline constexpr std::array<uint8_t, 16> kUuid = {0x4c, 0x4c, 0x44, 0x9f, 0x55, 0x55, 0x31, 0x44,
                                                  0xa1, 0x2b, 0x9b, 0x1e, 0x0e, 0x2f, 0x5d, 0x01};

class MachOBuilder {
 public:
  MachOBuilder& Segment(const std::string& name, uint64_t vmaddr, uint64_t vmsize,
                        uint32_t initprot, uint32_t nsects = 0) {
    std::vector<unsigned char> c;
    Put32(c, kLcSegment64);
    Put32(c, static_cast<uint32_t>(kSegment64Size + nsects * kSection64Size));
    std::string padded = name;
    padded.resize(16, '\0');
    c.insert(c.end(), padded.begin(), padded.end());
    Put64(c, vmaddr);
    Put64(c, vmsize);
    Put64(c, 0);       // fileoff
    Put64(c, vmsize);  // filesize
    Put32(c, initprot);
    Put32(c, initprot);
    Put32(c, nsects);
    Put32(c, 0);  // flags
    c.resize(kSegment64Size + nsects * kSection64Size, 0);
    commands_.push_back(c);
    return *this;
  }
  MachOBuilder& Uuid(const std::array<uint8_t, 16>& uuid) {
    std::vector<unsigned char> c;
    Put32(c, kLcUuid);
    Put32(c, kUuidCommandSize);
    c.insert(c.end(), uuid.begin(), uuid.end());
    commands_.push_back(c);
    return *this;
  }
  MachOBuilder& IdDylib(const std::string& name) {
    std::vector<unsigned char> c;
    Put32(c, kLcIdDylib);
    const size_t size = (kDylibCommandSize + name.size() + 1 + 7) / 8 * 8;
    Put32(c, static_cast<uint32_t>(size));
    Put32(c, kDylibCommandSize);  // name offset
    Put32(c, 2);                  // timestamp
    Put32(c, 0x10000);            // current version
    Put32(c, 0x10000);            // compatibility version
    c.insert(c.end(), name.begin(), name.end());
    c.resize(size, 0);
    commands_.push_back(c);
    return *this;
  }
  // Any command, bytes as given (cmd and cmdsize included).
  MachOBuilder& Raw(std::vector<unsigned char> command) {
    commands_.push_back(std::move(command));
    return *this;
  }
  std::vector<unsigned char> Build(uint32_t filetype = kFileTypeDylib) const {
    size_t sizeofcmds = 0;
    for (const auto& c : commands_) sizeofcmds += c.size();
    std::vector<unsigned char> out;
    Put32(out, kMagic64);
    Put32(out, kCpuTypeArm64);
    Put32(out, 2);  // cpusubtype arm64e
    Put32(out, filetype);
    Put32(out, static_cast<uint32_t>(commands_.size()));
    Put32(out, static_cast<uint32_t>(sizeofcmds));
    Put32(out, 0x00200085);  // flags
    Put32(out, 0);           // reserved
    for (const auto& c : commands_) out.insert(out.end(), c.begin(), c.end());
    return out;
  }

  static void Put32(std::vector<unsigned char>& v, uint32_t x) {
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<unsigned char>(x >> (8 * i)));
  }
  static void Put64(std::vector<unsigned char>& v, uint64_t x) {
    Put32(v, static_cast<uint32_t>(x));
    Put32(v, static_cast<uint32_t>(x >> 32));
  }
  static void Set32(std::vector<unsigned char>& v, size_t off, uint32_t x) {
    for (int i = 0; i < 4; ++i) v[off + i] = static_cast<unsigned char>(x >> (8 * i));
  }

 private:
  std::vector<std::vector<unsigned char>> commands_;
};

// An arm64 dylib with two segments, LC_UUID, a command the parser skips and LC_ID_DYLIB.
inline std::vector<unsigned char> ValidDylib() {
  return MachOBuilder()
      .Segment("__TEXT", 0x180000000, 0x4000, 0x5 /* r-x */, 2)
      .Segment("__DATA_CONST", 0x180004000, 0x4000, 0x3 /* rw- */)
      .Uuid(kUuid)
      .Raw({0x32, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xe, 0})  // LC_BUILD_VERSION, skipped
      .IdDylib("/usr/lib/libhangwatch_fixture.dylib")
      .Build();
}

}  // namespace hangwatch::symbols::macho

#endif  // HANGWATCH_TESTS_SYMBOLS_MACHO_BUILDER_H_
