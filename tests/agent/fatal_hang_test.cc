// Fatal hangs: a hang still open when the process is killed is read back from the memory-mapped
// open-hang file, reported as fatal by the next Start(), and cleared. Plus the file's defences
// against torn writes and foreign content.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "hang/model/hang_data.h"
#include "hang/model/runtime_frame_word.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"
#include "tests/sanitizers.h"

namespace hangwatch {
namespace {

using agent::OpenHangReadStatus;
using agent::ReadOpenHangFile;

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  std::string p = std::string(dir ? dir : "/tmp") + "/hangwatch_" + name + "_" +
                  std::to_string(getpid()) + ".bin";
  unlink(p.c_str());
  return p;
}

std::atomic<bool> g_never{false};
volatile uint64_t g_spin;

HW_TEST_KEEP_FRAME void StuckForever() {
  while (!g_never.load(std::memory_order_relaxed)) g_spin = g_spin + 1;
}

// Forks a child whose agent writes `path` and whose main thread is stuck in a busy pass
// (interrupted by the sampling signal at every sample), inside ScopedLabel `label` when one is
// given, and waits (up to 20 s) until its hang is open in the file with a few samples (and the
// label): *open says whether it was, *seen is what was read.
pid_t ForkStuckChild(const std::string& path, bool* open, HangRecord* seen, std::string* error,
                     const char* label = nullptr) {
  const pid_t pid = fork();
  if (pid == 0) {
    Config c = testing::TestConfig();
    c.open_hang_path = path;
    if (!Start(c).ok()) _exit(10);
    BeginWork();
    if (label != nullptr) {
      ScopedLabel scoped(label);
      StuckForever();
    }
    StuckForever();
    _exit(11);
  }
  if (pid < 0) return pid;
  *open = testing::WaitUntil(
      [&] {
        return ReadOpenHangFile(path, seen, error) == OpenHangReadStatus::kFound &&
               seen->samples >= 5 && (label == nullptr || seen->context.label == label);
      },
      std::chrono::seconds(20));
  return pid;
}

TEST(FatalHangTest, KilledDuringAHangIsReportedAsFatalByTheNextStart) {
  const std::string path = TempPath("open_hang");
  const std::string json_path = path + ".jsonl";
  unlink(json_path.c_str());
  HangRecord seen;
  std::string error;
  bool open = false;
  // The moment a system watchdog would kill it.
  const pid_t pid = ForkStuckChild(path, &open, &seen, &error);
  ASSERT_GT(pid, 0);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(open) << "the child's hang never showed up in " << path << " " << error;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  testing::HangCollector collector;
  Config c = testing::TestConfig();
  c.open_hang_path = path;
  c.json_path = json_path;
  ASSERT_TRUE(Start(c).ok());
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  EXPECT_TRUE(h.fatal);
  EXPECT_EQ(h.pid, pid);
  EXPECT_GE(h.samples, 5u);
  EXPECT_GE(h.duration_ms, h.threshold_ms);
  EXPECT_EQ(h.threshold_ms, 100u);
  ASSERT_FALSE(h.stacks.empty());
  if (!testing::kTsan) {  // under TSan the innermost frames are its runtime's
    // A capture the starved child did not answer in time is a failed sample: in the timeline
    // without a stack, counted in failed_samples and not in samples (the captures counted in
    // stacks, docs/report-format.md).
    EXPECT_EQ(h.stacks[0].count, h.samples) << "one function, one stack";
    EXPECT_EQ(h.timeline.size(), h.samples + h.failed_samples);
    EXPECT_TRUE(testing::StackMentions(h.stacks[0], "StuckForever", 1))
        << "symbolized through the build-id of this (same) binary: "
        << h.stacks[0].frames[0].symbol;
  }
  EXPECT_FALSE(h.stacks[0].frames[0].build_id.empty());
  // How the samples were taken survives the kill: a busy thread is interrupted by the signal,
  // its first frame is the interrupted pc.
  EXPECT_EQ(h.stacks[0].frames[0].method, FrameMethod::kPc);
  // A failed capture (the child not scheduled within the capture's wait, on a loaded machine)
  // records no method: the first sample with a stack says how it was taken.
  const auto first_captured = std::find_if(h.timeline.begin(), h.timeline.end(),
                                           [](const TimelineEntry& t) { return t.stack >= 0; });
  ASSERT_NE(first_captured, h.timeline.end());
  EXPECT_EQ(first_captured->method, SampleMethod::kSignal);
  EXPECT_EQ(h.fingerprint.size(), 16u);
  EXPECT_EQ(GetStats().fatal_hangs, 1u);
  // In RecentHangs() too, and in the JSON Lines file with "fatal":true.
  const auto recent = RecentHangs();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_TRUE(recent[0].fatal);
  std::ifstream in(json_path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("\"fatal\":true"), std::string::npos);
  // Reported once: the file no longer holds an open hang.
  EXPECT_EQ(ReadOpenHangFile(path, &seen, &error), OpenHangReadStatus::kNoOpenHang) << error;
  unlink(path.c_str());
  unlink(json_path.c_str());
}

// What the pass was serving survives the kill: the open-hang file keeps the hang's context
// (format 8), so the fatal hang the next Start() reports carries the label it was stuck in.
TEST(FatalHangTest, KilledInsideALabelIsReportedWithThatLabel) {
  if (HW_TEST_ASAN) GTEST_SKIP() << "ASan's allocator is not fork-safe here";
  const std::string path = TempPath("open_hang_label");
  HangRecord seen;
  std::string error;
  bool open = false;
  const pid_t pid = ForkStuckChild(path, &open, &seen, &error, "fatal.label");
  ASSERT_GT(pid, 0);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(open) << "the child's labelled hang never showed up in " << path << " " << error;

  testing::HangCollector collector;
  Config c = testing::TestConfig();
  c.open_hang_path = path;
  ASSERT_TRUE(Start(c).ok());
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  EXPECT_TRUE(h.fatal);
  EXPECT_EQ(h.pid, pid);
  EXPECT_EQ(h.context.label, "fatal.label");
  EXPECT_EQ(h.context.label_path, std::vector<std::string>{"fatal.label"});
  EXPECT_EQ(h.context.label_depth, 1u);
  unlink(path.c_str());
}

// hangwatch's own cost survives the kill: the live header carries the main thread's pause for
// captures (format 4), so the fatal hang says the monitor_pause_us the open hang said. The
// child is stopped before it is killed, so that the open hang read last is the one killed.
TEST(FatalHangTest, KilledDuringABusyHangKeepsHangwatchsPause) {
  const std::string path = TempPath("open_hang_pause");
  HangRecord live;
  std::string error;
  bool open = false;
  const pid_t pid = ForkStuckChild(path, &open, &live, &error);
  ASSERT_GT(pid, 0);
  kill(pid, SIGSTOP);
  int status = 0;
  const bool stopped = waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
  const OpenHangReadStatus live_read = ReadOpenHangFile(path, &live, &error);
  kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(open) << "the child's hang never showed up in " << path << " " << error;
  ASSERT_TRUE(stopped);
  ASSERT_EQ(live_read, OpenHangReadStatus::kFound) << error;
  HangRecord fatal;
  ASSERT_EQ(ReadOpenHangFile(path, &fatal, &error), OpenHangReadStatus::kFound) << error;
  unlink(path.c_str());
  EXPECT_TRUE(fatal.fatal);
  EXPECT_GE(fatal.samples, 5u);
  EXPECT_EQ(fatal.samples, live.samples);
  // A busy thread is paused by every signal sample: some pause, a small part of the hang.
  EXPECT_GT(fatal.monitor_pause_us, 0u);
  EXPECT_EQ(fatal.monitor_pause_us, live.monitor_pause_us);
  EXPECT_LT(fatal.monitor_pause_us, fatal.duration_ms * 1000);
}

void FillHang(agent::HangData* hang, int samples) {
  hang->Clear();
  hang->summary.pid = 7;
  hang->summary.tid = 7;
  hang->summary.threshold_ms = 100;
  for (int i = 0; i < samples; ++i) {
    const uintptr_t frames[] = {0x1000u + static_cast<uintptr_t>(i % 2), 0x2000};
    hang->AddSample(static_cast<uint32_t>(50 + 10 * i), frames, 2, frames[0], 10'000'000, 'R',
                    true);
  }
}

void Corrupt(const std::string& path, size_t offset) {
  const int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char b = 0;
  ASSERT_EQ(pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= 0x5a;
  ASSERT_EQ(pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  close(fd);
}

off_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// The copy of the live header written last (the one with the higher generation).
size_t NewestLiveHeaderOffset(const std::string& path) {
  uint64_t generation[2] = {0, 0};
  const int fd = open(path.c_str(), O_RDONLY);
  for (int copy = 0; copy < 2 && fd >= 0; ++copy) {
    const off_t at = static_cast<off_t>(agent::OpenHangFileLiveHeaderOffset(copy));
    if (pread(fd, &generation[copy], sizeof(uint64_t), at) != sizeof(uint64_t))
      generation[copy] = 0;
  }
  if (fd >= 0) close(fd);
  return agent::OpenHangFileLiveHeaderOffset(generation[1] > generation[0] ? 1 : 0);
}

// A failed capture (the thread did not answer in time) reads back as the live hang counted it:
// in the timeline without a stack and in failed_samples, never in samples, which are the
// captures counted in stacks. A kill after a sample's record and before the live header that
// counts it leaves the previous state, whose counts agree as well.
TEST(OpenHangFileTest, AFailedCaptureIsCountedApartFromTheSamplesWhenReadBack) {
  const std::string path = TempPath("failed_capture");
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 32;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  FillHang(&hang, 0);
  const uintptr_t frames[] = {0x3000, 0x2000};
  auto add = [&](uint32_t t_ms, bool ok) {
    hang.AddSample(t_ms, ok ? frames : nullptr, ok ? 2 : 0, ok ? frames[0] : 0, 10'000'000, 'R',
                   ok);
  };
  add(50, true);
  file->Open(hang);
  for (uint32_t i = 1; i < 6; ++i) {
    add(50 + 10 * i, i != 3);  // the fourth capture fails
    file->AddLastSample(hang);
  }
  ASSERT_EQ(hang.summary.samples, 5u);
  ASSERT_EQ(hang.summary.failed_samples, 1u);
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(r.samples, 5u);
  EXPECT_EQ(r.failed_samples, 1u);
  ASSERT_EQ(r.stacks.size(), 1u);
  EXPECT_EQ(r.stacks[0].count, r.samples);
  ASSERT_EQ(r.timeline.size(), r.samples + r.failed_samples);
  EXPECT_EQ(r.timeline[3].stack, -1);

  // One more failed capture, its record written and its live header torn by the kill.
  add(110, false);
  file->AddLastSample(hang);
  Corrupt(path, NewestLiveHeaderOffset(path) + 9);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(r.samples, 5u);
  EXPECT_EQ(r.failed_samples, 1u);
  ASSERT_EQ(r.stacks.size(), 1u);
  EXPECT_EQ(r.stacks[0].count, r.samples);
  EXPECT_EQ(r.timeline.size(), r.samples + r.failed_samples);
  file.reset();
  unlink(path.c_str());
}

// Outside a hang the file holds nothing (0 bytes): a process that ends outside a hang, even
// killed, leaves no hang and nothing of size (Xvfb under xvfb-run left a 726 KB file).
TEST(OpenHangFileTest, EmptyOutsideAHang) {
  const std::string path = TempPath("empty_outside");
  agent::HangLimits limits;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(FileSize(path), 0) << "created, no hang open yet";
  HangRecord r;
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang) << error;

  agent::HangData hang(limits);
  FillHang(&hang, 3);
  file->Open(hang);
  EXPECT_GT(FileSize(path), 0);
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  file->Clear();
  EXPECT_EQ(FileSize(path), 0) << "the hang closed";
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang) << error;

  // A second hang in the same file, then the agent stops in it.
  FillHang(&hang, 2);
  file->Open(hang);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(r.timeline.size(), 2u);
  file.reset();
  EXPECT_EQ(FileSize(path), -1) << "removed at Stop()";
}

// The same through the agent: a running agent's file is empty while its thread idles.
TEST(OpenHangFileTest, ARunningAgentsFileIsEmptyWhileIdle) {
  const std::string path = TempPath("empty_running");
  Config c = testing::TestConfig();
  c.open_hang_path = path;
  ASSERT_TRUE(Start(c).ok());
  EXPECT_EQ(FileSize(path), 0);
  Stop();
  EXPECT_EQ(FileSize(path), -1);
}

TEST(OpenHangFileTest, RoundTripThenTornSampleLosesOnlyThatSampleAndLaterOnes) {
  const std::string path = TempPath("torn");
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 32;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  FillHang(&hang, 3);
  file->Open(hang);
  // These samples say how they were taken and how each frame was found.
  const uintptr_t frames[] = {0x3000, 0x2000};
  const FrameMethod methods[] = {FrameMethod::kPc, FrameMethod::kFramePointerScan};
  for (int i = 3; i < 6; ++i) {
    hang.AddSample(static_cast<uint32_t>(50 + 10 * i), frames, 2, frames[0], 10'000'000, 'S', true,
                   methods, SampleMethod::kProc);
    file->AddLastSample(hang);
  }
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_TRUE(r.fatal);
  EXPECT_EQ(r.timeline.size(), 6u);
  EXPECT_EQ(r.duration_ms, 100u);  // time of the last sample
  EXPECT_EQ(r.stacks.size(), 3u);
  EXPECT_EQ(r.cpu_ms, 60u);
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    EXPECT_EQ(r.timeline[i].method, i < 3 ? SampleMethod::kUnknown : SampleMethod::kProc) << i;
  }
  const Stack* proc_stack = nullptr;
  for (const Stack& st : r.stacks) {
    if (!st.frames.empty() && st.frames[0].addr == 0x3000) proc_stack = &st;
  }
  ASSERT_NE(proc_stack, nullptr);
  ASSERT_EQ(proc_stack->frames.size(), 2u);
  EXPECT_EQ(proc_stack->frames[0].method, FrameMethod::kPc);
  EXPECT_EQ(proc_stack->frames[1].method, FrameMethod::kFramePointerScan);

