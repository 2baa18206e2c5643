// OfflineSymbolizer, the library API behind `hangwatch symbolize` and `hangwatch report`:
// by path and by build-id (search paths, debug directories, recorded module path), cold
// (units covering the addresses only) and whole-index answers agree, cache behaviour.
#include "symbols/offline_symbolizer.h"

#include <string>
#include <vector>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbols/symbol_index.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

std::string Render(const std::vector<SymbolizedAddress>& answers) {
  std::string out;
  for (const auto& a : answers) AppendLlvmStyle(a, &out);
  return out;
}

class OfflineSymbolizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::WriteFile(dir_.Join("fx.cc"), symtest::FixtureSource());
    bin_ = dir_.Join("fx");
    auto cc = RunCommand("g++ -std=c++17 -O2 -g -o " + bin_ + " " + dir_.Join("fx.cc"), "", true);
    ASSERT_EQ(cc.status, 0) << cc.out;
    for (auto a : symtest::CallSiteAddresses(bin_, 400)) addrs_.push_back(a);
    build_id_ = RunCommand("readelf -n " + bin_ + " | awk '/Build ID/ {printf \"%s\", $3}'").out;
    ASSERT_EQ(build_id_.size(), 40u);
    std::string input;
    for (auto a : addrs_) input += std::to_string(a) + "\n";
    llvm_ = RunCommand("llvm-symbolizer --obj=" + bin_, input).out;
  }
  OfflineSymbolizerOptions Options() {
    OfflineSymbolizerOptions o;
    o.cache_dir = dir_.Join("cache");
    o.debug_dirs = {dir_.Join("no-debug-dir")};
    return o;
  }

  TempDir dir_;
  std::string bin_, build_id_, llvm_;
  std::vector<uint64_t> addrs_;
};

TEST_F(OfflineSymbolizerTest, ColdAndWholeIndexAnswersAgreeWithLlvmSymbolizer) {
  auto cold_options = Options();
  cold_options.cold_limit = 100000;  // always the cold path
  cold_options.write_cache = false;
  cold_options.read_cache = false;
  OfflineSymbolizer cold(cold_options);
  std::vector<SymbolizedAddress> a;
  ASSERT_TRUE(cold.SymbolizeFile(bin_, addrs_, &a).ok());
  EXPECT_EQ(Render(a), llvm_);

  auto full_options = Options();
  full_options.cold_limit = 0;  // always the whole index (and cache it)
  OfflineSymbolizer full(full_options);
  std::vector<SymbolizedAddress> b;
  ASSERT_TRUE(full.SymbolizeFile(bin_, addrs_, &b).ok());
  EXPECT_EQ(Render(b), llvm_);
  EXPECT_EQ(RunCommand("ls " + dir_.Join("cache")).out, build_id_ + ".hwsym\n");

  // A few addresses at a time (cold path per call), as a report symbolizing stack by stack.
  OfflineSymbolizer piecewise(cold_options);
  std::string pieces;
  for (size_t i = 0; i < addrs_.size(); i += 7) {
    std::vector<uint64_t> some(addrs_.begin() + i, addrs_.begin() + std::min(i + 7, addrs_.size()));
    std::vector<SymbolizedAddress> c;
    ASSERT_TRUE(piecewise.SymbolizeFile(bin_, some, &c).ok());
    pieces += Render(c);
  }
  EXPECT_EQ(pieces, llvm_);
}

TEST_F(OfflineSymbolizerTest, ByBuildIdFromSearchPathsWhenTheRecordedPathIsGone) {
  // The report was recorded on another machine: the module path does not exist here, the
  // binary is in a search directory under another name.
  ASSERT_EQ(RunCommand("mkdir -p " + dir_.Join("bins") + " && cp " + bin_ + " " +
                       dir_.Join("bins/renamed"))
                .status,
            0);
  auto options = Options();
  options.search_paths = {dir_.Join("bins")};
  OfflineSymbolizer s(options);
  std::vector<SymbolizedAddress> out;
  ASSERT_TRUE(s.SymbolizeBuildId(build_id_, "/nonexistent/fx", addrs_, &out).ok());
  EXPECT_EQ(Render(out), llvm_);
}

TEST_F(OfflineSymbolizerTest, RecordedPathWithAnotherBuildIsNotUsed) {
  // Same path, different build (rebuilt since): must not give wrong answers.
  const std::string other = dir_.Join("other");
  ASSERT_EQ(RunCommand("g++ -O1 -g -o " + other + " " + dir_.Join("fx.cc") + " -std=c++17").status,
            0);
  OfflineSymbolizer s(Options());
  std::vector<SymbolizedAddress> out;
  absl::Status st = s.SymbolizeBuildId(build_id_, other, addrs_, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  ASSERT_EQ(out.size(), addrs_.size());
  for (const auto& a : out) {
    ASSERT_EQ(a.frames.size(), 1u);
    EXPECT_TRUE(a.frames[0].function.empty());
  }
}

TEST_F(OfflineSymbolizerTest, ByBuildIdInADebugDirectory) {
  const std::string d = dir_.Join("debug");
  const std::string target =
      d + "/.build-id/" + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug";
  ASSERT_EQ(RunCommand("mkdir -p $(dirname " + target + ") && objcopy --only-keep-debug " + bin_ +
                       " " + target)
                .status,
            0);
  auto options = Options();
  options.debug_dirs = {d};
  OfflineSymbolizer s(options);
  std::vector<SymbolizedAddress> out;
  ASSERT_TRUE(s.SymbolizeBuildId(build_id_, "", addrs_, &out).ok());
  // The debug file's own symbol table names the outermost frames: same as the binary's here.
  EXPECT_EQ(Render(out), llvm_);
}

TEST(CacheDirTest, EnvironmentOrder) {
  setenv("HANGWATCH_CACHE_DIR", "/a/b", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  setenv("HOME", "/h", 1);
  EXPECT_EQ(DefaultCacheDir(), "/a/b");
  unsetenv("HANGWATCH_CACHE_DIR");
  EXPECT_EQ(DefaultCacheDir(), "/x/hangwatch");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(DefaultCacheDir(), "/h/.cache/hangwatch");
  EXPECT_EQ(CacheFileFor("/c", "abcd"), "/c/abcd.hwsym");
}

}  // namespace
}  // namespace hangwatch::symbols
