// `hangwatch symbolize` against llvm-symbolizer on generated C++ programs (templates, inlining,
// lambdas, anonymous namespaces, virtual calls) built by the test with g++ and clang++, ld.bfd
// and lld, PIE and non-PIE, DWARF 4 and 5, split DWARF; separate debug files by build-id and by
// debuglink; zlib- and zstd-compressed debug sections; the index cache; bad input.
//
// Addresses are the return addresses - 1 of every call instruction of the program (objdump),
// which is what a symbolizer sees from a real stack.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hangwatch::symbols {
namespace {

using symtest::CommandResult;
using symtest::RunCommand;
using symtest::TempDir;
using ::testing::HasSubstr;

constexpr size_t kMaxAddresses = 600;

std::string Cli() { return SYMBOLS_CLI; }

std::string AddressLines(const std::vector<unsigned long long>& addrs) {
  std::string s;
  for (auto a : addrs) absl::StrAppend(&s, "0x", absl::Hex(a), "\n");
  return s;
}

std::vector<std::string> Blocks(const std::string& out) {
  std::vector<std::string> blocks = absl::StrSplit(out, "\n\n");
  if (!blocks.empty() && blocks.back().empty()) blocks.pop_back();
  return blocks;
}

struct Comparison {
  size_t addresses = 0;
  size_t identical = 0;
  size_t inlined = 0;              // answers with more than one frame
  size_t known = 0;                // answers with a file:line
  size_t same_first_location = 0;  // llvm-symbolizer's known answers whose innermost
                                   // file:line:column ours repeats
  std::string first_difference;
};

// The second line of an answer block: the innermost frame's file:line:column.
std::string FirstLocation(const std::string& block) {
  const size_t a = block.find('\n');
  if (a == std::string::npos) return "";
  const size_t b = block.find('\n', a + 1);
  return block.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
}

// Symbolizes `addrs` with both tools and compares their outputs address by address.
Comparison Compare(const std::string& ours_args, const std::string& llvm_args,
                   const std::vector<unsigned long long>& addrs) {
  const std::string input = AddressLines(addrs);
  CommandResult mine = RunCommand(Cli() + " symbolize --no-cache " + ours_args, input);
  CommandResult llvm = RunCommand("llvm-symbolizer " + llvm_args, input);
  Comparison c;
  EXPECT_EQ(mine.status, 0) << mine.out;
  EXPECT_EQ(llvm.status, 0);
  std::vector<std::string> a = Blocks(mine.out), b = Blocks(llvm.out);
  EXPECT_EQ(a.size(), addrs.size());
  EXPECT_EQ(b.size(), addrs.size());
  c.addresses = std::min(a.size(), b.size());
  for (size_t i = 0; i < c.addresses; ++i) {
    if (a[i] == b[i]) {
      ++c.identical;
    } else if (c.first_difference.empty()) {
      c.first_difference = absl::StrCat("address 0x", absl::Hex(addrs[i]), "\n--- hangwatch\n",
                                        a[i], "\n--- llvm-symbolizer\n", b[i]);
    }
    if (std::count(b[i].begin(), b[i].end(), '\n') > 1) ++c.inlined;
    if (b[i].find("??:0") == std::string::npos) {
      ++c.known;
      if (FirstLocation(a[i]) == FirstLocation(b[i])) ++c.same_first_location;
    }
  }
  return c;
}

void ExpectMostlyIdentical(const Comparison& c, const std::string& what) {
  ASSERT_GT(c.addresses, 20u) << what;
  EXPECT_GE(c.identical * 100, c.addresses * 99)
      << what << ": " << c.identical << "/" << c.addresses << " identical; first difference:\n"
      << c.first_difference;
  // The fixture must exercise what the comparison claims: inline chains and real lines.
  EXPECT_GT(c.inlined, 3u) << what;
  EXPECT_GT(c.known * 2, c.addresses) << what;
}

// Equal outputs; on failure shows the first differing address only (outputs are long).
void ExpectSameOutput(const std::string& mine, const std::string& llvm) {
  std::vector<std::string> a = Blocks(mine), b = Blocks(llvm);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << "answer " << i << " differs\n--- hangwatch\n"
                    << a[i] << "\n--- llvm-symbolizer\n"
                    << b[i];
      return;
    }
  }
}