  // Tear sample 4 (as a process killed in the middle of writing it would).
  Corrupt(path, agent::OpenHangFileSampleOffset(limits, 4) + 20);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(r.timeline.size(), 4u);

  // Tear the newest state copy: the previous one still reads (one sample fewer at most).
  file.reset();  // marks the file empty...
  file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr);
  FillHang(&hang, 3);
  // Generations: 1 (empty, at Create) -> copy 1, 2 (Open) -> copy 0, 3 (sample) -> copy 1.
  file->Open(hang);
  hang.AddSample(80, frames, 2, frames[0], 0, 'R', true, methods, SampleMethod::kSignal);
  file->AddLastSample(hang);
  Corrupt(path, agent::OpenHangFileLiveHeaderOffset(1) + 9);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(r.timeline.size(), 3u);
  // Both copies torn: invalid, with a reason.
  Corrupt(path, agent::OpenHangFileLiveHeaderOffset(0) + 9);
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kInvalid);
  EXPECT_NE(error.find("torn"), std::string::npos) << error;
  file.reset();
  unlink(path.c_str());
}

// A fatal hang left by an agent of the previous format (1: no methods) is still reported after
// an upgrade, its frames' and samples' methods unknown.
TEST(OpenHangFileTest, ReadsTheFormatAnOlderAgentWrote) {
  const std::string path = TempPath("v1");
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 32;
  std::string error;
  auto file = agent::OpenHangFile::CreateForTest(path, limits, &error, 1);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  FillHang(&hang, 3);
  file->Open(hang);
  const uintptr_t frames[] = {0x3000, 0x2000};
  const FrameMethod methods[] = {FrameMethod::kPc, FrameMethod::kCfi};
  hang.AddSample(90, frames, 2, frames[0], 10'000'000, 'R', true, methods, SampleMethod::kSignal);
  file->AddLastSample(hang);
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_TRUE(r.fatal);
  ASSERT_EQ(r.timeline.size(), 4u);
  EXPECT_EQ(r.stacks.size(), 3u);
  for (const TimelineEntry& t : r.timeline) EXPECT_EQ(t.method, SampleMethod::kUnknown);
  bool saw_new_stack = false;
  for (const Stack& st : r.stacks) {
    ASSERT_EQ(st.frames.size(), 2u);
    saw_new_stack |= st.frames[0].addr == 0x3000;
    for (const Frame& f : st.frames) EXPECT_EQ(f.method, FrameMethod::kUnknown);
  }
  EXPECT_TRUE(saw_new_stack);
  file.reset();
  unlink(path.c_str());
}

