// DwarfUnitDies against libdw on fixture programs built here (gcc and clang, DWARF 2 to 5,
// 32- and 64-bit DWARF format, -O2 with templates, inlining and lambdas): the same DIEs in the
// same tree, the same attributes with the same values (strings, addresses, constants,
// references, range lists), the same siblings; units it leaves to libdw (split DWARF) are
// refused, not misread. Then the index built with it is byte for byte the index built with
// libdw alone.
#include "symbols/dwarf_die_reader.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fixture_util.h"
#include "gtest/gtest.h"
#include "symbols/dwarf_image.h"
#include "symbols/elf_file.h"
#include "symbols/index/symbol_index_builder.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

struct Toolchain {
  const char* name;
  const char* compile;  // compiler and flags; the source and output are appended
};

class DieReaderTest : public ::testing::TestWithParam<Toolchain> {
 protected:
  void SetUp() override {
    const std::string compiler =
        std::string(GetParam().compile).substr(0, 3) == "g++" ? "g++" : "clang++";
    if (!symtest::HaveTool(compiler)) GTEST_SKIP() << compiler << " not installed";
    symtest::WriteFile(dir_.Join("fx.cc"), symtest::FixtureSource());
    bin_ = dir_.Join("fx");
    auto cc = RunCommand(
        "cd " + dir_.path() + " && " + GetParam().compile + " -std=c++17 -O2 -g -o fx fx.cc", "",
        true);
    ASSERT_EQ(cc.status, 0) << cc.out;
    ElfLibraryInit();
    auto image = DwarfImage::Open(bin_);
    ASSERT_TRUE(image.ok()) << image.status();
    image_ = std::move(*image);
    elf_ = image_->NewElf();
    dbg_ = DwarfImage::NewDwarf(elf_.get());
    ASSERT_NE(dbg_, nullptr);
    s_.info = image_->Section(elf_.get(), ".debug_info");
    s_.abbrev = image_->Section(elf_.get(), ".debug_abbrev");
    s_.str = image_->Section(elf_.get(), ".debug_str");
    s_.line_str = image_->Section(elf_.get(), ".debug_line_str");
    s_.str_offsets = image_->Section(elf_.get(), ".debug_str_offsets");
    s_.addr = image_->Section(elf_.get(), ".debug_addr");
    s_.ranges = image_->Section(elf_.get(), ".debug_ranges");
    s_.rnglists = image_->Section(elf_.get(), ".debug_rnglists");
  }

  // Compares one attribute's interpretations with libdw's.
  void CheckAttr(DwarfUnitDies* dies, const DieAttr& a, Dwarf_Die* die, int* checked) {
    Dwarf_Attribute attr;
    ASSERT_NE(dwarf_attr(die, a.name, &attr), nullptr) << "attr " << a.name;
    EXPECT_EQ(dwarf_whatform(&attr), a.form) << "attr " << a.name;
    if (const char* want = dwarf_formstring(&attr)) {
      const char* got = dies->String(a);
      ASSERT_NE(got, nullptr) << "attr " << a.name;
      EXPECT_STREQ(got, want);
      ++*checked;
    }
    Dwarf_Addr addr;
    if (a.name != DW_AT_high_pc && dwarf_formaddr(&attr, &addr) == 0) {
      uint64_t got;
      ASSERT_TRUE(dies->Address(a, &got)) << "attr " << a.name;
      EXPECT_EQ(got, addr);
      ++*checked;
    }
    Dwarf_Die ref;
    if (a.name != DW_AT_sibling && dwarf_formref_die(&attr, &ref) != nullptr) {
      uint64_t got;
      ASSERT_TRUE(dies->Reference(a, &got)) << "attr " << a.name;
      EXPECT_EQ(got, dwarf_dieoffset(&ref));
      ++*checked;
    }
    Dwarf_Word word;
    if ((a.name == DW_AT_call_file || a.name == DW_AT_call_line || a.name == DW_AT_call_column) &&
        dwarf_formudata(&attr, &word) == 0) {
      uint64_t got;
      ASSERT_TRUE(dies->Constant(a, &got));
      EXPECT_EQ(got, word);
      ++*checked;
    }
  }

