// The symbol cache is believed as it is, so it must be this user's: an index
// planted in a directory another user can write, or a cache file another user owns or can write,
// is not used (one warning); an unset HOME never means a directory under /tmp; writes never
// follow a symbolic link planted in the cache.
#include "symbols/symbol_cache.h"
#include "absl/strings/str_cat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "gtest/gtest.h"
#include "symbols/offline_symbolizer.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

constexpr char kBuildId[] = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";

class SymbolCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two builds with one build-id: the real program, and a forgery whose function has another
    // name of the same length at the same address. An index of the forgery in the cache names
    // the real program's frames as the forger likes.
    for (const char* name : {"Work", "Fake"}) {
      const std::string src = dir_.Join(std::string(name) + ".cc");
      symtest::WriteFile(src, std::string("int ") + name + "(int x) { return x * 3; }\n" +
                                  "int main(int argc, char**) { return " + name + "(argc); }\n");
      const std::string bin = dir_.Join(name);
      Run(absl::StrCat("g++ -O0 -g -Wl,--build-id=0x", kBuildId, " -o ", bin, " ", src));
    }
    real_ = dir_.Join("Work");
    work_ = std::stoull(RunCommand("nm " + real_ + " | awk '/ _Z4Worki$/ {printf \"%s\", $1}'").out,
                        nullptr, 16);
    ASSERT_EQ(
        work_,
        std::stoull(
            RunCommand("nm " + dir_.Join("Fake") + " | awk '/ _Z4Fakei$/ {printf \"%s\", $1}'").out,
            nullptr, 16));
    cache_ = dir_.Join("cache");
    ASSERT_TRUE(Symbolizer().IndexBinary(dir_.Join("Fake")).ok());
    index_ = CacheFileFor(cache_, kBuildId);
    ASSERT_EQ(access(index_.c_str(), R_OK), 0);
  }
  void Run(const std::string& cmd) {
    auto r = RunCommand(cmd, "", true);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.out;
  }
  OfflineSymbolizer Symbolizer() {
    OfflineSymbolizerOptions o;
    o.cache_dir = cache_;
    o.debug_dirs = {dir_.Join("no-debug-dir")};
    o.debuginfod = false;
    return OfflineSymbolizer(o);
  }
  // The name of the real program's Work() as a symbolizer with the cache answers it.
  std::string NameOfWork(std::vector<std::string>* warnings = nullptr) {
    OfflineSymbolizer s = Symbolizer();
    std::vector<SymbolizedAddress> out;
    const uint64_t addresses[] = {work_};
    EXPECT_TRUE(s.SymbolizeBuildId(kBuildId, real_, addresses, &out).ok());
    if (warnings != nullptr) *warnings = s.warnings();
    return out.empty() || out[0].frames.empty() ? std::string()
                                                : std::string(out[0].frames[0].function);
  }

  TempDir dir_;
  std::string real_, cache_, index_;
  uint64_t work_ = 0;
};

TEST_F(SymbolCacheTest, AnIndexInThisUsersCacheIsBelieved) {
  // The control: the cache is used when it is ours, so the cases below can tell.
  EXPECT_EQ(NameOfWork(), "Fake(int)");
}

TEST_F(SymbolCacheTest, ADirectoryOthersCanWriteIsNotUsed) {
  ASSERT_EQ(chmod(cache_.c_str(), 0777), 0);
  std::vector<std::string> warnings;
  EXPECT_EQ(NameOfWork(&warnings), "Work(int)");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("another user can write there"), std::string::npos) << warnings[0];
  // Not even sticky (as /tmp is) makes the cache itself trusted.
  ASSERT_EQ(chmod(cache_.c_str(), 01777), 0);
  EXPECT_EQ(NameOfWork(), "Work(int)");
}

TEST_F(SymbolCacheTest, ADirectoryOrAFileOfAnotherUserIsNotUsed) {
  if (geteuid() != 0) GTEST_SKIP() << "giving files away needs root";
  ASSERT_EQ(chown(cache_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(NameOfWork(), "Work(int)");
  ASSERT_EQ(chown(cache_.c_str(), 0, 0), 0);
  ASSERT_EQ(chown(index_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(NameOfWork(), "Work(int)");
}

TEST_F(SymbolCacheTest, AFileOthersCanWriteIsNotUsed) {
  ASSERT_EQ(chmod(index_.c_str(), 0666), 0);
  EXPECT_EQ(NameOfWork(), "Work(int)");
}

TEST_F(SymbolCacheTest, ADirectoryBelowOneOthersCanWriteIsNotUsed) {
  // dir_/shared is writable by everyone without the sticky bit: anyone can rename our cache away
  // and put theirs in its place.
  const std::string shared = dir_.Join("shared");
  ASSERT_EQ(mkdir(shared.c_str(), 0777), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  ASSERT_EQ(rename(cache_.c_str(), (shared + "/cache").c_str()), 0);
  cache_ = shared + "/cache";
  EXPECT_EQ(NameOfWork(), "Work(int)");
  EXPECT_FALSE(CheckCacheDir(cache_).ok());
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);  // sticky, as /tmp: our directory stays ours
  EXPECT_TRUE(CheckCacheDir(cache_).ok()) << CheckCacheDir(cache_);
}

TEST_F(SymbolCacheTest, WritesDoNotFollowAPlantedSymbolicLink) {
  ASSERT_EQ(unlink(index_.c_str()), 0);
  const std::string victim = dir_.Join("victim");
  const std::string tmp = index_ + ".tmp." + std::to_string(getpid());
  ASSERT_EQ(symlink(victim.c_str(), tmp.c_str()), 0);
  (void)Symbolizer().IndexBinary(real_);
  EXPECT_NE(access(victim.c_str(), F_OK), 0) << "the index was written through the link";
}

TEST(CacheDirTest, WithoutHomeTheCacheIsNeverUnderTmp) {
  const char* saved_home = std::getenv("HOME");
  const std::string home = saved_home != nullptr ? saved_home : "";
  unsetenv("HANGWATCH_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  const std::string dir = DefaultCacheDir();
  if (saved_home != nullptr) setenv("HOME", home.c_str(), 1);
  EXPECT_NE(dir.rfind("/tmp", 0), 0u) << dir;
  EXPECT_TRUE(dir.empty() || dir.find("/.cache/hangwatch") != std::string::npos) << dir;
}

}  // namespace
}  // namespace hangwatch::symbols
