// ModuleMap: snapshot contents, O(log n) lookups, refresh on dlopen/dlclose, build-ids that
// match the files on disk.
#include "symbols/module_map.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbols/elf_file.h"

namespace hangwatch::symbols {
namespace {

__attribute__((noinline)) int FunctionInMainProgram(int x) { return x + 1; }

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : std::string();
}

TEST(ModuleMapTest, FindsMainProgramWithRealPathAndElfOffset) {
  auto map = ModuleMap::Snapshot();
  const auto addr = reinterpret_cast<uintptr_t>(&FunctionInMainProgram);
  ModuleAddress where = map->Find(addr);
  ASSERT_NE(where.module, nullptr);
  EXPECT_EQ(where.module->path, SelfExe());
  EXPECT_EQ(where.offset, addr - where.module->load_bias);
}

TEST(ModuleMapTest, BuildIdMatchesTheFileOnDisk) {
  auto map = ModuleMap::Snapshot();
  int checked = 0;
  for (const Module& m : map->modules()) {
    if (m.path.empty() || m.path[0] != '/') continue;  // vdso
    auto file = ElfFile::Open(m.path);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(m.build_id, ReadBuildId((*file)->elf())) << m.path;
    ++checked;
  }
  EXPECT_GE(checked, 2);  // the test program and libc at least
}

TEST(ModuleMapTest, FindsLibcFunctionInLibc) {
  auto map = ModuleMap::Snapshot();
  // getpid: not intercepted by sanitizers (their runtimes wrap write and friends).
  ModuleAddress where = map->Find(reinterpret_cast<uintptr_t>(&::getpid));
  ASSERT_NE(where.module, nullptr);
  EXPECT_THAT(where.module->path, ::testing::HasSubstr("libc.so"));
}

TEST(ModuleMapTest, AddressOutsideEveryModuleIsNotFound) {
  auto map = ModuleMap::Snapshot();
  int on_stack = 0;
  EXPECT_EQ(map->Find(reinterpret_cast<uintptr_t>(&on_stack)).module, nullptr);
  EXPECT_EQ(map->Find(0).module, nullptr);
  EXPECT_EQ(map->Find(~uintptr_t{0}).module, nullptr);
}

TEST(ModuleMapTest, ExplicitModulesLookupBoundaries) {
  std::vector<Module> modules(2);
  modules[0].path = "a";
  modules[0].load_bias = 0x1000;
  modules[0].exec_ranges = {{0x2000, 0x3000}, {0x5000, 0x5100}};
  modules[1].path = "b";
  modules[1].load_bias = 0x10000;
  modules[1].exec_ranges = {{0x3000, 0x4000}};
  ModuleMap map(std::move(modules));
  EXPECT_EQ(map.Find(0x1fff).module, nullptr);
  EXPECT_EQ(map.Find(0x2000).module->path, "a");
  EXPECT_EQ(map.Find(0x2000).offset, 0x1000u);
  EXPECT_EQ(map.Find(0x2fff).module->path, "a");
  EXPECT_EQ(map.Find(0x3000).module->path, "b");
  EXPECT_EQ(map.Find(0x3fff).module->path, "b");
  EXPECT_EQ(map.Find(0x4000).module, nullptr);
  EXPECT_EQ(map.Find(0x50ff).module->path, "a");
  EXPECT_EQ(map.Find(0x5100).module, nullptr);
}

TEST(ModuleMapTest, CurrentMapIsReusedUntilALibraryIsLoadedOrUnloaded) {
  auto first = CurrentModuleMap();
  auto again = CurrentModuleMap();
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(PublishedModuleMap(), first.get());

  void* handle = dlopen(SYMBOLS_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* entry = dlsym(handle, "symbols_test_plugin_entry");
  ASSERT_NE(entry, nullptr);
  auto loaded = CurrentModuleMap();
  EXPECT_NE(loaded.get(), first.get());
  EXPECT_EQ(PublishedModuleMap(), loaded.get());
  ModuleAddress where = loaded->Find(reinterpret_cast<uintptr_t>(entry));
  ASSERT_NE(where.module, nullptr);
  EXPECT_THAT(where.module->path, ::testing::HasSubstr("symbols_test_plugin"));
  EXPECT_EQ(first->Find(reinterpret_cast<uintptr_t>(entry)).module, nullptr);

  ASSERT_EQ(dlclose(handle), 0);
  auto unloaded = CurrentModuleMap();
  EXPECT_NE(unloaded.get(), loaded.get());
  // The old map stays readable (capture code may still hold it).
  EXPECT_NE(PublishedModuleMap()->modules().size(), 0u);
  EXPECT_EQ(loaded->Find(reinterpret_cast<uintptr_t>(entry)).module->path, where.module->path);
}

// The offset must be the ELF virtual address whatever the linker's layout: lld and ld.bfd place
// segments (and the file offset / vaddr relation) differently. Checked against nm.
class ModuleMapLinkerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModuleMapLinkerTest, OffsetIsTheSymbolValue) {
  symtest::TempDir dir;
  symtest::WriteFile(dir.Join("lib.cc"), R"(
    extern "C" __attribute__((noinline)) int mm_first(int x) { return x + 1; }
    static char big[100000] = {1};  // pushes later sections around
    extern "C" __attribute__((noinline)) int mm_second(int x) { return mm_first(x) + big[x]; }
  )");
  const std::string lib = dir.Join("lib.so");
  auto r = symtest::RunCommand(std::string("g++ -O2 -shared -fPIC -fuse-ld=") + GetParam() +
                                   " -o " + lib + " " + dir.Join("lib.cc"),
                               "", true);
  ASSERT_EQ(r.status, 0) << r.out;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto map = CurrentModuleMap();
  for (const char* name : {"mm_first", "mm_second"}) {
    void* fn = dlsym(h, name);
    ASSERT_NE(fn, nullptr);
    ModuleAddress where = map->Find(reinterpret_cast<uintptr_t>(fn));
    ASSERT_NE(where.module, nullptr) << name;
    EXPECT_EQ(where.module->path, lib);
    auto nm =
        symtest::RunCommand("nm " + lib + " | awk '$3==\"" + std::string(name) + "\" {print $1}'");
    ASSERT_FALSE(nm.out.empty());
    EXPECT_EQ(where.offset, std::stoull(nm.out, nullptr, 16)) << name << " with " << GetParam();
  }
  auto file = ElfFile::Open(lib);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(map->Find(reinterpret_cast<uintptr_t>(dlsym(h, "mm_first"))).module->build_id,
            ReadBuildId((*file)->elf()));
  dlclose(h);
}

INSTANTIATE_TEST_SUITE_P(Linkers, ModuleMapLinkerTest, ::testing::Values("bfd", "lld"));

}  // namespace
}  // namespace hangwatch::symbols
