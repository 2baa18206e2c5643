// A program that starts as root and switches to `nobody` (setgid, initgroups, setuid, as
// nginx's workers do) is still watched: the shim keeps the report, the launch log and the
// process's open-hang file open from before the switch (integrations/preload/privilege_drop.cc),
// all in a 0700 directory of root's, and the files stay 0600 and root's. A program that closes
// every descriptor after the switch and reuses the numbers never gets a line of ours in its
// own file. Needs root (skipped otherwise).
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "hang/open_hang/open_hang_file.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct Files {
  TempDir dir;  // mkdtemp: 0700, root's
  std::string report = dir.path() + "/report.jsonl";
  std::string launch_log = dir.path() + "/launch.log";

  std::vector<std::string> Env() const {
    return {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB,
            "HANGWATCH_THRESHOLD_MS=100",
            "HANGWATCH_LOG=0",
            "HANGWATCH_LAG_INTERVAL_MS=0",
            "HANGWATCH_STARTUP_STALL=0",
            "HANGWATCH_REPORT=" + report,
            "HANGWATCH_OPEN_HANG_DIR=" + dir.path(),
            "HANGWATCH_LAUNCH_LOG=" + launch_log};
  }
  std::string OpenHangPath(pid_t pid) const {
    return dir.path() + "/open-hang." + std::to_string(pid);
  }
};

// The hangs of `pid` in the report.
std::vector<HangRecord> HangsOf(const std::string& report, int64_t pid) {
  tools::Report r;
  std::string error;
  tools::ParseJsonLines(ReadFile(report), &r, &error);
  std::vector<HangRecord> out;
  for (const HangRecord& h : r.hangs) {
    if (h.pid == pid) out.push_back(h);
  }
  return out;
}

