// run's read of its report (tools/run/run_report_follower.h): the lines appended across a
// rotation, through the shared line source, numbered across the files in the order they were
// found; a file's torn last line is a line of its own; a line over the readers' limit is
// skipped and said, not kept.
#include "tools/run/run_report_follower.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <fstream>
#include <string>

#include "cli_util.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::ReadFile;
using hangwatch::testing::TempDir;

const std::string kCorpus = FUZZ_CORPUS_DIR;

// One valid hang line of the corpus (without its '\n').
std::string OneHangLine() {
  std::string text = ReadFile(kCorpus + "/small_fatal.jsonl");
  return text.substr(0, text.find('\n'));
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

TEST(RunReportFollower, LinesAcrossARotationAreNumberedInTheOrderTheFilesWereFound) {
  TempDir dir;
  const std::string path = dir.path() + "/report.jsonl";
  const std::string hang = OneHangLine();
  Append(path, hang + "\n");  // before the run: not the run's
  RunReportFollower follower(path);
  // The run: a hang, then a line torn by the rotation.
  Append(path, hang + "\n{\"type\":\"ha");
  ASSERT_EQ(rename(path.c_str(), (path + ".1").c_str()), 0);
  Append(path, "not json\n" + hang + "\n");
  Report report;
  JsonLinesParser parser(&report);
  std::string error;
  ASSERT_TRUE(follower.ReadAppended(&parser, &error)) << error;
  ASSERT_TRUE(parser.Finish(&error)) << error;
  EXPECT_EQ(report.hangs.size(), 2u);
  EXPECT_EQ(report.skipped_lines, 2u);  // the torn line and "not json"
  EXPECT_EQ(report.first_error.rfind("line 2: ", 0), 0u) << report.first_error;
}

TEST(RunReportFollower, ALineOverTheLimitIsSkippedAndSaid) {
  TempDir dir;
  const std::string path = dir.path() + "/report.jsonl";
  Append(path, "");
  RunReportFollower follower(path);
  std::string text(kMaxLineBytes + 1, 'x');
  text += '\n';
  text += OneHangLine();
  text += '\n';
  Append(path, text);
  Report report;
  JsonLinesParser parser(&report);
  std::string error;
  ASSERT_TRUE(follower.ReadAppended(&parser, &error)) << error;
  ASSERT_TRUE(parser.Finish(&error)) << error;
  EXPECT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.skipped_lines, 1u);
  EXPECT_EQ(report.first_error, "line 1: longer than 64 MiB");
}

TEST(RunReportFollower, ARunThatAppendedNothingGivesNoLines) {
  TempDir dir;
  const std::string path = dir.path() + "/report.jsonl";
  Append(path, OneHangLine() + "\n");
  RunReportFollower follower(path);
  Report report;
  JsonLinesParser parser(&report);
  std::string error;
  ASSERT_TRUE(follower.ReadAppended(&parser, &error)) << error;
  EXPECT_TRUE(parser.Finish(&error));
  EXPECT_TRUE(report.hangs.empty());
  EXPECT_EQ(report.skipped_lines, 0u);
}

}  // namespace
}  // namespace hangwatch::tools