struct Toolchain {
  const char* name;
  const char* flags;
};

void PrintTo(const Toolchain& t, std::ostream* os) { *os << t.flags; }

class SymbolizeCompatTest : public ::testing::TestWithParam<Toolchain> {};

TEST_P(SymbolizeCompatTest, IdenticalToLlvmSymbolizer) {
  TempDir dir;
  symtest::WriteFile(dir.Join("fx.cc"), symtest::FixtureSource());
  const std::string bin = dir.Join("fx");
  CommandResult cc = RunCommand(
      absl::StrCat(GetParam().flags, " -std=c++17 -O2 -g -o ", bin, " ", dir.Join("fx.cc")), "",
      true);
  ASSERT_EQ(cc.status, 0) << cc.out;
  auto addrs = symtest::CallSiteAddresses(bin, kMaxAddresses);
  ExpectMostlyIdentical(Compare("--obj " + bin, "--obj=" + bin, addrs), GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Toolchains, SymbolizeCompatTest,
    ::testing::Values(Toolchain{"GccBfdPie", "g++ -pie -fPIE -fuse-ld=bfd"},
                      Toolchain{"GccBfdNoPie", "g++ -no-pie -fno-PIE -fuse-ld=bfd"},
                      Toolchain{"GccLldPie", "g++ -pie -fPIE -fuse-ld=lld"},
                      Toolchain{"GccDwarf4LldNoPie", "g++ -gdwarf-4 -no-pie -fuse-ld=lld"},
                      Toolchain{"ClangBfdPie", "clang++ -pie -fPIE -fuse-ld=bfd"},
                      Toolchain{"ClangLldNoPie", "clang++ -no-pie -fno-PIE -fuse-ld=lld"},
                      Toolchain{"ClangDwarf4Lld", "clang++ -gdwarf-4 -fuse-ld=lld"},
                      Toolchain{"ClangO3Lambdas", "clang++ -O3 -fuse-ld=lld"},
                      Toolchain{"GccSplitDwarf", "g++ -gsplit-dwarf"},
                      Toolchain{"ClangSplitDwarf", "clang++ -gsplit-dwarf"}),
    [](const ::testing::TestParamInfo<Toolchain>& info) { return info.param.name; });

// Split DWARF whose .dwo files are gone: line tables only (they stay in the binary), as
// llvm-symbolizer.
TEST(SymbolizeSplitDwarfTest, MissingDwoGivesLinesOnly) {
  for (const char* compiler : {"g++", "clang++"}) {
    TempDir dir;
    symtest::WriteFile(dir.Join("fx.cc"), symtest::FixtureSource());
    const std::string bin = dir.Join("fx");
    CommandResult cc =
        RunCommand(absl::StrCat("cd ", dir.path(), " && ", compiler,
                                " -std=c++17 -O2 -g -gsplit-dwarf -o fx fx.cc", " && rm -f *.dwo"),
                   "", true);
    ASSERT_EQ(cc.status, 0) << cc.out;
    auto addrs = symtest::CallSiteAddresses(bin, kMaxAddresses);
    Comparison c = Compare("--obj " + bin, "--obj=" + bin, addrs);
    EXPECT_EQ(c.identical, c.addresses) << compiler << "\n" << c.first_difference;
    EXPECT_GT(c.known * 2, c.addresses) << compiler;
  }
}

// Split DWARF packaged into a .dwp beside the binary (the .dwo files gone): at least the line
// tables answer (they stay in the binary), for every address llvm-symbolizer knows a line for.
// DWARF 4: Debian 12's binutils dwp crashes on gcc's DWARF 5 split units.
TEST(SymbolizeSplitDwarfTest, DwpPackageGivesAtLeastLines) {
  if (RunCommand("command -v dwp").status != 0) GTEST_SKIP() << "dwp (binutils) not installed";
  TempDir dir;
  symtest::WriteFile(dir.Join("fx.cc"), symtest::FixtureSource());
  const std::string bin = dir.Join("fx");
  CommandResult cc =
      RunCommand(absl::StrCat("cd ", dir.path(),
                              " && g++ -std=c++17 -O2 -g -gdwarf-4 -gsplit-dwarf -o fx fx.cc",
                              " && timeout 120 dwp -e fx -o fx.dwp", " && rm -f *.dwo"),
                 "", true);
  ASSERT_EQ(cc.status, 0) << cc.out;
  auto addrs = symtest::CallSiteAddresses(bin, kMaxAddresses);
  Comparison c = Compare("--obj " + bin, "--obj=" + bin, addrs);
  ASSERT_GT(c.addresses, 20u);
  EXPECT_GT(c.known * 2, c.addresses);
  EXPECT_EQ(c.same_first_location, c.known) << c.first_difference;
  // How many answers are whole (inline chains read from the package), for the record.
  RecordProperty("identical", static_cast<int>(c.identical));
  RecordProperty("addresses", static_cast<int>(c.addresses));
}

// One program, many ways of shipping its debug information.
class DebugInfoLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::WriteFile(dir_.Join("fx.cc"), symtest::FixtureSource());
    full_ = dir_.Join("full");
    CommandResult cc =
        RunCommand("g++ -std=c++17 -O2 -g -o " + full_ + " " + dir_.Join("fx.cc"), "", true);
    ASSERT_EQ(cc.status, 0) << cc.out;
    addrs_ = symtest::CallSiteAddresses(full_, kMaxAddresses);
    build_id_ = RunCommand("readelf -n " + full_ + " | awk '/Build ID/ {print $3}'").out;
    while (!build_id_.empty() && build_id_.back() == '\n') build_id_.pop_back();
    ASSERT_EQ(build_id_.size(), 40u);
  }
  // A copy of the program: `strip` mode is "" (keep), "debug" (-g) or "all" (--strip-all).
  std::string Copy(const std::string& name, const std::string& strip) {
    const std::string p = dir_.Join(name);
    std::string cmd = "cp " + full_ + " " + p;
    if (strip == "debug") cmd += " && strip -g " + p;
    if (strip == "all") cmd += " && strip --strip-all " + p;
    EXPECT_EQ(RunCommand(cmd).status, 0);
    return p;
  }
  std::string Ours(const std::string& args) {
    CommandResult r = RunCommand(Cli() + " symbolize --no-cache " + args, AddressLines(addrs_));
    EXPECT_EQ(r.status, 0) << r.out;
    return r.out;
  }
  std::string Llvm(const std::string& args) {
    return RunCommand("llvm-symbolizer " + args, AddressLines(addrs_)).out;
  }

  TempDir dir_;
  std::string full_, build_id_;
  std::vector<unsigned long long> addrs_;
};

