// symbols/function_start.h: the start of the function holding an address, from the module's own
// file: its symbol when it has one, else its CFI's FDE (a stripped program's static functions),
// and nothing from a file of another build.
#include "symbols/function_start.h"
#include <dirent.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "fixture_util.h"
#include "symbols/elf_file.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

constexpr char kSource[] = R"(
static int __attribute__((noinline)) alpha(int x) {
  int s = 0;
  for (int i = 0; i < x; i++) s += i * 3;
  return s;
}
static int __attribute__((noinline)) beta(int x) {
  int s = 1;
  for (int i = 0; i < x; i++) s ^= i << 2;
  return s;
}
int main(int argc, char** argv) { (void)argv; return alpha(argc * 100) + beta(argc * 50); }
)";

struct Function {
  unsigned long long start = 0, size = 0;
};

// `name`'s address and size in `binary` (nm -S), or zeros.
Function FunctionIn(const std::string& binary, const std::string& name) {
  std::istringstream lines(RunCommand("nm -S '" + binary + "'").out);
  std::string line;
  Function f;
  while (std::getline(lines, line)) {
    char type = 0;
    char sym[256] = {};
    if (std::sscanf(line.c_str(), "%llx %llx %c %255s", &f.start, &f.size, &type, sym) == 4 &&
        name == sym) {
      return f;
    }
  }
  return Function{};
}

Module ModuleOf(const std::string& path) {
  Module m;
  m.path = path;
  auto file = ElfFile::Open(path);
  if (file.ok()) m.build_id = ReadBuildId((*file)->elf());
  return m;
}

TEST(FunctionStart, StrippedStaticFunctionsStartWhereTheirFdeSays) {
  if (!symtest::HaveTool("gcc") || !symtest::HaveTool("objcopy") || !symtest::HaveTool("nm")) {
    GTEST_SKIP() << "gcc, objcopy or nm is missing";
  }
  TempDir dir;
  symtest::WriteFile(dir.Join("f.c"), kSource);
  const std::string full = dir.Join("full"), stripped = dir.Join("stripped");
  ASSERT_EQ(
      RunCommand("gcc -O1 -Wl,--build-id -o '" + full + "' '" + dir.Join("f.c") + "'", "", true)
          .status,
      0);
  ASSERT_EQ(RunCommand("objcopy --strip-all '" + full + "' '" + stripped + "'").status, 0);
  const Function alpha = FunctionIn(full, "alpha"), beta = FunctionIn(full, "beta");
  ASSERT_NE(alpha.size, 0u);
  ASSERT_NE(beta.size, 0u);
  const Module named = ModuleOf(full), unnamed = ModuleOf(stripped);
  ASSERT_FALSE(unnamed.build_id.empty());
  for (const Module* m : {&named, &unnamed}) {
    for (const Function& f : {alpha, beta}) {
      uint64_t start = 0;
      ASSERT_TRUE(FunctionStartInModule(*m, f.start + f.size / 2, &start)) << m->path;
      EXPECT_EQ(start, f.start) << m->path;
      ASSERT_TRUE(FunctionStartInModule(*m, f.start, &start));
      EXPECT_EQ(start, f.start);
    }
  }
  // The file is not the build that ran: no answer rather than a wrong one.
  Module other = unnamed;
  other.build_id = "0123456789abcdef";
  uint64_t start = 0;
  EXPECT_FALSE(FunctionStartInModule(other, alpha.start + 1, &start));
  Module missing = unnamed;
  missing.path = dir.Join("gone");
  EXPECT_FALSE(FunctionStartInModule(missing, alpha.start + 1, &start));
}

size_t OpenDescriptors() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// The module files' CFI is kept for the process's life, but not their descriptors: the agent
// looks functions up inside the program, whose descriptors they would be (a daemon closing
// every descriptor it did not open would pull one from under libelf).
TEST(FunctionStart, KeepsNoDescriptorOfTheModulesItReads) {
  if (!symtest::HaveTool("gcc") || !symtest::HaveTool("strip")) {
    GTEST_SKIP() << "gcc or strip is missing";
  }
  TempDir dir;
  symtest::WriteFile(dir.Join("f.c"), kSource);
  const std::string binary = dir.Join("kept");
  ASSERT_EQ(
      RunCommand("gcc -O1 -Wl,--build-id -o '" + binary + "' '" + dir.Join("f.c") + "'", "", true)
          .status,
      0);
  ASSERT_EQ(RunCommand("strip '" + binary + "'").status, 0);  // no symbols: the CFI answers
  const Module m = ModuleOf(binary);
  const size_t before = OpenDescriptors();
  uint64_t start = 0;
  FunctionStartInModule(m, 0x1000, &start);  // opens the file's CFI (an answer or none)
  EXPECT_EQ(OpenDescriptors(), before);
}

}  // namespace
}  // namespace hangwatch::symbols
