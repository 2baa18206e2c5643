// DebugFileLocator's chains in their order (build-id directories before .gnu_debuglink before
// BINARY.debug; recorded path before --search before build-id directories), what they reject,
// and BatchSymbolizer's batching (one lookup per module and address, return addresses at the
// call, failures per module).
#include "symbols/debug_file_locator.h"

#include <string>
#include <vector>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbols/batch_symbolizer.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

class DebugFileLocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::WriteFile(dir_.Join("p.cc"),
                       "int Work(int x) { return x * 3; }\n"
                       "int main(int argc, char**) { return Work(argc); }\n");
    bin_ = dir_.Join("prog");
    Run("g++ -O0 -g -Wl,--build-id -o " + bin_ + " " + dir_.Join("p.cc"));
    build_id_ = RunCommand("readelf -n " + bin_ + " | awk '/Build ID/ {printf \"%s\", $3}'").out;
    ASSERT_EQ(build_id_.size(), 40u);
    // The debug file in a build-id tree, a stripped copy, and a stripped copy whose
    // .gnu_debuglink names prog.dbg beside it.
    Run("mkdir -p " + dir_.Join("dbg/.build-id/") + build_id_.substr(0, 2) + " " +
        dir_.Join("strip") + " " + dir_.Join("link") + " " + dir_.Join("empty"));
    by_id_ =
        dir_.Join("dbg/.build-id/") + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug";
    Run("objcopy --only-keep-debug " + bin_ + " " + by_id_);
    stripped_ = dir_.Join("strip/prog");
    Run("strip -g -o " + stripped_ + " " + bin_);
    linked_ = dir_.Join("link/prog");
    Run("cp " + by_id_ + " " + dir_.Join("link/prog.dbg") + " && cd " + dir_.Join("link") +
        " && objcopy --add-gnu-debuglink=prog.dbg " + stripped_ + " prog");
  }
  void Run(const std::string& cmd) {
    auto r = RunCommand(cmd, "", true);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.out;
  }

  TempDir dir_;
  std::string bin_, build_id_, by_id_, stripped_, linked_;
};

TEST_F(DebugFileLocatorTest, SeparateDebugFileTriesBuildIdThenDebuglinkThenBeside) {
  std::vector<std::string> rejected;
  DebugFileLocator with_tree({{dir_.Join("dbg")}, {}});
  EXPECT_EQ(with_tree.FindSeparateDebugFile(linked_, build_id_, &rejected), by_id_);
  DebugFileLocator without({{dir_.Join("empty")}, {}});
  EXPECT_EQ(without.FindSeparateDebugFile(linked_, build_id_, &rejected),
            dir_.Join("link/prog.dbg"));
  EXPECT_EQ(without.FindSeparateDebugFile(stripped_, build_id_, &rejected), "");
  Run("cp " + by_id_ + " " + stripped_ + ".debug");
  EXPECT_EQ(without.FindSeparateDebugFile(stripped_, build_id_, &rejected), stripped_ + ".debug");
  EXPECT_THAT(rejected, ::testing::IsEmpty());

  // A debuglink target whose CRC does not match is reported and skipped.
  Run("echo x >> " + dir_.Join("link/prog.dbg"));
  EXPECT_EQ(without.FindSeparateDebugFile(linked_, build_id_, &rejected), "");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_THAT(rejected[0], ::testing::HasSubstr("CRC mismatch"));
}

TEST_F(DebugFileLocatorTest, AnOversizedDebuglinkTargetIsRejectedBeforeItIsRead) {
  // The debuglink target becomes a 200 GB sparse file (no blocks on disk): checking its CRC
  // would read all of it. Its size alone rejects it.
  const std::string target = dir_.Join("link/prog.dbg");
  Run("truncate -s 200G " + target);
  std::vector<std::string> rejected;
  DebugFileLocator without({{dir_.Join("empty")}, {}});
  EXPECT_EQ(without.FindSeparateDebugFile(linked_, build_id_, &rejected), "");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_THAT(rejected[0], ::testing::HasSubstr("more than the bound of"));
  EXPECT_EQ(without.FindDwarf(linked_, build_id_, &rejected), "");
}

