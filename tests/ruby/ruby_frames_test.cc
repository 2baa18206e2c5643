// ruby/: the Ruby frames of a real ruby3.1 (Debian's /usr/bin/ruby) read out of process
// (frames_program.rb, stopped with SIGSTOP while read): method names, paths and lines, the
// FINISH marks, another thread's frames; the layout check; and the reader on bad input (a
// process that is not Ruby, an execution context that is garbage).
#include "ruby/control_frames.h"

#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "python/process_memory_reader.h"
#include "ruby/iseq_resolver.h"
#include "ruby/ruby_process.h"
#include "symbols/process_modules.h"
#include "tests/python/python_child.h"

namespace hangwatch::ruby {
namespace {

using python::testing::MonotonicMs;
using python::testing::PythonChild;

constexpr char kRuby[] = "/usr/bin/ruby";
// Lines of frames_program.rb.
constexpr int kCrunchLoop = 10;
constexpr int kSleeper = 14;
constexpr int kRecurseBottom = 18;
constexpr int kRecurseCall = 19;
constexpr int kEachBlock = 23;
constexpr int kWorkerBody = 27;
constexpr int kMainCallsInBlock = 48;

struct Frame {
  std::string label;
  std::string path;
  int line = 0;
  bool finish = false;
  bool placeholder = false;
};

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

class RubyFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kRuby, X_OK) != 0) GTEST_SKIP() << kRuby << " is not installed";
  }

  void Start(const std::string& mode) {
    ASSERT_TRUE(child_.Start({kRuby, FRAMES_PROGRAM, mode}));
    ASSERT_TRUE(child_.WaitReady()) << "no ready line from ruby";
    absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(child_.pid());
    ASSERT_TRUE(modules.ok()) << modules.status();
    absl::StatusOr<std::unique_ptr<RubyProcess>> p = RubyProcess::Open(child_.pid(), *modules);
    ASSERT_TRUE(p.ok()) << p.status();
    process_ = std::move(*p);
  }

  // The frames of thread `tid`, read while the process is stopped.
  std::vector<Frame> Read(pid_t tid, FramesEnd* end) {
    std::vector<Frame> out;
    if (!child_.Stop()) return out;
    RubyFrame frames[64];
    const uint64_t ec = process_->reader().ExecutionContext(process_->reader().FindThread(tid));
    const size_t n = process_->reader().ReadFrames(ec, frames, 64, end);
    for (size_t i = 0; i < n; ++i) {
      Frame f;
      f.finish = frames[i].finish;
      if (const IseqInfo* info = process_->resolver().Iseq(frames[i].iseq)) {
        f.label = info->label;
        f.path = info->path;
        f.placeholder = info->vm_placeholder;
        f.line = process_->resolver().Line(*info, IseqResolver::Position(*info, frames[i].pc)).line;
      }
      out.push_back(f);
    }
    child_.Continue();
    return out;
  }

  // Reads until the innermost frame is `label` (the program reaches it after its ready line).
  std::vector<Frame> ReadWhenIn(pid_t tid, const std::string& label, FramesEnd* end) {
    const uint64_t deadline = MonotonicMs() + 20000;
    std::vector<Frame> frames;
    while (MonotonicMs() < deadline) {
      frames = Read(tid, end);
      if (!frames.empty() && frames[0].label == label) return frames;
      usleep(2000);  // the program is on its way to `label`: no event says when it is there
    }
    return frames;
  }

  PythonChild child_;
  std::unique_ptr<RubyProcess> process_;
};

TEST_F(RubyFrames, NestedCallsAndABlockWithLinesAndFinishMarks) {
  Start("sleep");
  FramesEnd end = FramesEnd::kUnreadable;
  const std::vector<Frame> f = ReadWhenIn(child_.ready_tid(), "sleeper", &end);
  ASSERT_EQ(f.size(), 9u);
  EXPECT_EQ(end, FramesEnd::kComplete);
  const char* labels[] = {"sleeper", "recurse",           "recurse",  "recurse",
                          "recurse", "block in in_block", "in_block", "<main>"};
  const int lines[] = {kSleeper,     kRecurseBottom, kRecurseCall, kRecurseCall,
                       kRecurseCall, kEachBlock,     kEachBlock,   kMainCallsInBlock};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(f[i].label, labels[i]) << i;
    EXPECT_EQ(Base(f[i].path), "frames_program.rb") << i;
    EXPECT_EQ(f[i].line, lines[i]) << i;
  }
  // The block runs in a vm_exec of its own (each -> rb_yield); <main> in the first one.
  EXPECT_TRUE(f[5].finish);
  EXPECT_FALSE(f[4].finish);
  EXPECT_FALSE(f[6].finish);
  // <main> of the script began the first call; under it, the VM's own placeholder.
  EXPECT_TRUE(f[7].finish);
  EXPECT_FALSE(f[7].placeholder);
  EXPECT_TRUE(f[8].placeholder);
  for (size_t i = 0; i < 8; ++i) EXPECT_FALSE(f[i].placeholder) << i;
}