// Waits (generously) until `done()` holds.
template <typename Cond>
bool WaitFor(Cond done) {
  const auto deadline = steady_clock::now() + milliseconds(20'000);
  while (!done()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

bool ExpectLine(ChildProcess* child, const std::string& want) {
  std::string line;
  while (child->ReadLine(&line, milliseconds(20'000))) {
    if (line == want) return true;
  }
  return false;
}

void ExpectPrivateToRoot(const std::string& path) {
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
  EXPECT_EQ(st.st_uid, 0u) << path;
}

bool NeedsRoot() { return geteuid() == 0 && getpwnam("nobody") != nullptr; }

class PrivilegeDropTest : public ::testing::TestWithParam<const char*> {};

// The shim arms before the switch (a loop that drops later) or after it (nginx's workers): a
// hang after the switch reaches the report, and a hang left open by the kill is in the open-hang
// file, read back as fatal.
TEST_P(PrivilegeDropTest, HangAfterSwitchReachesReportAndOpenHangFile) {
  if (!NeedsRoot()) GTEST_SKIP() << "needs root and a `nobody` user to switch to";
  Files f;
  ChildProcess child({PRIVILEGE_DROP_FIXTURE, GetParam()}, f.Env());
  ASSERT_TRUE(ExpectLine(&child, "dropped"));
  ASSERT_TRUE(ExpectLine(&child, "stalling"));
  const pid_t pid = child.pid();

  ASSERT_TRUE(WaitFor([&] { return !HangsOf(f.report, pid).empty(); }))
      << "the 400 ms hang after the switch never reached the report:\n"
      << ReadFile(f.report) << "\nlaunch log:\n"
      << ReadFile(f.launch_log);
  const HangRecord first = HangsOf(f.report, pid)[0];
  EXPECT_GE(first.duration_ms, 300u);
  EXPECT_LT(first.duration_ms, 5'000u);

  // The second hang, open until the kill, is in the process's open-hang file.
  HangRecord open;
  std::string error;
  ASSERT_TRUE(WaitFor([&] {
    return agent::ReadOpenHangFile(f.OpenHangPath(pid), &open, &error) ==
           agent::OpenHangReadStatus::kFound;
  })) << error;
  ExpectPrivateToRoot(f.OpenHangPath(pid));
  kill(pid, SIGKILL);
  EXPECT_EQ(child.Wait(), 128 + SIGKILL);
  HangRecord fatal;
  ASSERT_EQ(agent::ReadOpenHangFile(f.OpenHangPath(pid), &fatal, &error),
            agent::OpenHangReadStatus::kFound)
      << error;
  EXPECT_TRUE(fatal.fatal);
  EXPECT_EQ(fatal.pid, pid);
  EXPECT_GE(fatal.duration_ms, 100u);

  ExpectPrivateToRoot(f.report);
  ExpectPrivateToRoot(f.launch_log);
  EXPECT_NE(ReadFile(f.launch_log).find("armed " + std::to_string(pid) + " "), std::string::npos)
      << ReadFile(f.launch_log);
}

INSTANTIATE_TEST_SUITE_P(Order, PrivilegeDropTest,
                         ::testing::Values("arm-then-drop", "drop-then-arm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param[0] == 'a' ? "ArmThenDrop" : "DropThenArm");
                         });

// A child forked after the switch writes its hangs through the descriptors its parent kept; it
// cannot create an open-hang file of its own in root's directory, and is watched without one.
TEST(PrivilegeDrop, ChildForkedAfterSwitchIsWatched) {
  if (!NeedsRoot()) GTEST_SKIP() << "needs root and a `nobody` user to switch to";
  Files f;
  ChildProcess parent({PRIVILEGE_DROP_FIXTURE, "fork-after-drop"}, f.Env());
  ASSERT_TRUE(ExpectLine(&parent, "done"));
  ASSERT_EQ(parent.WaitAtMost(milliseconds(20'000)), 0);
  tools::Report r;
  std::string error;
  tools::ParseJsonLines(ReadFile(f.report), &r, &error);
  ASSERT_EQ(r.hangs.size(), 1u) << ReadFile(f.report) << "\nlaunch log:\n"
                                << ReadFile(f.launch_log);
  EXPECT_NE(r.hangs[0].pid, parent.pid());  // the child's
  EXPECT_GE(r.hangs[0].duration_ms, 300u);
  EXPECT_NE(ReadFile(f.launch_log).find("armed " + std::to_string(r.hangs[0].pid) + " "),
            std::string::npos)
      << ReadFile(f.launch_log);
  ExpectPrivateToRoot(f.report);
}

// A process that cannot arm after the switch (its report is in a directory that does not exist)
// says why in the launch log, which it can no longer open by name: `run` prints that reason
// instead of "never waited for events".
TEST(PrivilegeDrop, WhyNotWatchedReachesLaunchLogAfterSwitch) {
  if (!NeedsRoot()) GTEST_SKIP() << "needs root and a `nobody` user to switch to";
  Files f;
  std::vector<std::string> env = f.Env();
  for (std::string& kv : env) {
    if (kv.rfind("HANGWATCH_REPORT=", 0) == 0)
      kv = "HANGWATCH_REPORT=" + f.dir.path() + "/missing/report.jsonl";
  }
  ChildProcess child({PRIVILEGE_DROP_FIXTURE, "drop-then-arm"}, env);
  ASSERT_TRUE(ExpectLine(&child, "stalling"));
  const std::string off = "off " + std::to_string(child.pid()) + " ";
  EXPECT_TRUE(WaitFor([&] {
    const std::string log = ReadFile(f.launch_log);
    const size_t at = log.find(off);
    return at != std::string::npos &&
           log.find("cannot open " + f.dir.path() + "/missing/report.jsonl", at) !=
               std::string::npos;
  })) << ReadFile(f.launch_log);
  kill(child.pid(), SIGKILL);
  child.Wait();
}

// A program that closes every descriptor after the switch and opens its own file on the freed
// numbers: the shim's kept numbers are its now, and nothing of ours is written into them (the
// process is not watched: the report is out of reach).
TEST(PrivilegeDrop, ReusedDescriptorNumbersAreNeverWritten) {
  if (!NeedsRoot()) GTEST_SKIP() << "needs root and a `nobody` user to switch to";
  Files f;
  const std::string data = f.dir.path() + "/data";
  { std::ofstream create(data); }
  ChildProcess child({PRIVILEGE_DROP_FIXTURE, "close-all", data}, f.Env());
  ASSERT_TRUE(ExpectLine(&child, "done"));
  ASSERT_EQ(child.WaitAtMost(milliseconds(20'000)), 0);
  EXPECT_EQ(ReadFile(data).size(), 0u) << "the program's own file was written into";
  EXPECT_TRUE(HangsOf(f.report, child.pid()).empty());
}

}  // namespace
}  // namespace hangwatch::testing