  // Walks the sibling list at `offset` with both readers; returns the offset past its end.
  // `unit_level`: the unit DIE alone (it has no siblings and no null entry after it).
  uint64_t WalkList(DwarfUnitDies* dies, uint64_t offset, int* count, int* checked,
                    bool unit_level = false) {
    DwarfUnitDies::Die d;
    while (dies->ReadDie(offset, &d)) {
      Dwarf_Die die;
      EXPECT_NE(dwarf_offdie(dbg_.get(), d.offset, &die), nullptr);
      EXPECT_EQ(static_cast<uint32_t>(dwarf_tag(&die)), d.tag) << std::hex << d.offset;
      EXPECT_EQ(dwarf_haschildren(&die) != 0, d.has_children);
      ++*count;
      bool has_ranges = false;
      const uint64_t attrs_end = dies->ForEachAttr(d, [&](const DieAttr& a) {
        CheckAttr(dies, a, &die, checked);
        has_ranges |= a.name == DW_AT_ranges;
      });
      EXPECT_NE(attrs_end, 0u);
      if (has_ranges && !dwarf_hasattr(&die, DW_AT_low_pc)) {
        std::vector<std::pair<uint64_t, uint64_t>> want, got;
        ptrdiff_t off = 0;
        Dwarf_Addr base, start, end;
        while ((off = dwarf_ranges(&die, off, &base, &start, &end)) > 0) {
          if (start < end) want.emplace_back(start, end);
        }
        dies->ForEachAttr(d, [&](const DieAttr& a) {
          if (a.name == DW_AT_ranges) {
            EXPECT_TRUE(dies->Ranges(a, &got));
          }
        });
        EXPECT_EQ(got, want) << std::hex << d.offset;
        ++*checked;
      }
      const uint64_t next = dies->Next(d);
      if (d.has_children) {
        EXPECT_EQ(WalkList(dies, attrs_end, count, checked), next) << std::hex << d.offset;
      }
      Dwarf_Die sibling;
      if (dwarf_siblingof(&die, &sibling) == 0) {
        EXPECT_EQ(dwarf_dieoffset(&sibling), next);
      }
      if (::testing::Test::HasFailure() || unit_level) return 0;
      offset = next;
    }
    EXPECT_TRUE(dies->ok());
    return d.attrs;
  }

  TempDir dir_;
  std::string bin_;
  std::unique_ptr<DwarfImage> image_;
  ElfHandle elf_;
  DwarfHandle dbg_;
  DieSections s_;
};