TEST_F(DebugInfoLayoutTest, SeparateDebugFileByBuildId) {
  const std::string bin = Copy("stripped", "all");
  const std::string dbg_dir = dir_.Join("debug");
  const std::string target =
      dbg_dir + "/.build-id/" + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug";
  ASSERT_EQ(RunCommand("mkdir -p $(dirname " + target + ") && objcopy --only-keep-debug " + full_ +
                       " " + target)
                .status,
            0);
  ExpectMostlyIdentical(Compare("--obj " + bin + " --debug-dir " + dbg_dir,
                                "--obj=" + bin + " --debug-file-directory=" + dbg_dir, addrs_),
                        "build-id debug file");
  // Without the binary: by build-id alone, same answers as llvm-symbolizer on the debug file
  // (whose symbol table it then uses).
  ExpectMostlyIdentical(
      Compare("--build-id " + build_id_ + " --debug-dir " + dbg_dir, "--obj=" + target, addrs_),
      "--build-id");
}

TEST_F(DebugInfoLayoutTest, SeparateDebugFileByDebuglink) {
  const std::string bin = Copy("linked", "all");
  ASSERT_EQ(RunCommand("cd " + dir_.path() + " && objcopy --only-keep-debug full linked.dbg && " +
                       "objcopy --add-gnu-debuglink=linked.dbg linked")
                .status,
            0);
  ExpectMostlyIdentical(Compare("--obj " + bin, "--obj=" + bin, addrs_), "debuglink");
  // A debuglink whose CRC does not match is ignored, with a warning.
  ASSERT_EQ(RunCommand("cd " + dir_.path() + " && echo x >> linked.dbg").status, 0);
  CommandResult r = RunCommand(Cli() + " symbolize --no-cache --obj " + bin + " 0x1000", "", true);
  EXPECT_THAT(r.out, HasSubstr("CRC mismatch"));
}

