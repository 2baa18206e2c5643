// `hangwatch run --fail-on-hang` on a program whose argv[0] and label are not UTF-8: the hang
// line stays readable (each such byte is U+FFFD, report/utf8.h), so the run fails with 3 and
// the hang is read back, where one odd byte used to make it "no hangs" and exit 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
const std::string kFffd = "\xef\xbf\xbd";

TEST(RunNonUtf8, ProgramNameAndLabelThatAreNotUtf8StillFailTheRun) {
  TempDir dir;
  const std::string program = dir / "stall\xff\xfe";  // argv[0] and the executable's name
  ASSERT_EQ(symlink(STALL_PROGRAM, program.c_str()), 0);
  const auto r =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10", "--fail-on-hang",
                  "--report", dir / "hangs.jsonl", "--", program, "0", "600"},
                 {"HANGWATCH_LABELS=team=core\xff"});
  EXPECT_EQ(r.exit_code, 3) << r.err;

  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "hangs.jsonl", &report, &error)) << error;
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(dir / "hangs.jsonl");
  EXPECT_EQ(report.hangs[0].process_name, "stall" + kFffd + kFffd);
  EXPECT_EQ(report.hangs[0].labels.at("team"), "core" + kFffd);
  EXPECT_EQ(report.skipped_lines, 0u);
}

}  // namespace
}  // namespace hangwatch::testing