// A Python frame (hang/model/runtime_frame_word.h) of a fatal hang reads back as a Python frame,
// its code object and instruction kept (unnamed here: no names were given to the writer;
// open_hang_python_names_test.cc has them), never
// as a native address; the native frames around it keep their methods.
TEST(OpenHangFileTest, PythonFramesReadBackAsPythonFrames) {
  const std::string path = TempPath("py");
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 32;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  file->Open(hang);
  const uintptr_t py = agent::RuntimeFrameWord(0x7f0012345670, 21);
  const uintptr_t frames[] = {0x3000, py, 0x2000};
  const uint8_t tags[] = {static_cast<uint8_t>(FrameMethod::kPc), agent::kPythonFrameTag,
                          static_cast<uint8_t>(FrameMethod::kCfi)};
  hang.AddSample(90, frames, 3, frames[0], 10'000'000, 'R', true,
                 reinterpret_cast<const FrameMethod*>(tags), SampleMethod::kSignal);
  file->AddLastSample(hang);
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  ASSERT_EQ(r.stacks.size(), 1u);
  const std::vector<Frame>& f = r.stacks[0].frames;
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].language, FrameLanguage::kNative);
  EXPECT_EQ(f[0].method, FrameMethod::kPc);
  EXPECT_EQ(f[1].language, FrameLanguage::kPython);
  EXPECT_EQ(f[1].addr, 0x7f0012345670u);
  EXPECT_EQ(f[1].offset, 21u);
  EXPECT_TRUE(f[1].module.empty());
  EXPECT_EQ(f[2].language, FrameLanguage::kNative);
  EXPECT_EQ(f[2].method, FrameMethod::kCfi);
  file.reset();
  unlink(path.c_str());
}