TEST_F(DebugInfoLayoutTest, DebugFileBesideTheBinary) {
  const std::string bin = Copy("beside", "all");
  ASSERT_EQ(RunCommand("objcopy --only-keep-debug " + full_ + " " + bin + ".debug").status, 0);
  // llvm-symbolizer does not look there: give it the same file through a build-id directory.
  const std::string dbg_dir = dir_.Join("llvm-debug");
  const std::string target =
      dbg_dir + "/.build-id/" + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug";
  ASSERT_EQ(
      RunCommand("mkdir -p $(dirname " + target + ") && cp " + bin + ".debug " + target).status, 0);
  ExpectSameOutput(Ours("--obj " + bin),
                   Llvm("--obj=" + bin + " --debug-file-directory=" + dbg_dir));
}

TEST_F(DebugInfoLayoutTest, ZlibCompressedSections) {
  const std::string bin = Copy("zlib", "");
  ASSERT_EQ(RunCommand("objcopy --compress-debug-sections=zlib " + bin).status, 0);
  ASSERT_THAT(RunCommand("readelf -S " + bin).out, HasSubstr(" C "));
  ExpectSameOutput(Ours("--obj " + bin), Llvm("--obj=" + full_));
}

TEST_F(DebugInfoLayoutTest, ZstdCompressedSections) {
  const std::string bin = Copy("zstd", "");
  CommandResult r = RunCommand("objcopy --compress-debug-sections=zstd " + bin, "", true);
  ASSERT_EQ(r.status, 0) << "objcopy without zstd support: " << r.out;
  ASSERT_THAT(RunCommand("readelf -t " + bin).out, HasSubstr("ZSTD"));
  // llvm-symbolizer 14 cannot read zstd: compare with its answers for the uncompressed file.
  ExpectSameOutput(Ours("--obj " + bin), Llvm("--obj=" + full_));
}

TEST_F(DebugInfoLayoutTest, OnlyDynsymLeft) {
  const std::string bin = Copy("nodebug", "all");
  ExpectSameOutput(Ours("--obj " + bin), Llvm("--obj=" + bin));
}

