// Reports with bytes that are not UTF-8 (a program path, argv[0], a label, a host name, a symbol),
// as agents before the format's UTF-8 rule wrote them (raw, inside the strings): every reader and
// writer of the command line reads the hang (with U+FFFD for each such byte, report/utf8.h) and
// writes valid output: report's JSON, gate's JSON verdict and JUnit XML, top's groups.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "report/report_record.h"
#include "report/utf8.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
const std::string kFffd = "\xef\xbf\xbd";

// One hang line whose strings carry raw 0xff 0xfe bytes where "@@" stands.
std::string RawBytesLine() {
  HangRecord h;
  h.pid = 7;
  h.tid = 7;
  h.process = "/srv/@@/app";
  h.process_name = "app@@";
  h.host = "web@@";
  h.labels = {{"team", "core@@"}};
  h.duration_ms = 900;
  h.signature = "5151515151515151";
  h.fingerprint = "0123456789abcdef";
  Stack s;
  s.count = 3;
  Frame f;
  f.module = h.process;
  f.offset = 0x1180;
  f.addr = 0x560000001180;
  f.symbol = "Load@@(int)";
  s.frames.push_back(f);
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.culprit.symbol = f.symbol;
  h.culprit.module = h.process;
  h.culprit.offset = f.offset;
  h.culprit.frame = 0;
  h.modules.push_back({h.process, 0x560000000000, ""});
  std::string line = report::Encode(h);
  for (size_t at; (at = line.find("@@")) != std::string::npos;) line.replace(at, 2, "\xff\xfe");
  return line + "\n";
}

class NonUtf8Report : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(report_, RawBytesLine());
    ASSERT_FALSE(report::IsValidUtf8(ReadFile(report_)));
  }
  TempDir dir_;
  const std::string report_ = dir_ / "raw.jsonl";
};

TEST_F(NonUtf8Report, TheReaderKeepsTheHang) {
  tools::Report r;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(report_, &r, &error)) << error;
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.hangs[0].process_name, "app" + kFffd + kFffd);
  EXPECT_EQ(r.hangs[0].labels.at("team"), "core" + kFffd + kFffd);
}

TEST_F(NonUtf8Report, ReportJsonIsValidUtf8) {
  const auto r = RunCommand({kCli, "report", "--no-symbolize", "--format", "json", report_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(report::IsValidUtf8(r.out)) << r.out;
  EXPECT_TRUE(Has(r.out, "\"process_name\":\"app" + kFffd + kFffd + "\"")) << r.out;
}

TEST_F(NonUtf8Report, GateJsonVerdictNamesTheHang) {
  const auto r = RunCommand({kCli, "gate", "--no-symbolize", "--format", "json", report_});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // a new hang: failed, not an abort
  ASSERT_TRUE(report::IsValidUtf8(r.out)) << r.out;
  const auto verdict = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(verdict.is_object()) << r.out << r.err;
  ASSERT_EQ(verdict["new"].size(), 1u) << r.out;
  EXPECT_EQ(verdict["new"][0]["signature"], "5151515151515151");
}

TEST_F(NonUtf8Report, GateJunitIsValidXml) {
  const auto r =
      RunCommand({kCli, "gate", "--no-symbolize", "--junit", dir_ / "junit.xml", report_});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  ExpectValidJunit(dir_ / "junit.xml");
  EXPECT_TRUE(Has(ReadFile(dir_ / "junit.xml"), "Load" + kFffd + kFffd)) << r.err;
}

TEST_F(NonUtf8Report, TopCountsTheHang) {
  const auto r = RunCommand({kCli, "top", "--no-symbolize", "--format", "json", report_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto groups = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(groups.is_array() && groups.size() == 1) << r.out << r.err;
  EXPECT_EQ(groups[0]["count"], 1);
  EXPECT_EQ(groups[0]["process_names"][0]["name"], "app" + kFffd + kFffd);
}

}  // namespace
}  // namespace hangwatch::testing
