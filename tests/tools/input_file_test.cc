// One rule for the files the command line reads (tools/reader/input_file.h) and how their lines are
// read (tools/reader/line_reader.h): `report`, `top`, `gate` and `export` refuse a FIFO at once
// with one line (none blocks waiting for a writer); `gate` survives a report truncated under it (it
// used to die of SIGBUS reading a mapping); lines of any length are read in one pass, a line over
// the limit is skipped whole and said so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "report/report_record.h"
#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

TEST(InputFile, RefusesFifosAndDirectoriesWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  tools::InputFile f;
  std::string error;
  EXPECT_FALSE(f.Open(fifo, &error));  // returns: O_NONBLOCK, no writer needed
  EXPECT_EQ(error, fifo + ": not a regular file");
  EXPECT_FALSE(f.Open(dir.path(), &error));
  EXPECT_EQ(error, dir.path() + ": a directory");
  EXPECT_FALSE(f.Open("/dev/zero", &error));
  EXPECT_EQ(error, "/dev/zero: not a regular file");
  EXPECT_FALSE(f.Open(dir / "missing", &error));
  EXPECT_EQ(error, dir / "missing" + ": No such file or directory");
  WriteFile(dir / "r.jsonl", "\x1f\x8b rest");
  ASSERT_TRUE(f.Open(dir / "r.jsonl", &error)) << error;
  EXPECT_TRUE(f.IsGzip());
  std::string all;
  ASSERT_TRUE(f.ReadAll(&all, &error));
  EXPECT_EQ(all, "\x1f\x8b rest");
}

// Each command given a FIFO (gate: also as its baseline or allow file): exit 2 and one line naming
// it (`top`: and its summary), at once.
// (`timeout` only turns a command that blocks into a failure instead of a test that never ends.)
TEST(InputFile, EveryCommandRefusesAFifoWithOneLine) {
  TempDir dir;
  const std::string fifo = dir / "fifo", valid = dir / "hangs.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  report::Lag lag;  // a valid report beside the FIFO: the FIFO is what is refused
  lag.pid = 1;
  WriteFile(valid, report::Encode(lag) + "\n");
  const std::vector<std::vector<std::string>> commands = {
      {"report", fifo},
      {"top", fifo},
      {"gate", fifo},
      {"gate", valid, "--baseline", fifo},
      {"gate", valid, "--allow", fifo},
      {"export", "--otlp", "http://127.0.0.1:9", "--no-symbolize", fifo},
  };
  for (const auto& args : commands) {
    std::vector<std::string> argv = {"/usr/bin/timeout", "60", kCli};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_TRUE(Has(r.err, fifo + ": not a regular file") ||
                Has(r.err, fifo + ": skipped: not a regular file"))
        << args[0] << ": " << r.err;
    // `top` skips each unreadable file with a note, then says that none was left.
    EXPECT_EQ(CountLines(r.err), args[0] == "top" ? 2u : 1u) << args[0] << ": " << r.err;
  }
}

// A large report truncated and regrown over and over while `gate` reads it (logrotate's
// copytruncate, at its worst): every run ends with an exit status, none by a signal.
TEST(InputFile, GateSurvivesAReportTruncatedWhileItReads) {
  TempDir dir;
  const std::string path = dir / "hangs.jsonl";
  HangRecord h;
  h.pid = 7;
  h.tid = 7;
  h.process = "/srv/app";
  h.signature = "5151515151515151";
  h.duration_ms = 700;
  Stack s;
  s.count = 1;
  Frame f;
  f.module = "/srv/app";
  f.symbol = std::string(200, 'x');
  for (int i = 0; i < 32; ++i) s.frames.push_back(f);
  h.stacks.push_back(s);
  const std::string line = report::Encode(h) + "\n";
  std::string text;
  while (text.size() < (48u << 20)) text += line;
  WriteFile(path, text);

  std::atomic<bool> stop{false};
  std::thread truncator([&] {
    const int fd = open(path.c_str(), O_WRONLY);
    while (!stop.load()) {
      (void)!ftruncate(fd, static_cast<off_t>(text.size() / 3));
      (void)!ftruncate(fd, 0);
      (void)!pwrite(fd, text.data(), text.size(), 0);
    }
    close(fd);
  });
  for (int run = 0; run < 15; ++run) {
    const auto r = RunCommand({kCli, "gate", "--no-symbolize", path});
    EXPECT_LT(r.exit_code, 128) << "killed by signal " << r.exit_code - 128 << ": " << r.err;
  }
  stop = true;
  truncator.join();
}

TEST(LineReader, LinesOfEveryKindAndOneTooLong) {
  TempDir dir;
  const std::string path = dir / "lines";
  const std::string big(3000, 'b');
  WriteFile(path, "a\n\n" + big + "\nc\n" + std::string(10, 'd') + "\nlast");
  tools::InputFile file;
  std::string error;
  ASSERT_TRUE(file.Open(path, &error)) << error;
  tools::LineReader reader(file, 0, /*max_line_bytes=*/2000);
  std::vector<tools::Line> lines;
  std::vector<std::string> texts;
  for (tools::Line l; reader.Next(&l);) {
    lines.push_back(l);
    texts.emplace_back(l.text);
  }
  EXPECT_EQ(reader.error(), 0);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(texts, (std::vector<std::string>{"a", "", "", "c", "dddddddddd", "last"}));
  EXPECT_TRUE(lines[2].too_long);
  EXPECT_EQ(lines[2].offset, 3u);
  EXPECT_EQ(lines[2].length, 3000u);
  EXPECT_EQ(lines[3].offset, 3004u);
  EXPECT_TRUE(lines[4].terminated);
  EXPECT_FALSE(lines[5].terminated);
  EXPECT_EQ(reader.offset(), 3004u + 2 + 11 + 4);
  // From an offset (export resumes there).
  tools::LineReader from(file, 3004);
  tools::Line l;
  ASSERT_TRUE(from.Next(&l));
  EXPECT_EQ(l.text, "c");
}

}  // namespace
}  // namespace hangwatch::testing
