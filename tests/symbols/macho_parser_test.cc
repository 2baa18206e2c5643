// Mach-O load-command parsing from bytes that the test builds: a valid arm64 dylib, every
// truncation of it, and hostile headers and commands (sizes that overflow, ncmds huge,
// cmdsize 0, names without a terminator). None may crash or read out of bounds (the ASan
// build checks that); each malformed input must be refused with a reason.
#include "symbols/macho/macho_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/symbols/macho_builder.h"

namespace hangwatch::symbols::macho {
namespace {

using ::testing::HasSubstr;

// Offset of the first load command (right after the header).
constexpr size_t kFirstCommand = kHeader64Size;

std::string ParseError(const std::vector<unsigned char>& bytes) {
  const absl::StatusOr<MachOImage> image = ParseMachOImage(bytes);
  EXPECT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string error(image.status().message());
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  return error;
}

TEST(MachOParser, ParsesSegmentsUuidAndInstallName) {
  const auto bytes = ValidDylib();
  const absl::StatusOr<MachOImage> parsed = ParseMachOImage(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const MachOImage& image = *parsed;
  EXPECT_EQ(image.cputype, kCpuTypeArm64);
  EXPECT_EQ(image.filetype, kFileTypeDylib);
  ASSERT_EQ(image.segments.size(), 2u);
  const Segment* text = image.FindSegment("__TEXT");
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->vmaddr, 0x180000000u);
  EXPECT_EQ(text->vmsize, 0x4000u);
  EXPECT_EQ(text->nsects, 2u);
  EXPECT_TRUE(text->executable());
  EXPECT_EQ(image.segments[1].name, "__DATA_CONST");
  EXPECT_FALSE(image.segments[1].executable());
  EXPECT_EQ(image.FindSegment("__LINKEDIT"), nullptr);
  ASSERT_TRUE(image.has_uuid);
  EXPECT_EQ(image.UuidHex(), "4c4c449f55553144a12b9b1e0e2f5d01");
  EXPECT_EQ(image.install_name, "/usr/lib/libhangwatch_fixture.dylib");
}

TEST(MachOParser, ImageWithoutUuidHasEmptyHex) {
  const auto bytes = MachOBuilder().Segment("__TEXT", 0x100000000, 0x1000, 5).Build();
  const absl::StatusOr<MachOImage> parsed = ParseMachOImage(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const MachOImage& image = *parsed;
  EXPECT_FALSE(image.has_uuid);
  EXPECT_EQ(image.UuidHex(), "");
  EXPECT_EQ(image.install_name, "");
}

TEST(MachOParser, HeaderAndCommandsSizeCoversExactlyTheCommands) {
  const auto bytes = ValidDylib();
  EXPECT_EQ(HeaderAndCommandsSize(bytes), bytes.size());
  EXPECT_EQ(HeaderAndCommandsSize(std::span(bytes).first(31)), 0u);
  auto not_macho = bytes;
  not_macho[0] = 0x7f;
  EXPECT_EQ(HeaderAndCommandsSize(not_macho), 0u);
}

TEST(MachOParser, EveryTruncationIsRefused) {
  const auto bytes = ValidDylib();
  for (size_t len = 0; len < bytes.size(); ++len) {
    // A fresh heap copy of exactly `len` bytes, so that ASan sees any read past the end.
    const std::vector<unsigned char> prefix(bytes.begin(), bytes.begin() + len);
    const absl::StatusOr<MachOImage> image = ParseMachOImage(prefix);
    EXPECT_FALSE(image.ok()) << "length " << len;
    EXPECT_FALSE(image.status().message().empty()) << "length " << len;
  }
}

TEST(MachOParser, RefusesOtherFormats) {
  auto bytes = ValidDylib();
  MachOBuilder::Set32(bytes, 0, 0xbebafeca);  // 0xcafebabe big-endian
  EXPECT_THAT(ParseError(bytes), HasSubstr("fat"));
  MachOBuilder::Set32(bytes, 0, kMagic32);
  EXPECT_THAT(ParseError(bytes), HasSubstr("32-bit"));
  MachOBuilder::Set32(bytes, 0, kCigam64);
  EXPECT_THAT(ParseError(bytes), HasSubstr("big-endian"));
  const std::vector<unsigned char> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  EXPECT_THAT(ParseError(elf), HasSubstr("bad magic"));
}

TEST(MachOParser, RefusesSizeofcmdsPastTheEnd) {
  auto bytes = ValidDylib();
  MachOBuilder::Set32(bytes, 20, 0xffffffff);
  EXPECT_THAT(ParseError(bytes), HasSubstr("sizeofcmds"));
  MachOBuilder::Set32(bytes, 20, static_cast<uint32_t>(bytes.size() - kHeader64Size + 1));
  EXPECT_THAT(ParseError(bytes), HasSubstr("sizeofcmds"));
}

TEST(MachOParser, RefusesHugeNcmds) {
  auto bytes = ValidDylib();
  MachOBuilder::Set32(bytes, 16, 0xffffffff);
  EXPECT_THAT(ParseError(bytes), HasSubstr("ncmds"));
  // More commands than are present, but few enough to fit sizeofcmds / 8: the walk runs out
  // of commands and must notice instead of reading on.
  MachOBuilder::Set32(bytes, 16, 6);
  EXPECT_THAT(ParseError(bytes), HasSubstr("load command 5"));
}

TEST(MachOParser, RefusesCmdsizeZeroUnalignedOrTooLarge) {
  auto bytes = ValidDylib();
  MachOBuilder::Set32(bytes, kFirstCommand + 4, 0);
  EXPECT_THAT(ParseError(bytes), HasSubstr("too small"));
  MachOBuilder::Set32(bytes, kFirstCommand + 4, 4);
  EXPECT_THAT(ParseError(bytes), HasSubstr("too small"));
  MachOBuilder::Set32(bytes, kFirstCommand + 4, 12);
  EXPECT_THAT(ParseError(bytes), HasSubstr("aligned"));
  MachOBuilder::Set32(bytes, kFirstCommand + 4, 0xfffffff8);
  EXPECT_THAT(ParseError(bytes), HasSubstr("runs past"));
}

TEST(MachOParser, RefusesSegmentsThatOverflow) {
  // nsects far beyond the command: nsects * 80 would wrap in 32 bits.
  auto bytes = ValidDylib();
  MachOBuilder::Set32(bytes, kFirstCommand + 64, 0x0ccccccd);
  EXPECT_THAT(ParseError(bytes), HasSubstr("sections"));
  // Segment command shorter than segment_command_64.
  bytes = MachOBuilder().Raw({0x19, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}).Build();
  EXPECT_THAT(ParseError(bytes), HasSubstr("smaller than the segment command"));
  // vmaddr + vmsize wraps around.
  bytes = MachOBuilder().Segment("__TEXT", 0xfffffffffffff000, 0x2000, 5).Build();
  EXPECT_THAT(ParseError(bytes), HasSubstr("address range overflows"));
}

// Found by fuzz/macho_parser_fuzzer.cc: a segment name is the file's bytes, and the refusal that
// names it must stay one line without raw control characters (it is printed to a terminal).
TEST(MachOParser, SegmentNameInARefusalIsEscaped) {
  const auto bytes = MachOBuilder().Segment("__\n\x1b[31mX", 0xfffffffffffff000, 0x2000, 5).Build();
  const std::string error = ParseError(bytes);
  EXPECT_THAT(error, HasSubstr("address range overflows"));
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
  EXPECT_THAT(error, HasSubstr("segment \"__\\n\\x1b[31mX\""));
}

TEST(MachOParser, RefusesShortUuidAndBadDylibNames) {
  auto bytes = MachOBuilder().Raw({0x1b, 0, 0, 0, 16, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}).Build();
  EXPECT_THAT(ParseError(bytes), HasSubstr("LC_UUID"));

  bytes = MachOBuilder().IdDylib("/usr/lib/libx.dylib").Build();
  auto bad_offset = bytes;
  MachOBuilder::Set32(bad_offset, kFirstCommand + 8, 0x1000);
  EXPECT_THAT(ParseError(bad_offset), HasSubstr("name offset"));
  MachOBuilder::Set32(bad_offset, kFirstCommand + 8, 8);  // inside the fixed part
  EXPECT_THAT(ParseError(bad_offset), HasSubstr("name offset"));

  // A name that fills its command to the last byte, without a terminator.
  std::vector<unsigned char> cmd;
  MachOBuilder::Put32(cmd, kLcIdDylib);
  MachOBuilder::Put32(cmd, 32);
  MachOBuilder::Put32(cmd, 24);
  for (int i = 0; i < 3; ++i) MachOBuilder::Put32(cmd, 0);
  cmd.insert(cmd.end(), 8, 'a');
  EXPECT_THAT(ParseError(MachOBuilder().Raw(cmd).Build()), HasSubstr("NUL-terminated"));
}

// Deterministic mutations of a valid image: whatever the bytes say, parsing ends with a result
// or a reason, and a successful parse only ever reports what lies inside the input.
TEST(MachOParser, SurvivesRandomMutations) {
  const auto original = ValidDylib();
  uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[next() % bytes.size()] = static_cast<unsigned char>(next());
    }
    // Drop up to 7 trailing bytes (erase, not resize: GCC's -Wstringop-overflow misreads a
    // shrinking resize under ASan).
    bytes.erase(bytes.end() - static_cast<std::ptrdiff_t>(next() % 8), bytes.end());
    const absl::StatusOr<MachOImage> image = ParseMachOImage(bytes);
    if (image.ok()) {
      ++parsed;
      EXPECT_LE(image->segments.size(), bytes.size() / kSegment64Size);
      EXPECT_LT(image->install_name.size(), bytes.size());
    } else {
      EXPECT_FALSE(image.status().message().empty());
    }
  }
  // Flips in segment contents, names and the skipped command keep the image valid: the
  // mutations must exercise the success path too, not only the refusals.
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace hangwatch::symbols::macho
