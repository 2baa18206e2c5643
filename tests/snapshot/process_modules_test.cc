// symbols/process_modules: another process's modules from /proc/PID/maps and the ELF files must
// agree with what the dynamic loader says about the same process (ModuleMap::Snapshot, which
// uses dl_iterate_phdr): same load bias, same build-id, for every module with code.
#include "symbols/process_modules.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "symbols/module_map.h"

namespace hangwatch::symbols {
namespace {

using ::testing::HasSubstr;

TEST(ParseProcMapsTest, FieldsPathsWithSpacesDeletedAndAnonymous) {
  std::vector<MapsEntry> e = ParseProcMaps(
      "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234   /usr/bin/demo\n"
      "55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234   /usr/bin/demo\n"
      "7f0000000000-7f0000001000 r-xp 00002000 08:01 99 /tmp/my lib.so (deleted)\n"
      "7f0000001000-7f0000021000 rw-p 00000000 00:00 0 \n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
      "garbage line\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]");
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[1].lo, 0x55d0c0a01000u);
  EXPECT_EQ(e[1].hi, 0x55d0c0a05000u);
  EXPECT_EQ(e[1].perms, "r-xp");
  EXPECT_EQ(e[1].offset, 0x1000u);
  EXPECT_EQ(e[1].inode, 1234u);
  EXPECT_EQ(e[1].path, "/usr/bin/demo");
  EXPECT_EQ(e[2].path, "/tmp/my lib.so (deleted)");
  EXPECT_EQ(e[3].path, "");
  EXPECT_EQ(e[4].path, "[stack]");
  EXPECT_EQ(e[5].path, "[vsyscall]");
}

TEST(ProcessModulesTest, AgreesWithTheDynamicLoaderOnThisProcess) {
  // A library loaded at run time too (lands wherever mmap puts it).
  void* handle = dlopen("libz.so.1", RTLD_NOW);
  auto loader = ModuleMap::Snapshot();
  absl::StatusOr<ProcessModules> mine = ReadProcessModules(getpid());
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_TRUE(mine->warnings.empty()) << mine->warnings[0];
  ASSERT_EQ(mine->open_paths.size(), mine->map->modules().size());

  size_t compared = 0;
  for (const Module& m : loader->modules()) {
    if (m.exec_ranges.empty() || m.path.empty() || m.path[0] != '/') continue;
    // Same code address -> same module, same offset.
    uintptr_t probe = m.exec_ranges[0].lo;
    ModuleAddress a = mine->map->Find(probe);
    ASSERT_NE(a.module, nullptr) << m.path;
    char real_a[4096];
    char real_b[4096];
    ASSERT_NE(realpath(m.path.c_str(), real_a), nullptr);
    ASSERT_NE(realpath(a.module->path.c_str(), real_b), nullptr);
    EXPECT_STREQ(real_a, real_b);
    EXPECT_EQ(a.module->load_bias, m.load_bias) << m.path;
    EXPECT_EQ(a.offset, probe - m.load_bias) << m.path;
    EXPECT_EQ(a.module->build_id, m.build_id) << m.path;
    ++compared;
  }
  EXPECT_GE(compared, 3u) << "this test, libc, libz at least";
  bool has_vdso = false;
  for (const Module& m : mine->map->modules()) has_vdso |= m.path == "[vdso]";
  EXPECT_TRUE(has_vdso);
  if (handle != nullptr) dlclose(handle);
}

TEST(ProcessModulesTest, NonexistentProcess) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  absl::StatusOr<ProcessModules> r = ReadProcessModules(child);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("no process"));
}

TEST(ProcessModulesTest, LoadBiasNeedsAMatchingSegment) {
  std::string self = "/proc/self/exe";
  // Offset 0x7fff0000 is no PT_LOAD of any test binary.
  auto r = LoadBiasFromProgramHeaders(self, 0x400000, 0x7fff0000);
  EXPECT_FALSE(r.ok());
  auto bad = LoadBiasFromProgramHeaders("/nonexistent/file", 0, 0);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace hangwatch::symbols