TEST_F(DebugInfoLayoutTest, MiniDebugInfoNamesStaticFunctions) {
  // Fedora's recipe (weak functions kept too): the function symbols missing from .dynsym,
  // xz-compressed into
  // .gnu_debugdata of the stripped binary. llvm-symbolizer ignores it; hangwatch reads it, so
  // its names match llvm-symbolizer's on the binary that still has its .symtab.
  const std::string bin = Copy("mini", "all");
  const std::string symtab_only = Copy("symtab", "debug");
  const std::string d = dir_.path();
  CommandResult r = RunCommand(
      "set -e; cd " + d +
          "; nm -D full --format=posix --defined-only | awk '{print $1}' | sort > dynsyms;"
          "nm full --format=posix --defined-only | awk '$2 ~ /^[TtWw]$/ {print $1}' | "
          "sort > funcsyms; comm -13 dynsyms funcsyms > keep;"
          "objcopy --only-keep-debug full dbg; objcopy -S --keep-symbols=keep dbg mini.elf;"
          "xz -f mini.elf; objcopy --add-section .gnu_debugdata=mini.elf.xz mini",
      "", true);
  ASSERT_EQ(r.status, 0) << r.out;
  auto names = [](const std::string& out) {
    std::vector<std::string> first;
    for (const std::string& b : Blocks(out)) first.push_back(b.substr(0, b.find('\n')));
    return first;
  };
  std::vector<std::string> mine = names(Ours("--obj " + bin));
  std::vector<std::string> llvm = names(Llvm("--obj=" + symtab_only));
  std::vector<std::string> plain = names(Llvm("--obj=" + bin));
  ASSERT_EQ(mine.size(), llvm.size());
  size_t same = 0, better = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    same += mine[i] == llvm[i];
    better += mine[i] == llvm[i] && plain[i] != llvm[i];
  }
  EXPECT_GE(same * 100, mine.size() * 99) << same << "/" << mine.size();
  EXPECT_GT(better, 5u);  // static functions llvm-symbolizer cannot name from .dynsym
}

TEST_F(DebugInfoLayoutTest, CachedIndexAnswersWithoutTheDebugInfo) {
  const std::string cache = dir_.Join("cache");
  CommandResult idx = RunCommand(Cli() + " symbols index --cache-dir " + cache + " " + full_);
  ASSERT_EQ(idx.status, 0) << idx.out;
  EXPECT_EQ(idx.out, cache + "/" + build_id_ + ".hwsym\n");
  // The cached index alone (no file with that build-id anywhere) gives the full answers.
  CommandResult r = RunCommand(Cli() + " symbolize --cache-dir " + cache + " --build-id " +
                                   build_id_ + " --debug-dir " + dir_.Join("nothing"),
                               AddressLines(addrs_));
  EXPECT_EQ(r.status, 0);
  ExpectSameOutput(r.out, Llvm("--obj=" + full_));
  // And --obj on a stripped copy uses it too (same build-id).
  const std::string bin = Copy("stripped", "all");
  CommandResult s =
      RunCommand(Cli() + " symbolize --cache-dir " + cache + " --obj " + bin, AddressLines(addrs_));
  ExpectSameOutput(s.out, Llvm("--obj=" + full_));
  // HANGWATCH_CACHE_DIR is honoured.
  const std::string env_cache = dir_.Join("env-cache");
  CommandResult e = RunCommand("HANGWATCH_CACHE_DIR=" + env_cache + " " + Cli() +
                               " symbols index " + full_ + " >/dev/null && ls " + env_cache);
  EXPECT_EQ(e.out, build_id_ + ".hwsym\n");
}

TEST_F(DebugInfoLayoutTest, CorruptCachedIndexIsIgnored) {
  const std::string cache = dir_.Join("cache");
  ASSERT_EQ(RunCommand("mkdir -p " + cache + " && head -c 5000 /dev/urandom > " + cache + "/" +
                       build_id_ + ".hwsym")
                .status,
            0);
  CommandResult r = RunCommand(Cli() + " symbolize --cache-dir " + cache + " --obj " + full_,
                               AddressLines(addrs_));
  EXPECT_EQ(r.status, 0);
  ExpectSameOutput(r.out, Llvm("--obj=" + full_));
}

TEST(SymbolizeBadInputTest, ClearMessageAndUnknownAnswers) {
  TempDir dir;
  const std::string unknown = "??\n??:0:0\n\n";
  auto check = [&](const std::string& args, const std::string& message) {
    CommandResult out = RunCommand(Cli() + " symbolize " + args + " 0x10 2>/dev/null");
    CommandResult err = RunCommand(Cli() + " symbolize " + args + " 0x10 2>&1 >/dev/null");
    EXPECT_EQ(out.status, 2) << args;
    EXPECT_EQ(out.out, unknown) << args;
    EXPECT_THAT(err.out, HasSubstr(message)) << args;
    EXPECT_EQ(std::count(err.out.begin(), err.out.end(), '\n'), 1) << err.out;
  };
  check("--obj " + dir.Join("missing"), "No such file");
  symtest::WriteFile(dir.Join("text"), "not an ELF file at all\n");
  check("--obj " + dir.Join("text"), "not an ELF file");
  symtest::WriteFile(dir.Join("empty"), "");
  check("--obj " + dir.Join("empty"), "not an ELF file");
  check("--obj " + dir.path(), "");
  check("--build-id 0123456789abcdef --debug-dir " + dir.path(), "no binary or debug file");
  check("--build-id xyz", "not a build-id");
  // Usage errors.
  EXPECT_EQ(RunCommand(Cli() + " symbolize 0x10 2>/dev/null").status, 2);
  EXPECT_EQ(RunCommand(Cli() + " symbolize --obj a --build-id b 2>/dev/null").status, 2);
  EXPECT_EQ(RunCommand(Cli() + " symbolize --bogus 2>/dev/null").status, 2);
  EXPECT_EQ(RunCommand(Cli() + " symbols index " + dir.Join("missing") + " 2>/dev/null").status, 2);
}

TEST(SymbolizeBadInputTest, TruncatedAndCorruptedBinariesNeverCrash) {
  TempDir dir;
  symtest::WriteFile(dir.Join("fx.cc"), symtest::FixtureSource());
  const std::string bin = dir.Join("fx");
  ASSERT_EQ(RunCommand("g++ -std=c++17 -O2 -g -o " + bin + " " + dir.Join("fx.cc")).status, 0);
  auto addrs = symtest::CallSiteAddresses(bin, 50);
  const std::string input = AddressLines(addrs);
  const std::string bytes = symtest::ReadFile(bin);
  std::vector<std::string> variants;
  for (size_t cut :
       {size_t{64}, size_t{700}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 100}) {
    variants.push_back(bytes.substr(0, cut));
  }
  // Flip bytes all over the file (deterministically).
  for (int v = 0; v < 12; ++v) {
    std::string b = bytes;
    uint32_t x = 12345u + v * 7919u;
    for (int i = 0; i < 64; ++i) {
      x = x * 1103515245u + 12345u;
      b[x % b.size()] = static_cast<char>(x >> 16);
    }
    variants.push_back(b);
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string p = dir.Join("bad" + std::to_string(i));
    symtest::WriteFile(p, variants[i]);
    CommandResult r = RunCommand(
        "timeout 60 " + Cli() + " symbolize --no-cache --obj " + p + " 2>/dev/null", input);
    // 0 (degraded answers) or 2 (refused), never a signal or a timeout.
    EXPECT_TRUE(r.status == 0 || r.status == 2) << "variant " << i << " status " << r.status;
    EXPECT_EQ(Blocks(r.out).size(), addrs.size()) << "variant " << i;
  }
}

TEST(SymbolizeInputTest, ArgumentsStdinAndNonAddresses) {
  TempDir dir;
  symtest::WriteFile(dir.Join("t.c"), "int main(void) { return 0; }\n");
  const std::string bin = dir.Join("t");
  ASSERT_EQ(RunCommand("gcc -O2 -g -o " + bin + " " + dir.Join("t.c")).status, 0);
  const std::string input = "not-an-address\n0x10\n\n0xffffffffff\n";
  CommandResult mine = RunCommand(Cli() + " symbolize --no-cache --obj " + bin, input);
  CommandResult llvm = RunCommand("llvm-symbolizer --obj=" + bin, input);
  EXPECT_EQ(mine.out, llvm.out);
  CommandResult args = RunCommand(Cli() + " symbolize --no-cache --obj " + bin + " 0x10 16");
  CommandResult llvm_args = RunCommand("llvm-symbolizer --obj=" + bin + " 0x10 16");
  EXPECT_EQ(args.out, llvm_args.out);
}

}  // namespace
}  // namespace hangwatch::symbols
