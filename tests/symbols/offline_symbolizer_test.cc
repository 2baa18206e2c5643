// OfflineSymbolizer, the library API behind `hangwatch symbolize` and `hangwatch report`:
// by path and by build-id (search paths, debug directories, recorded module path), cold
// (units covering the addresses only) and whole-index answers agree, cache behaviour.
#include "symbols/offline_symbolizer.h"

#include <cstring>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbols/index/symbol_index.h"
#include "symbols/index/symbol_index_format.h"

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

// A cached index is a file anyone could have written: damaged copies of a real one (format 5:
// zstd chunks, varint blocks, token-coded names) must open with an error or answer without
// crashing, under ASan and UBSan too.
TEST_F(OfflineSymbolizerTest, DamagedCachedIndexNeverCrashes) {
  auto options = Options();
  OfflineSymbolizer s(options);
  auto path = s.IndexBinary(bin_);
  ASSERT_TRUE(path.ok()) << path.status();
  const std::string good = symtest::ReadFile(*path);
  ASSERT_GT(good.size(), sizeof(index_format::Header));
  auto lookup_all = [&](std::string bytes) {
    auto index = SymbolIndex::FromBytes(std::move(bytes));
    if (!index.ok()) return false;
    SymbolizedAddress out;
    std::string text;
    for (uint64_t a : addrs_) {
      (*index)->Lookup(a, &out);
      AppendLlvmStyle(out, &text);
    }
    return !text.empty();
  };
  // The intact index answers like llvm-symbolizer.
  {
    auto index = SymbolIndex::FromBytes(good);
    ASSERT_TRUE(index.ok()) << index.status();
    std::string text;
    SymbolizedAddress out;
    for (uint64_t a : addrs_) {
      (*index)->Lookup(a, &out);
      AppendLlvmStyle(out, &text);
    }
    EXPECT_EQ(text, llvm_);
  }
  // Every byte of the header and section table, and bytes all over the body, set to values
  // that tend to break offsets and lengths.
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u; };
  int opened = 0;
  for (size_t i = 0; i < sizeof(index_format::Header) + 2000; ++i) {
    std::string bad = good;
    const size_t at = i < sizeof(index_format::Header) ? i : next() % bad.size();
    for (uint8_t v : {uint8_t{0}, uint8_t{0xff}, uint8_t{0x80}, static_cast<uint8_t>(next())}) {
      bad[at] = static_cast<char>(v);
      opened += lookup_all(bad) ? 1 : 0;
    }
  }
  EXPECT_GT(opened, 0);  // most body damage still opens (and then answers something)
  // Truncated copies are refused (the header records the size).
  for (size_t cut :
       {size_t{0}, size_t{7}, sizeof(index_format::Header), good.size() / 2, good.size() - 1}) {
    EXPECT_FALSE(SymbolIndex::FromBytes(good.substr(0, cut)).ok()) << cut;
  }
  // A compressed chunk that does not inflate reads as zeros: answers, no crash.
  index_format::Header header;
  std::memcpy(&header, good.data(), sizeof(header));
  for (uint32_t sec : {index_format::kMapData, index_format::kNodeData, index_format::kLineData,
                       index_format::kNameData}) {
    if (header.chunks[sec].begin == header.chunks[sec].end) continue;
    index_format::Chunk chunk;
    std::memcpy(&chunk,
                good.data() + header.sections[index_format::kChunks].offset +
                    header.chunks[sec].begin * sizeof(chunk),
                sizeof(chunk));
    std::string bad = good;
    for (uint32_t k = 0; k < chunk.size; k += 7) bad[chunk.offset + k] ^= 0x5a;
    EXPECT_TRUE(lookup_all(bad)) << "section " << sec;
  }
  // Chunk ranges on sections that are read as plain tables are refused.
  for (uint32_t sec : {index_format::kStrings, index_format::kChunks, index_format::kCus}) {
    index_format::Header h = header;
    h.chunks[sec] = {0, 1};
    std::string bad = good;
    std::memcpy(bad.data(), &h, sizeof(h));
    EXPECT_FALSE(SymbolIndex::FromBytes(bad).ok()) << "section " << sec;
  }
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