TEST_P(DieReaderTest, EveryDieAndAttributeAsLibdwReadsThem) {
  int units = 0, dies_seen = 0, checked = 0;
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die cudie;
  while (dwarf_get_units(dbg_.get(), cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
    DwarfUnitDies dies;
    const uint64_t unit = dwarf_dieoffset(&cudie) - dwarf_cuoffset(&cudie);
    ASSERT_TRUE(dies.Open(s_, unit)) << "unit at " << unit;
    EXPECT_EQ(dies.unit_die_offset(), dwarf_dieoffset(&cudie));
    EXPECT_EQ(dies.version(), version);
    ++units;
    WalkList(&dies, dies.unit_die_offset(), &dies_seen, &checked, /*unit_level=*/true);
    EXPECT_TRUE(dies.ok());
    if (HasFailure()) return;
  }
  EXPECT_GT(units, 0);
  EXPECT_GT(dies_seen, 1000);
  EXPECT_GT(checked, 1000);
}

TEST_P(DieReaderTest, IndexIsTheOneBuiltWithLibdwAlone) {
  SymbolIndexOptions options;
  options.debug_path = bin_;
  options.threads = 1;
  SymbolIndexStats own_stats, libdw_stats;
  auto own = BuildSymbolIndex(options, &own_stats);
  options.libdw_dies = true;
  auto libdw = BuildSymbolIndex(options, &libdw_stats);
  ASSERT_TRUE(own.ok() && libdw.ok());
  EXPECT_EQ(own_stats.units_libdw, 0u);
  EXPECT_EQ(libdw_stats.units_libdw, libdw_stats.units_read);
  EXPECT_TRUE(*own == *libdw);
}

INSTANTIATE_TEST_SUITE_P(
    Toolchains, DieReaderTest,
    ::testing::Values(Toolchain{"GccDwarf2", "g++ -gdwarf-2"},
                      Toolchain{"GccDwarf3", "g++ -gdwarf-3"},
                      Toolchain{"GccDwarf4", "g++ -gdwarf-4"},
                      Toolchain{"GccDwarf5", "g++ -gdwarf-5"},
                      Toolchain{"GccDwarf4Format64", "g++ -gdwarf-4 -gdwarf64"},
                      Toolchain{"GccDwarf5Format64", "g++ -gdwarf-5 -gdwarf64"},
                      Toolchain{"ClangDwarf4", "clang++ -gdwarf-4"},
                      Toolchain{"ClangDwarf5", "clang++ -gdwarf-5"}),
    [](const auto& info) { return std::string(info.param.name); });

// Units are read by several threads and merged in unit order as they come in (buffers recycled
// between them): any number of threads gives the same bytes.
TEST(IndexThreadsTest, AnyNumberOfThreadsGivesTheSameIndex) {
  if (!symtest::HaveTool("g++")) GTEST_SKIP();
  TempDir dir;
  std::string sources, main_calls;
  for (int u = 0; u < 12; ++u) {
    const std::string n = std::to_string(u);
    symtest::WriteFile(dir.Join("u" + n + ".cc"),
                       "#include <map>\n#include <string>\n"
                       "namespace u" +
                           n +
                           " {\n"
                           "template <typename T> inline T Twice(T v) { return v + v; }\n"
                           "static int Helper(int x) { std::map<int, std::string> m; m[x] = \"a\";"
                           " return Twice(x) + int(m.size()); }\n"
                           "}  // namespace u" +
                           n +
                           "\n"
                           "int Entry" +
                           n + "(int x) { return u" + n + "::Helper(x) * " + n + "; }\n");
    sources += " u" + n + ".cc";
    main_calls += " + Entry" + n + "(argc)";
  }
  std::string main_src;
  for (int u = 0; u < 12; ++u) main_src += "int Entry" + std::to_string(u) + "(int);\n";
  main_src += "int main(int argc, char**) { return 0" + main_calls + "; }\n";
  symtest::WriteFile(dir.Join("main.cc"), main_src);
  auto cc = RunCommand("cd " + dir.path() + " && g++ -std=c++17 -O2 -g -o multi main.cc" + sources,
                       "", true);
  ASSERT_EQ(cc.status, 0) << cc.out;
  SymbolIndexOptions options;
  options.debug_path = dir.Join("multi");
  SymbolIndexStats stats;
  options.threads = 1;
  auto one = BuildSymbolIndex(options, &stats);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GE(stats.units_read, 13u);
  for (int threads : {2, 3, 8}) {
    options.threads = threads;
    auto many = BuildSymbolIndex(options);
    ASSERT_TRUE(many.ok());
    EXPECT_TRUE(*many == *one) << threads << " threads";
  }
}

TEST(DieReaderSplitTest, SkeletonUnitsAreLeftToLibdw) {
  if (!symtest::HaveTool("g++")) GTEST_SKIP();
  TempDir dir;
  symtest::WriteFile(dir.Join("fx.cc"), symtest::FixtureSource());
  auto cc = RunCommand("cd " + dir.path() + " && g++ -std=c++17 -O2 -g -gsplit-dwarf -o fx fx.cc",
                       "", true);
  ASSERT_EQ(cc.status, 0) << cc.out;
  ElfLibraryInit();
  auto image = DwarfImage::Open(dir.Join("fx"));
  ASSERT_TRUE(image.ok());
  ElfHandle elf = (*image)->NewElf();
  DieSections s;
  s.info = (*image)->Section(elf.get(), ".debug_info");
  s.abbrev = (*image)->Section(elf.get(), ".debug_abbrev");
  DwarfUnitDies dies;
  EXPECT_FALSE(dies.Open(s, 0));

  SymbolIndexOptions options;
  options.debug_path = dir.Join("fx");
  SymbolIndexStats stats;
  ASSERT_TRUE(BuildSymbolIndex(options, &stats).ok());
  EXPECT_GT(stats.units_read, 0u);
  EXPECT_EQ(stats.units_libdw, stats.units_read);
}

TEST(DieReaderBadInputTest, TruncatedAndGarbageUnitsAreRefused) {
  // A DWARF 5 compile unit header pointing at an abbreviation table, cut at every length.
  const unsigned char abbrev[] = {1, DW_TAG_compile_unit, 0, DW_AT_name, DW_FORM_string, 0, 0, 0};
  const unsigned char info[] = {11, 0, 0, 0, 5, 0, DW_UT_compile, 8, 0, 0, 0, 0, 1, 'x', 0};
  for (size_t n = 0; n <= sizeof(info); ++n) {
    DieSections s;
    s.info = std::string_view(reinterpret_cast<const char*>(info), n);
    s.abbrev = std::string_view(reinterpret_cast<const char*>(abbrev), sizeof(abbrev));
    DwarfUnitDies dies;
    const bool opened = dies.Open(s, 0);
    EXPECT_EQ(opened, n == sizeof(info)) << n;
  }
  // An abbreviation code that is not in the table.
  unsigned char bad[sizeof(info)];
  std::memcpy(bad, info, sizeof(info));
  bad[12] = 7;
  DieSections s;
  s.info = std::string_view(reinterpret_cast<const char*>(bad), sizeof(bad));
  s.abbrev = std::string_view(reinterpret_cast<const char*>(abbrev), sizeof(abbrev));
  DwarfUnitDies dies;
  EXPECT_FALSE(dies.Open(s, 0));
}

}  // namespace
}  // namespace hangwatch::symbols
