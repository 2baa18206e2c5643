// The one command-line parser of every subcommand (tools/common/flag_parser.h) and the one
// JUnit writer (tools/common/junit_writer.h), on their own; the commands' messages are
// compared with the previous build's by scripts/compare-cli-output.sh.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tools/common/flag_parser.h"
#include "tools/common/junit_writer.h"
#include "tools/common/names.h"

namespace hangwatch::testing {
namespace {

using tools::FlagParser;

// Parses `args` (after a command name) and returns the exit status (nullopt: go on), with what
// went to stderr in *err.
std::optional<int> ParseArgs(FlagParser* parser, std::vector<std::string> args,
                             std::string* err = nullptr, int first = 1) {
  args.insert(args.begin(), "cmd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const std::optional<int> done = parser->Parse(static_cast<int>(argv.size()), argv.data(), first);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  if (err != nullptr) *err = printed;
  return done;
}

TEST(FlagParser, ValuesSeparateOrAfterAnEqualsSignAndAliases) {
  std::string format, output;
  bool quiet = false;
  FlagParser p("hangwatch x");
  p.String({"--format", "-f"}, &format);
  p.String({"--output"}, &output);
  p.Switch({"--quiet"}, [&] { quiet = true; });
  EXPECT_EQ(ParseArgs(&p, {"-f=json", "a", "--output", "o.txt", "--quiet", "b"}), std::nullopt);
  EXPECT_EQ(format, "json");
  EXPECT_EQ(output, "o.txt");
  EXPECT_TRUE(quiet);
  EXPECT_EQ(p.positional(), (std::vector<std::string>{"a", "b"}));
}

TEST(FlagParser, AMissingValueIsAnUnknownOptionUnlessTheFlagSaysOtherwise) {
  std::string v;
  FlagParser p("hangwatch x");
  p.String({"--title"}, &v);
  p.String({"--format"}, &v);
  p.MissingValue("--format wants text or json");
  std::string err;
  EXPECT_EQ(ParseArgs(&p, {"--title"}, &err), 2);
  EXPECT_EQ(err,
            "hangwatch x: unknown option '--title' or missing value (see hangwatch x --help)\n");
  EXPECT_EQ(ParseArgs(&p, {"--format"}, &err), 2);
  EXPECT_EQ(err, "hangwatch x: --format wants text or json\n");
  // "--titles" is not "--title": no prefix matching.
  EXPECT_EQ(ParseArgs(&p, {"--titles=x"}, &err), 2);
  EXPECT_EQ(err,
            "hangwatch x: unknown option '--titles=x' or missing value (see hangwatch x --help)\n");
}

TEST(FlagParser, NumbersAreDecimalDigitsWithinTheirRange) {
  long n = -1;
  FlagParser p("hangwatch x");
  p.Number({"--n"}, 1, 512, &n);
  std::string err;
  EXPECT_EQ(ParseArgs(&p, {"--n=512"}), std::nullopt);
  EXPECT_EQ(n, 512);
  for (const char* bad : {"513", "0", "-1", "+5", " 5", "5x", "", "99999999999999999999999"}) {
    EXPECT_EQ(ParseArgs(&p, {"--n", bad}, &err), 2) << bad;
    EXPECT_EQ(err,
              std::string("hangwatch x: --n wants a number from 1 to 512, not '") + bad + "'\n");
  }
  EXPECT_EQ(n, 512);
  FlagParser own("hangwatch x");
  own.Number({"--jobs"}, 1, 8, &n, "--jobs wants a positive number");
  EXPECT_EQ(ParseArgs(&own, {"--jobs", "0"}, &err), 2);
  EXPECT_EQ(err, "hangwatch x: --jobs wants a positive number\n");
}

TEST(FlagParser, AListTakesTheArgumentsUpToTheNextOption) {
  std::vector<std::string> list;
  FlagParser p("hangwatch x");
  p.List({"--baseline"}, [&](const std::string& v) {
    list.push_back(v);
    return std::string();
  });
  p.Switch({"--quiet"}, [] {});
  EXPECT_EQ(ParseArgs(&p, {"--baseline", "a", "b", "--quiet", "c", "--baseline=d", "e"}),
            std::nullopt);
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(p.positional(), (std::vector<std::string>{"c", "e"}));
}

TEST(FlagParser, DoubleDashHelpAndTheCommandAfterTheOptions) {
  FlagParser files("hangwatch x");
  files.Help({"usage\n"});
  EXPECT_EQ(ParseArgs(&files, {"a", "--", "--b", "-"}), std::nullopt);
  EXPECT_EQ(files.positional(), (std::vector<std::string>{"a", "--b", "-"}));
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(ParseArgs(&files, {"-h"}), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "usage\n");

  bool live = false;
  FlagParser run("hangwatch run");
  run.Switch({"--live"}, [&] { live = true; });
  run.StopAtPositional();
  EXPECT_EQ(ParseArgs(&run, {"--live", "prog", "--live"}), std::nullopt);
  EXPECT_EQ(run.rest(), 2);  // argv[2] is "prog"; its "--live" is its own
  EXPECT_EQ(ParseArgs(&run, {"--", "--live"}), std::nullopt);
  EXPECT_EQ(run.rest(), 2);
}

TEST(FlagParser, WhatDiffersBetweenCommandsIsDeclared) {
  std::string err;
  FlagParser addresses("hangwatch symbolize");
  addresses.DashDigitIsPositional();
  addresses.NoDoubleDash();
  addresses.UnknownOption("unknown option '{}' (see --help)");
  EXPECT_EQ(ParseArgs(&addresses, {"-5", "0x10"}), std::nullopt);
  EXPECT_EQ(addresses.positional(), (std::vector<std::string>{"-5", "0x10"}));
  EXPECT_EQ(ParseArgs(&addresses, {"--"}, &err), 2);
  EXPECT_EQ(err, "hangwatch symbolize: unknown option '--' (see --help)\n");

  FlagParser pid("hangwatch snapshot");
  pid.LoneDashIsOption();
  pid.UnknownOption("unknown option '{}'");
  pid.FailSuffix(" (try hangwatch snapshot --help)");
  pid.Positional([](const std::string& a) { return "'" + a + "' is not a process id"; });
  EXPECT_EQ(ParseArgs(&pid, {"-"}, &err), 2);
  EXPECT_EQ(err, "hangwatch snapshot: unknown option '-' (try hangwatch snapshot --help)\n");
  EXPECT_EQ(ParseArgs(&pid, {"x\x1b"}, &err), 2);
  EXPECT_EQ(err,
            "hangwatch snapshot: 'x\\x1b' is not a process id (try hangwatch snapshot "
            "--help)\n");

  FlagParser redacting("hangwatch export");
  redacting.Redact([](std::string_view s) {
    std::string out(s);
    const size_t at = out.find("secret");
    if (at != std::string::npos) out.replace(at, 6, "***");
    return out;
  });
  EXPECT_EQ(ParseArgs(&redacting, {"--secret"}, &err), 2);
  EXPECT_EQ(err,
            "hangwatch export: unknown option '--***' or missing value (see hangwatch export "
            "--help)\n");
}

TEST(JunitWriter, CountsEscapesAndEmptyCases) {
  tools::JunitSuites s{"hangwatch", "prog <a&b>", 1.5, {}};
  tools::JunitCase& passed = s.cases.emplace_back();
  passed.classname = "hangwatch";
  passed.name = "fine";
  passed.empty_element = true;
  tools::JunitCase& failed = s.cases.emplace_back();
  failed.classname = "c";
  failed.name = "hang \"x\"";
  failed.seconds = 0.25;
  failed.outcome = tools::JunitCase::Outcome::kFailure;
  failed.type = "hang";
  failed.message = "two\nlines";
  failed.body = "a < b\n";
  tools::JunitCase& error = s.cases.emplace_back();
  error.name = "e";
  error.seconds = -1;
  error.outcome = tools::JunitCase::Outcome::kError;
  error.out = "said";
  EXPECT_EQ(tools::FormatJunitXml(s),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"hangwatch\" tests=\"3\" failures=\"1\" errors=\"1\" "
            "time=\"1.500\">\n"
            "  <testsuite name=\"prog &lt;a&amp;b&gt;\" tests=\"3\" failures=\"1\" errors=\"1\" "
            "skipped=\"0\" time=\"1.500\">\n"
            "    <testcase classname=\"hangwatch\" name=\"fine\" time=\"0.000\"/>\n"
            "    <testcase classname=\"c\" name=\"hang &quot;x&quot;\" time=\"0.250\">\n"
            "      <failure type=\"hang\" message=\"two&#10;lines\">a &lt; b\n</failure>\n"
            "    </testcase>\n"
            "    <testcase classname=\"\" name=\"e\" time=\"0.000\">\n"
            "      <error type=\"\" message=\"\"></error>\n"
            "      <system-out>said</system-out>\n"
            "    </testcase>\n"
            "  </testsuite>\n</testsuites>\n");
}

TEST(Names, FileLine) {
  EXPECT_EQ(tools::FileLine("a.cc", 12), "a.cc:12");
  EXPECT_EQ(tools::FileLine("a.cc", 0), "a.cc");
  EXPECT_EQ(tools::FileLine("", 12), "");
}

}  // namespace
}  // namespace hangwatch::testing