// The live header carries the main thread's pause for captures from format 4 on, each copy
// its own (a torn newest copy gives the pause of the state before); a file an agent of format 3
// left behind still reads, with no pause.
TEST(OpenHangFileTest, ThePauseIsInEachLiveHeaderFromFormat4AndNoneBefore) {
  for (const uint32_t version : {3u, 4u}) {
    SCOPED_TRACE(version);
    const std::string path = TempPath("pause");
    agent::HangLimits limits;
    limits.max_frames = 8;
    limits.max_timeline = 32;
    std::string error;
    auto file = agent::OpenHangFile::CreateForTest(path, limits, &error, version);
    ASSERT_NE(file, nullptr) << error;
    agent::HangData hang(limits);
    FillHang(&hang, 3);
    hang.summary.pause_ns = 1'234'567;
    file->Open(hang);  // live header copy 0
    const uintptr_t frames[] = {0x3000, 0x2000};
    hang.AddSample(90, frames, 2, frames[0], 10'000'000, 'R', true);
    hang.summary.pause_ns += 100'000;
    file->AddLastSample(hang);  // copy 1
    HangRecord r;
    ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
    EXPECT_EQ(r.timeline.size(), 4u);
    EXPECT_EQ(r.monitor_pause_us, version >= 4 ? 1334u : 0u);
    Corrupt(path, agent::OpenHangFileLiveHeaderOffset(1) + 90);  // inside copy 1's pause
    ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
    EXPECT_EQ(r.timeline.size(), 3u);
    EXPECT_EQ(r.monitor_pause_us, version >= 4 ? 1234u : 0u);
    file.reset();
    unlink(path.c_str());
  }
}

TEST(OpenHangFileTest, ClosedHangMissingEmptyAndForeignFiles) {
  const std::string path = TempPath("states");
  std::string error;
  HangRecord r;
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang);
  agent::HangLimits limits;
  {
    auto file = agent::OpenHangFile::Create(path, limits, &error);
    ASSERT_NE(file, nullptr) << error;
    EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang);
    // Locked against a second user.
    EXPECT_EQ(agent::OpenHangFile::Create(path, limits, &error), nullptr);
    EXPECT_NE(error.find("in use"), std::string::npos) << error;
    agent::HangData hang(limits);
    FillHang(&hang, 2);
    file->Open(hang);
    EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound);
    file->Clear();
    EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang);
  }
  {
    std::ofstream out(path, std::ios::trunc);
    out << std::string(5000, 'x');
  }
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kInvalid);
  EXPECT_NE(error.find("magic"), std::string::npos) << error;
  { std::ofstream out(path, std::ios::trunc); }
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kNoOpenHang);
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch
