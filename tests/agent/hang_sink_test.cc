// The agent's sinks on their own: what each does with a record, and what it reports as failed.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/sinks/callback_sink.h"
#include "agent/sinks/jsonl_sink.h"
#include "report/report_record.h"

namespace hangwatch::agent {
namespace {

// A fresh file name in GoogleTest's scratch directory.
std::string ScratchFile(const char* name) {
  const std::string path =
      ::testing::TempDir() + "hangwatch_sink_" + name + "_" + std::to_string(getpid()) + ".jsonl";
  unlink(path.c_str());
  return path;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

report::StartupStall Stall() {
  report::StartupStall s;
  s.pid = 42;
  s.process = "/bin/app";
  s.duration_ms = 2500;
  s.threshold_ms = 2000;
  return s;
}

// The preload shim's path: a start-up stall after a torn line starts on a line of its own.
TEST(HangSinkTest, JsonlSinkWritesEveryRecordTypeOnWholeLines) {
  const std::string path = ScratchFile("jsonl");
  { std::ofstream(path) << "{\"torn"; }
  {
    JsonlSink sink(path, 1 << 20);
    std::string error;
    ASSERT_TRUE(sink.Open(&error)) << error;
    EXPECT_TRUE(sink.MayBlock());
    SinkErrors errors;
    sink.OnStartupStall(Stall(), &errors);
    HangRecord hang;
    hang.hang_id = 7;
    sink.OnHang(hang, &errors);
    EXPECT_TRUE(errors.empty());
    const std::vector<std::string> want = {"{\"torn", report::Encode(Stall()),
                                           report::Encode(hang)};
    EXPECT_EQ(Lines(path), want);
  }
  unlink(path.c_str());
}

TEST(HangSinkTest, JsonlSinkReportsAFailedWrite) {
  const std::string path = ScratchFile("closed");
  JsonlSink sink(path, 1 << 20);
  std::string error;
  ASSERT_TRUE(sink.Open(&error)) << error;
  unlink(path.c_str());
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);  // the name now is a directory: cannot be opened
  sink.ReleaseAfterFork();                  // drops the descriptor as a forked child would
  SinkErrors errors;
  sink.OnHang(HangRecord{}, &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(path), std::string::npos) << errors[0];
  rmdir(path.c_str());
}

TEST(HangSinkTest, CallbackSinkWantsOnlyWithACallbackAndReportsThrows) {
  EXPECT_FALSE(CallbackSink(nullptr).Wants());
  int calls = 0;
  CallbackSink sink([&](const HangRecord&) {
    ++calls;
    throw std::runtime_error("boom");
  });
  EXPECT_TRUE(sink.Wants());
  EXPECT_TRUE(sink.MayBlock());
  SinkErrors errors;
  sink.OnHang(HangRecord{}, &errors);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "a hang callback threw: boom");
}

}  // namespace
}  // namespace hangwatch::agent
