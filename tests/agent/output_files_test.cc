// The agent's files in directories other users can write to (/tmp, a shared run directory):
// the JSON Lines report and the open-hang file never follow a symbolic link, never open a FIFO
// or a device, never write into a file that was there before under the open-hang name (it may
// be a hard link to someone else's file); and an open-hang file, however hostile, is read in
// bounded memory.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hang/model/hang_data.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/hangwatch-output-files.XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
    victim_ = dir_ + "/victim";
    std::ofstream(victim_) << kVictimText;
  }
  void TearDown() override {
    Stop();
    const std::string cmd = "rm -rf '" + dir_ + "'";
    (void)!std::system(cmd.c_str());
  }

  // The victim file still holds exactly what it was created with.
  void ExpectVictimUntouched() {
    std::ifstream in(victim_);
    std::stringstream text;
    text << in.rdbuf();
    const std::string now = text.str();
    EXPECT_TRUE(now == kVictimText)
        << victim_ << " was written through the planted name: now " << now.size() << " bytes";
  }

  static constexpr const char* kVictimText = "the victim's own data\n";
  std::string dir_;
  std::string victim_;
};

// Start() with one of the agent's files at `path`, the other unset.
Status StartWith(const std::string& json_path, const std::string& open_hang_path) {
  Config c = testing::TestConfig();
  c.json_path = json_path;
  c.open_hang_path = open_hang_path;
  return Start(c);
}

TEST_F(OutputFilesTest, ReportPathThatIsASymlinkIsRefused) {
  const std::string path = dir_ + "/hangs.jsonl";
  ASSERT_EQ(symlink(victim_.c_str(), path.c_str()), 0);
  const Status s = StartWith(path, "");
  ASSERT_FALSE(s.ok()) << "the report was opened through a symbolic link";
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  ExpectVictimUntouched();
}

TEST_F(OutputFilesTest, ReportPathThatIsAFifoIsRefused) {
  const std::string path = dir_ + "/hangs.jsonl";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  // A reader is there, so that opening for writing does not block (or fail) by itself.
  const int reader = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  const Status s = StartWith(path, "");
  EXPECT_FALSE(s.ok()) << "the report was opened on a FIFO";
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
  close(reader);
}

TEST_F(OutputFilesTest, OpenHangPathThatIsASymlinkIsRefused) {
  const std::string path = dir_ + "/open-hang.1";
  ASSERT_EQ(symlink(victim_.c_str(), path.c_str()), 0);
  const Status s = StartWith("", path);
  ASSERT_FALSE(s.ok()) << "the open-hang file was opened through a symbolic link";
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  ExpectVictimUntouched();
}

TEST_F(OutputFilesTest, OpenHangPathThatIsAFifoIsRefused) {
  const std::string path = dir_ + "/open-hang.1";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  // A writer is there, so that a blocking open for reading would not hang the test.
  const int writer = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  const Status s = StartWith("", path);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
  close(writer);
}

// A hard link needs no permission on its target: an old open-hang file is never written into,
// it is replaced by a new one.
TEST_F(OutputFilesTest, OpenHangPathThatIsAHardLinkIsReplacedNotWritten) {
  const std::string path = dir_ + "/open-hang.1";
  ASSERT_EQ(link(victim_.c_str(), path.c_str()), 0);
  const Status s = StartWith("", path);
  ASSERT_TRUE(s.ok()) << s.message();
  Stop();
  ExpectVictimUntouched();
}

// ---- reading a hostile open-hang file ----

// A file of the format's shape whose checksums are all valid, holding `records` samples of
// `frames` frames, every sample a different stack: what the reader is asked to build. The
// writer is kept in *writer, alive: while it is, the file holds its open hang as a process
// that died would have left it (its destructor clears and removes the file).
std::string CraftOpenHangFile(const std::string& dir, size_t frames, size_t records,
                              std::unique_ptr<agent::OpenHangFile>* writer) {
  const std::string path = dir + "/crafted";
  agent::HangLimits limits;
  limits.max_frames = frames;
  limits.max_timeline = records;
  limits.max_unique_stacks = records;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  EXPECT_NE(file, nullptr) << error;
  if (file == nullptr) return path;
  agent::HangData hang(limits);
  hang.summary.pid = 7;
  hang.summary.threshold_ms = 100;
  std::vector<uintptr_t> stack(frames);
  for (size_t i = 0; i < records; ++i) {
    for (size_t f = 0; f < frames; ++f) stack[f] = 0x10000 + i * frames + f;
    hang.AddSample(static_cast<uint32_t>(i), stack.data(), frames, stack[0], 0, 'R', true);
  }
  file->Open(hang);
  *writer = std::move(file);
  return path;
}

long MaxRssKb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// 4096 samples of 512 frames (a 19 MB file): every sample a new stack would make 2 million
// frames, each a Frame with its strings (hundreds of MB). The reader keeps a bounded number of
// stacks and counts the rest as dropped, as the agent itself does when its table is full.
TEST_F(OutputFilesTest, HugeCountsInAValidOpenHangFileAreReadInBoundedMemory) {
  constexpr size_t kFrames = 512, kRecords = 4096;
  std::unique_ptr<agent::OpenHangFile> writer;
  const std::string path = CraftOpenHangFile(dir_, kFrames, kRecords, &writer);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const long file_kb = st.st_size / 1024;
  // Measured in a child: its peak resident size starts from this process's.
  const pid_t pid = fork();
  if (pid == 0) {
    const long before = MaxRssKb();
    HangRecord r;
    std::string error;
    const agent::OpenHangReadStatus status = agent::ReadOpenHangFile(path, &r, &error);
    const long grown_kb = MaxRssKb() - before;
    size_t frames = 0;
    for (const Stack& s : r.stacks) frames += s.frames.size();
    std::fprintf(stderr,
                 "file %ld KB, read: peak grew %ld KB, %zu stacks, %zu frames, %u dropped\n",
                 file_kb, grown_kb, r.stacks.size(), frames, r.dropped_stacks);
    if (status != agent::OpenHangReadStatus::kFound) _exit(2);
    if (r.samples != kRecords || r.dropped_stacks + r.stacks.size() != kRecords) _exit(3);
    // Bounded: the file's own bytes plus a fixed amount, never a multiple of the file.
    _exit(grown_kb <= file_kb + 64 * 1024 ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: not read, 3: samples or stacks miscounted, 4: memory grew beyond the bound";
}

}  // namespace
}  // namespace hangwatch
