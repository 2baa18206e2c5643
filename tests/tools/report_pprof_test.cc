// `hangwatch report --format pprof`, read by Go's own pprof (`go tool pprof`, Debian golang-go):
// a program with three known hangs (three_culprits_program.cc: BusyCulprit busy, SleepCulprit
// and PipeCulprit blocked) writes its report; the profile must show the three culprits, each in
// the samples of its class, with the pid label, the sample types, files and lines, and mappings
// that carry build-ids.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/report_record.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
const std::string kGo = "/usr/bin/go";

class ReportPprof : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const std::string report = *dir_ / "hangs.jsonl";
    const auto run = RunCommand({THREE_CULPRITS_PROGRAM, report, "400"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    for (const std::string& line : Lines(ReadFile(report))) {
      hangs_.push_back(nlohmann::json::parse(line));
    }
    profile_ = *dir_ / "hangs.pb.gz";
    const auto r = RunCommand({kCli, "report", report, "--format", "pprof", "-o", profile_},
                              {"HANGWATCH_CACHE_DIR=" + *dir_ / "cache"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t at = 0;
    for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
      lines.push_back(text.substr(at, nl - at));
    }
    return lines;
  }

  // `go tool pprof -symbolize=none ARGS... PROFILE`: what pprof itself reads from the file.
  static CommandResult Pprof(std::vector<std::string> args) {
    args.insert(args.begin(), {kGo, "tool", "pprof", "-symbolize=none"});
    args.push_back(profile_);
    return RunCommand(args, {"HOME=" + dir_->path(), "GOCACHE=" + *dir_ / "gocache",
                             "PPROF_TMPDIR=" + dir_->path()});
  }

  static TempDir* dir_;
  static std::string profile_;
  static std::vector<nlohmann::json> hangs_;
};
TempDir* ReportPprof::dir_ = nullptr;
std::string ReportPprof::profile_;
std::vector<nlohmann::json> ReportPprof::hangs_;

const std::map<std::string, std::string> kCulpritClass = {
    {"BusyCulprit", "busy"}, {"SleepCulprit", "blocked"}, {"PipeCulprit", "blocked"}};

TEST_F(ReportPprof, TheFixtureHasItsThreeHangs) {
  ASSERT_EQ(hangs_.size(), 3u);
  for (const auto& h : hangs_) {
    const std::string culprit = h["culprit"]["symbol"];
    ASSERT_EQ(kCulpritClass.count(culprit), 1u) << h.dump();
    EXPECT_EQ(h["class"], kCulpritClass.at(culprit)) << culprit;
  }
}

TEST_F(ReportPprof, TopShowsTheThreeCulprits) {
  const auto top = Pprof({"-top"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_TRUE(Has(top.out, "Type: wall")) << top.out;
  for (const auto& [culprit, cls] : kCulpritClass) {
    EXPECT_TRUE(Has(top.out, " " + culprit + "\n")) << culprit << "\n" << top.out;
  }
  // The CPU sample type: only the busy hang consumed CPU worth showing at the top.
  const auto cpu = Pprof({"-top", "-sample_index=cpu"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto lines = Lines(cpu.out);
  size_t first_row = 0;
  while (first_row < lines.size() && !Has(lines[first_row], "flat  flat%")) ++first_row;
  ASSERT_LT(first_row + 1, lines.size()) << cpu.out;
  EXPECT_TRUE(Has(lines[first_row + 1], " BusyCulprit")) << cpu.out;
  // Sample counts: one per successful capture, summed over the three hangs.
  uint64_t samples = 0;
  for (const auto& h : hangs_) samples += h["samples"].get<uint64_t>();
  const auto count = Pprof({"-top", "-sample_index=samples"});
  EXPECT_TRUE(Has(count.out, "Total samples = " + std::to_string(samples) + " \n")) << count.out;
}

TEST_F(ReportPprof, EveryCulpritIsTaggedWithItsClass) {
  const auto traces = Pprof({"-traces"});
  ASSERT_EQ(traces.exit_code, 0) << traces.err;
  std::map<std::string, std::string> found;  // culprit -> class label of its sample
  size_t at = 0;
  const std::string sep = "-----------+-------------------------------------------------------\n";
  while ((at = traces.out.find(sep, at)) != std::string::npos) {
    at += sep.size();
    const size_t next = traces.out.find(sep, at);
    const std::string block = traces.out.substr(at, next == std::string::npos ? next : next - at);
    if (block.find_first_not_of(" \n") == std::string::npos) continue;  // after the last one
    const size_t c = block.find("class:  ");
    ASSERT_NE(c, std::string::npos) << block;
    const std::string cls = block.substr(c + 8, block.find('\n', c) - c - 8);
    EXPECT_TRUE(Has(block, "pid:  " + std::to_string(hangs_[0]["pid"].get<int64_t>()))) << block;
    for (const auto& [culprit, expected] : kCulpritClass) {
      if (Has(block, " " + culprit + "\n")) found[culprit] = cls;
    }
  }
  for (const auto& [culprit, expected] : kCulpritClass) {
    ASSERT_EQ(found.count(culprit), 1u) << culprit << "\n" << traces.out;
    EXPECT_EQ(found[culprit], expected) << culprit;
  }

  const auto tags = Pprof({"-tags"});
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  EXPECT_TRUE(Has(tags.out, " class: Total")) << tags.out;
  EXPECT_TRUE(Has(tags.out, ": busy\n")) << tags.out;
  EXPECT_TRUE(Has(tags.out, ": blocked\n")) << tags.out;
  for (const auto& h : hangs_) {
    EXPECT_TRUE(Has(tags.out, ": " + h["signature"].get<std::string>() + "\n")) << tags.out;
  }
}

TEST_F(ReportPprof, FilesLinesAndBuildIds) {
  // Offline symbolization gave the culprits their source lines.
  const auto lines = Pprof({"-top", "-lines"});
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  bool busy_line = false;
  for (const std::string& l : Lines(lines.out)) {
    busy_line = busy_line || (Has(l, " BusyCulprit ") && Has(l, "three_culprits_program.cc:"));
  }
  EXPECT_TRUE(busy_line) << lines.out;
  // Every module of the report is a mapping with its build-id.
  const auto raw = Pprof({"-raw"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const std::string mappings = raw.out.substr(raw.out.find("Mappings\n"));
  size_t modules = 0;
  for (const auto& m : hangs_[0]["modules"]) {
    const std::string build_id = m["build_id"];
    if (build_id.empty()) continue;
    ++modules;
    EXPECT_TRUE(Has(mappings, m["path"].get<std::string>() + " " + build_id)) << mappings;
  }
  EXPECT_GE(modules, 2u) << "the program and libc";
  EXPECT_TRUE(Has(raw.out, "samples/count wall/nanoseconds[dflt] cpu/nanoseconds")) << raw.out;
}

TEST_F(ReportPprof, BinaryOutputWantsAFileOnATerminalOnly) {
  // To a pipe (not a terminal) the profile goes to stdout, and it is gzip.
  const auto r =
      RunCommand({kCli, "report", *dir_ / "hangs.jsonl", "--format", "pprof", "--no-symbolize"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GE(r.out.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(r.out[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(r.out[1]), 0x8b);
}

// A Python hang, written by the test: each Python frame is a location without a
// mapping or an address, with its function, file and line, which Go's pprof reads as such; the
// native frames around them keep their mappings.
TEST(ReportPprofPython, PythonFramesAreFunctionsWithFilesAndLinesWithoutMapping) {
  TempDir dir;
  const std::string report = dir / "py.jsonl", profile = dir / "py.pb.gz";
  WriteFile(report, report::Encode(PythonHang()) + "\n");
  const auto r =
      RunCommand({kCli, "report", report, "--format", "pprof", "--no-symbolize", "-o", profile});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto pprof = [&](const std::string& what) {
    return RunCommand(
        {kGo, "tool", "pprof", "-symbolize=none", what, profile},
        {"HOME=" + dir.path(), "GOCACHE=" + dir / "gocache", "PPROF_TMPDIR=" + dir.path()});
  };
  const auto raw = pprof("-raw");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const std::string locations = raw.out.substr(raw.out.find("Locations\n"));
  EXPECT_TRUE(Has(locations, ": 0x0 Handler.handle_request /srv/app.py:42 s=0\n")) << raw.out;
  EXPECT_TRUE(Has(locations, ": 0x0 Server.serve /srv/app.py:80 s=0\n")) << raw.out;
  EXPECT_TRUE(
      Has(locations, ": 0x0 BaseServer.serve_forever /usr/lib/python3.11/socketserver.py:233"))
      << raw.out;
  EXPECT_FALSE(Has(raw.out, "0x7f3a1")) << "no code object's address: " << raw.out;
  EXPECT_TRUE(Has(locations, " M=1 clock_nanosleep")) << raw.out;
  const auto top = pprof("-top");
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // -top merges a function's lines: 8 samples of 100 ms under Handler.handle_request.
  EXPECT_TRUE(Has(top.out, "800ms   100%  Handler.handle_request\n")) << top.out;
  const auto lines = pprof("-traces");
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_TRUE(Has(lines.out, "Handler.handle_request\n")) << lines.out;
}

}  // namespace
}  // namespace hangwatch::testing