TEST_F(DebugFileLocatorTest, DwarfIsTheSeparateFileElseTheBinaryItself) {
  std::vector<std::string> rejected;
  DebugFileLocator locator({{dir_.Join("empty")}, {}});
  EXPECT_EQ(locator.FindDwarf(bin_, build_id_, &rejected), bin_);
  EXPECT_EQ(locator.FindDwarf(stripped_, build_id_, &rejected), "");
  EXPECT_EQ(locator.FindDwarf(linked_, build_id_, &rejected), dir_.Join("link/prog.dbg"));
}

TEST_F(DebugFileLocatorTest, ByBuildIdTriesRecordedPathThenSearchPathsThenDebugDirs) {
  std::vector<std::string> rejected;
  DebugFileLocator locator({{dir_.Join("dbg")}, {dir_.Join("strip")}});
  EXPECT_EQ(locator.FindByBuildId(build_id_, bin_, &rejected), bin_);
  EXPECT_EQ(locator.FindByBuildId(build_id_, "/nonexistent/prog", &rejected), stripped_);
  DebugFileLocator dirs_only({{dir_.Join("dbg")}, {}});
  EXPECT_EQ(dirs_only.FindByBuildId(build_id_, "/nonexistent/prog", &rejected), by_id_);
  DebugFileLocator nothing({{dir_.Join("empty")}, {}});
  EXPECT_EQ(nothing.FindByBuildId(build_id_, "/nonexistent/prog", &rejected), "");
  EXPECT_EQ(nothing.FindByBuildId("00" + build_id_.substr(2), bin_, &rejected), "");
}

TEST_F(DebugFileLocatorTest, BatchLooksEachAddressUpOncePerModule) {
  BatchSymbolizerOptions options;
  options.symbolizer.read_cache = options.symbolizer.write_cache = false;
  options.symbolizer.debug_dirs = {dir_.Join("empty")};
  BatchSymbolizer batch(options);
  const size_t prog = batch.AddModule(build_id_, bin_);
  const size_t missing = batch.AddModule("", dir_.Join("missing"));
  const size_t unused = batch.AddModule("", bin_);
  const uint64_t work =
      std::stoull(RunCommand("nm " + bin_ + " | awk '$3 == \"_Z4Worki\" {printf \"%s\", $1}'").out,
                  nullptr, 16);
  batch.AddFrame(prog, work + 1, 0);  // innermost: looked up at the address itself
  batch.AddFrame(prog, work + 1, 1);  // a return address: looked up at the call (address - 1)
  batch.AddFrame(prog, work, 0);      // the same address again
  batch.AddFrame(missing, 0x10, 0);
  std::vector<size_t> progress, failed;
  batch.Run(
      [&](size_t done, size_t total, size_t module) {
        EXPECT_EQ(total, 2u);  // `unused` has no frames
        EXPECT_EQ(done, progress.size() + 1);
        progress.push_back(module);
      },
      [&](size_t module, const absl::Status&) { failed.push_back(module); });
  EXPECT_THAT(progress, ::testing::ElementsAre(prog, missing));
  EXPECT_THAT(failed, ::testing::ElementsAre(missing));
  EXPECT_EQ(batch.Answer(missing, 0x10, 0), nullptr);
  EXPECT_EQ(batch.Answer(unused, 0x10, 0), nullptr);
  const SymbolizedAddress* call = batch.Answer(prog, work + 1, 1);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call, batch.Answer(prog, work, 0));  // one lookup for both
  ASSERT_FALSE(call->frames.empty());
  EXPECT_EQ(call->frames.back().function, "Work(int)");
  EXPECT_NE(batch.Answer(prog, work + 1, 0), call);
}

}  // namespace
}  // namespace hangwatch::symbols