TEST_F(RubyFrames, BusyLoopLine) {
  Start("busy");
  FramesEnd end = FramesEnd::kUnreadable;
  for (int i = 0; i < 5; ++i) {  // wherever in the loop it is stopped
    const std::vector<Frame> f = ReadWhenIn(child_.ready_tid(), "crunch", &end);
    ASSERT_GE(f.size(), 2u);
    EXPECT_EQ(f[0].line, kCrunchLoop);
    EXPECT_EQ(f[1].label, "<main>");
  }
}

TEST_F(RubyFrames, AnotherThreadByItsTid) {
  Start("thread");
  FramesEnd end = FramesEnd::kUnreadable;
  const std::vector<Frame> f = ReadWhenIn(child_.ready_tid(), "worker_body", &end);
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[0].line, kWorkerBody);
  EXPECT_EQ(f[1].label, "block in <main>");
  EXPECT_NE(child_.ready_tid(), child_.pid());
  EXPECT_EQ(process_->reader().FindThread(123456789), 0u);
}

// The check against the live VM refuses a layout with one offset wrong, saying which check.
TEST_F(RubyFrames, AWrongOffsetFailsTheLayoutCheck) {
  Start("sleep");
  const python::ProcessMemoryReader memory(child_.pid());
  RubyLayout good;
  ASSERT_EQ(LayoutForVersion(3, 1, &good), "");
  EXPECT_EQ(VmReader(memory, good, process_->vm()).CheckLayout(), "");
  struct Case {
    uint32_t RubyLayout::*field;
    const char* says;
  };
  for (const Case& c : {Case{&RubyLayout::thread_vm, "does not point back to the VM"},
                        Case{&RubyLayout::thread_ractor, "is not in the main ractor"},
                        Case{&RubyLayout::ec_thread, "execution context does not point back"},
                        Case{&RubyLayout::ractor_threads_head, "thread list"},
                        Case{&RubyLayout::cfp_size, "VM stack"}}) {
    RubyLayout bad = good;
    bad.*c.field += 8;
    const std::string failed = VmReader(memory, bad, process_->vm()).CheckLayout();
    EXPECT_NE(failed.find(c.says), std::string::npos) << c.says << ": " << failed;
  }
}

TEST_F(RubyFrames, NotRubyIsNotFound) {
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(getpid());
  ASSERT_TRUE(modules.ok());
  absl::StatusOr<std::unique_ptr<RubyProcess>> p = RubyProcess::Open(getpid(), *modules);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RubyFrames, GarbageContextGivesNoFrames) {
  Start("sleep");
  // A context whose stack fields are garbage, in this test's own memory read as the target's.
  const python::ProcessMemoryReader self(getpid());
  RubyLayout layout;
  ASSERT_EQ(LayoutForVersion(3, 1, &layout), "");
  const VmReader reader(self, layout, process_->vm());
  uint64_t garbage[8] = {0x1000, 0xffffffffffff, 0x1234, 0, 0, 0, 0, 0};
  RubyFrame out[4];
  FramesEnd end = FramesEnd::kComplete;
  EXPECT_EQ(reader.ReadFrames(reinterpret_cast<uint64_t>(garbage), out, 4, &end), 0u);
  EXPECT_EQ(end, FramesEnd::kBadStack);
  EXPECT_EQ(reader.ReadFrames(0, out, 4, &end), 0u);
  EXPECT_EQ(end, FramesEnd::kUnreadable);
  // The VM pointer read in this process (no Ruby here): the check fails, saying so.
  bool not_yet = false;
  EXPECT_NE(reader.CheckLayout(&not_yet), "");
  EXPECT_EQ(LayoutForVersion(3, 2, &layout), "Ruby 3.2 has no layout table (3.1 only)");
}

}  // namespace
}  // namespace hangwatch::ruby
