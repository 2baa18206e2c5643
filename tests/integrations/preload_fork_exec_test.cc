// The preload shim's process rules, on the unmodified Debian python3:
//   - exec: programs started by an armed program (or a child forked from it) run without the
//     shim unless HANGWATCH_INHERIT=1, whichever way they are started (subprocess's execve,
//     os.system's internal spawn, exec after fork); a program that has not armed passes it on;
//   - fork: every child arms itself at its own first wait, whether forked before or after its
//     parent armed, reports with its own pid, and exits normally (sys.exit runs the exit
//     handlers);
//   - start-up: batch work before the first wait is not a hang, but a slow start-up is
//     reported once as a start-up stall, unless switched off.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "child_process.h"
#include "tests/frozen_file_system.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Python helpers: a wait in select() (an event loop's idle), and a busy stall.
constexpr char kPrelude[] =
    "import os, select, subprocess, sys, time\n"
    "def wait(): select.select([], [], [], 0.05)\n"
    "def busy(s):\n"
    "    end = time.monotonic() + s\n"
    "    while time.monotonic() < end: pass\n";

struct PythonRun {
  int exit_code = -1;
  std::string out;
  tools::Report report;
  pid_t pid = 0;
};

PythonRun RunPython(const std::string& body, std::vector<std::string> env) {
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  env.push_back("LD_PRELOAD=" HANGWATCH_PRELOAD_LIB);
  env.push_back("HANGWATCH_REPORT=" + report);
  env.push_back("HANGWATCH_LOG=0");
  ChildProcess child({kPython, "-c", std::string(kPrelude) + body}, env);
  PythonRun r;
  r.pid = child.pid();
  std::string line;
  while (child.ReadLine(&line, std::chrono::seconds(30))) r.out += line + "\n";
  r.exit_code = child.Wait();
  std::string error;
  tools::ParseJsonLines(ReadFile(report), &r.report, &error);
  return r;
}

// PostgreSQL 15's postmaster forks its children from signal handlers. One that ran while the
// shim loaded the agent library (dlopen, at the first wait) gave a child with a half-relocated
// copy of it, which crashed at its own first wait (a jump to an unrelocated address); such a
// child now stays off.
TEST(PreloadProcess, ChildrenForkedFromASignalHandlerWhileTheParentArmsAreFine) {
  TempDir dir;
  ChildProcess child(
      {FORK_IN_SIGNAL_FIXTURE},
      {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_LOG=0",
       "HANGWATCH_REPORT=" + dir.path() + "/hangs.jsonl", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  std::string out, line;
  while (child.ReadLine(&line, std::chrono::seconds(30))) out += line + "\n";
  EXPECT_EQ(child.Wait(), 0) << out;
  EXPECT_NE(out.find(" crashed 0 stuck 0"), std::string::npos) << out;
}

TEST(PreloadProcess, ExecutedProgramsRunWithoutTheShim) {
  const PythonRun r = RunPython(
      "wait()\n"
      "print('[' + subprocess.run(['/bin/sh', '-c', 'echo $LD_PRELOAD'], capture_output=True,"
      " text=True).stdout.strip() + ']')\n",
      {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "[]\n");
}

TEST(PreloadProcess, ExecutedProgramsKeepTheShimWhenAsked) {
  const PythonRun r = RunPython(
      "wait()\n"
      "print('[' + subprocess.run(['/bin/sh', '-c', 'echo $LD_PRELOAD'], capture_output=True,"
      " text=True).stdout.strip() + ']')\n",
      {"HANGWATCH_INHERIT=1"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("[") + HANGWATCH_PRELOAD_LIB + "]\n");
}

TEST(PreloadProcess, ChildOfAnArmedProcessIsWatchedAndExits) {
  // The parent arms, forks; the child stalls between two waits and leaves through sys.exit
  // (exit handlers, static destructors); the parent waits for it, then stalls itself.
  const PythonRun r = RunPython(
      "wait()\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    wait(); busy(0.5); wait(); sys.exit(5)\n"
      "_, status = os.waitpid(pid, 0)\n"
      "print(pid, os.waitstatus_to_exitcode(status))\n"
      "wait(); busy(0.5); wait()\n",
      {"HANGWATCH_THRESHOLD_MS=150"});
  EXPECT_EQ(r.exit_code, 0);
  int child = 0, child_status = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%d %d", &child, &child_status), 2) << r.out;
  EXPECT_EQ(child_status, 5) << "the child exits with its own status";
  bool parent_busy = false, child_busy = false;
  for (const HangRecord& h : r.report.hangs) {
    EXPECT_EQ(h.pid, h.tid) << "on each process's main thread";
    parent_busy |= h.pid == r.pid && h.duration_ms >= 400 && h.hang_class != HangClass::kBlocked;
    child_busy |= h.pid == child && h.duration_ms >= 400 && h.hang_class != HangClass::kBlocked;
  }
  EXPECT_TRUE(parent_busy);
  EXPECT_TRUE(child_busy) << "the child armed at its own first wait";
}

TEST(PreloadProcess, ChildrenForkedDuringASampledHangExit) {
  // A hang is open and sampled every millisecond while the parent forks again and again; each
  // child leaves at once through sys.exit with its own status.
  const PythonRun r = RunPython(
      "wait()\n"
      "busy(0.3)\n"
      "bad = 0\n"
      "for i in range(40):\n"
      "    pid = os.fork()\n"
      "    if pid == 0:\n"
      "        sys.exit(i + 1)\n"
      "    _, status = os.waitpid(pid, 0)\n"
      "    bad += os.waitstatus_to_exitcode(status) != i + 1\n"
      "print(bad)\n"
      "wait()\n",
      {"HANGWATCH_THRESHOLD_MS=100", "HANGWATCH_SAMPLE_MS=1"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "0\n") << "every child exits with its own status";
  ASSERT_EQ(r.report.hangs.size(), 1u);
  EXPECT_GT(r.report.hangs[0].samples, 100u);
}

TEST(PreloadProcess, ChildForkedWithASamplingSignalPendingExits) {
  // The main thread blocks the real-time signals (the agent samples with the highest free one),
  // so the watchdog's capture request stays pending; the parent forks then. The child unblocks
  // them, waits (arming an agent of its own) and leaves through sys.exit.
  const PythonRun r = RunPython(
      "import signal\n"
      "rt = set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))\n"
      "wait()\n"
      "old = signal.pthread_sigmask(signal.SIG_BLOCK, rt)\n"
      "end = time.monotonic() + 20\n"
      "while not (rt & signal.sigpending()) and time.monotonic() < end: pass\n"
      "pending = bool(rt & signal.sigpending())\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    signal.pthread_sigmask(signal.SIG_SETMASK, old)\n"
      "    wait(); busy(0.3); wait()\n"
      "    sys.exit(6)\n"
      "_, status = os.waitpid(pid, 0)\n"
      "signal.pthread_sigmask(signal.SIG_SETMASK, old)\n"
      "print(pending, pid, os.waitstatus_to_exitcode(status))\n"
      "wait()\n",
      {"HANGWATCH_THRESHOLD_MS=100"});
  EXPECT_EQ(r.exit_code, 0);
  char pending[8] = {};
  int child = 0, status = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%7s %d %d", pending, &child, &status), 3) << r.out;
  EXPECT_STREQ(pending, "True") << "the capture signal was pending when the parent forked";
  EXPECT_EQ(status, 6);
  bool child_hang = false;
  for (const HangRecord& h : r.report.hangs) child_hang |= h.pid == child;
  EXPECT_TRUE(child_hang) << "the child's own agent sampled it";
}

TEST(PreloadProcess, ChildForkedWhileTheWatchdogIsBlockedWritingItsReportExits) {
  // The report is on a frozen file system: the watchdog's line blocks in write(). The parent
  // forks then; its child exits at once, and fork() did not wait for the write. (The report is
  // a regular file: a FIFO is refused.)
  TempDir dir;
  FreezableFileSystem fs(dir.path());
  if (!fs.ok()) GTEST_SKIP() << "cannot mount a file system from a file here (needs root)";
  const std::string report_path = fs.path() + "/hangs.jsonl";
  std::ofstream(report_path) << "";
  ASSERT_TRUE(fs.Freeze()) << "fsfreeze failed";
  ChildProcess child({kPython, "-c",
                      std::string(kPrelude) +
                          "def watchdog_syscall():\n"
                          "    for t in os.listdir('/proc/self/task'):\n"
                          "        base = '/proc/self/task/' + t\n"
                          "        if open(base + '/comm').read() == 'hangwatch\\n':\n"
                          "            return open(base + '/syscall').read().split()[0]\n"
                          "wait(); busy(0.3); wait()\n"
                          "while watchdog_syscall() != '" +
                          std::to_string(SYS_write) +
                          "': pass\n"
                          "pid = os.fork()\n"
                          "if pid == 0:\n"
                          "    sys.exit(7)\n"
                          "_, status = os.waitpid(pid, 0)\n"
                          "print(os.waitstatus_to_exitcode(status), flush=True)\n"},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_REPORT=" + report_path,
                      "HANGWATCH_LOG=0", "HANGWATCH_THRESHOLD_MS=100"});
  // Whatever fails below, the file system is thawed before the child is killed and waited for
  // (a thread blocked on a frozen file system cannot die).
  struct ThawFirst {
    FreezableFileSystem& fs;
    ~ThawFirst() { fs.Thaw(); }
  } thaw_first{fs};
  std::string line;
  EXPECT_TRUE(child.ReadLine(&line, std::chrono::seconds(30)));
  EXPECT_EQ(line, "7");
  // Thaw, so that the watchdog finishes its line and python3 can exit.
  fs.Thaw();
  EXPECT_EQ(child.Wait(), 0);
  EXPECT_NE(ReadFile(report_path).find("\"type\":\"hang\""), std::string::npos)
      << "the blocked line arrived";
}

TEST(PreloadProcess, ProgramsStartedAfterArmingRunWithoutTheShimAnyWay) {
  // os.system: glibc's system() spawns internally with the process environment; exec after
  // fork in a child of the armed process; posix_spawn with os.environ (a copy made at start).
  const PythonRun r = RunPython(
      "wait()\n"
      "sys.stdout.flush()\n"
      "os.system('echo system[$LD_PRELOAD]')\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    os.execv('/bin/sh', ['sh', '-c', 'echo forked[$LD_PRELOAD]'])\n"
      "os.waitpid(pid, 0)\n"
      "pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'echo spawn[$LD_PRELOAD]'], os.environ)\n"
      "os.waitpid(pid, 0)\n",
      {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "system[]\nforked[]\nspawn[]\n");
}

// execl, execlp and execle (variadic: the shim rebuilds their argument lists), called straight
// from libc's symbols through ctypes, in children forked before and after the parent armed.
constexpr char kExeclFamily[] =
    "import ctypes\n"
    "libc = ctypes.CDLL(None)\n"
    "def run(call):\n"
    "    sys.stdout.flush()\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        script = ('echo ' + call + '[$LD_PRELOAD]').encode()\n"
    "        env = (ctypes.c_char_p * 2)(('LD_PRELOAD=' + os.environ['LD_PRELOAD']).encode(), "
    "None)\n"
    "        if call == 'execl': libc.execl(b'/bin/sh', b'sh', b'-c', script, None)\n"
    "        if call == 'execlp': libc.execlp(b'sh', b'sh', b'-c', script, None)\n"
    "        if call == 'execle': libc.execle(b'/bin/sh', b'sh', b'-c', script, None, env)\n"
    "        os._exit(127)\n"
    "    os.waitpid(pid, 0)\n"
    "def all_three():\n"
    "    for call in ('execl', 'execlp', 'execle'): run(call)\n";

TEST(PreloadProcess, TheExeclFamilyFollowsTheLaunchRule) {
  const PythonRun r =
      RunPython(std::string(kExeclFamily) + "all_three()\nwait()\nall_three()\n", {});
  EXPECT_EQ(r.exit_code, 0);
  const std::string shim = HANGWATCH_PRELOAD_LIB;
  EXPECT_EQ(r.out, "execl[" + shim + "]\nexeclp[" + shim + "]\nexecle[" + shim +
                       "]\nexecl[]\nexeclp[]\nexecle[]\n");
}

TEST(PreloadProcess, ProgramsStartedBeforeArmingKeepTheShim) {
  const PythonRun r = RunPython(
      "print('[' + subprocess.run(['/bin/sh', '-c', 'echo $LD_PRELOAD'], capture_output=True,"
      " text=True).stdout.strip() + ']')\n",
      {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("[") + HANGWATCH_PRELOAD_LIB + "]\n");
}

TEST(PreloadProcess, ChildForkedBeforeTheLoopWatchesItself) {
  const PythonRun r = RunPython(
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    wait(); busy(0.5); wait(); sys.exit(0)\n"
      "_, status = os.waitpid(pid, 0)\n"
      "print(status)\n",
      {"HANGWATCH_THRESHOLD_MS=150"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "0\n");
  ASSERT_FALSE(r.report.hangs.empty());
  bool child_busy = false;
  for (const HangRecord& h : r.report.hangs) {
    EXPECT_NE(h.pid, r.pid) << "the child's own hangs only: the parent never waits";
    EXPECT_EQ(h.pid, h.tid) << "on the child's main thread";
    child_busy |= h.duration_ms >= 400;
  }
  EXPECT_TRUE(child_busy);
}

TEST(PreloadProcess, SlowStartupIsAStartupStallNotAHang) {
  const PythonRun r =
      RunPython("busy(0.6)\nwait()\n", {"HANGWATCH_THRESHOLD_MS=100", "HANGWATCH_STARTUP_MS=300"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.report.hangs.empty()) << "batch work before the loop is not a hang";
  ASSERT_EQ(r.report.startup_stalls.size(), 1u);
  EXPECT_EQ(r.report.startup_stalls[0].pid, r.pid);
  EXPECT_GE(r.report.startup_stalls[0].duration_ms, 600u);
  EXPECT_EQ(r.report.startup_stalls[0].threshold_ms, 300u);
}

TEST(PreloadProcess, StartupStallCanBeSwitchedOff) {
  const PythonRun r = RunPython(
      "busy(0.6)\nwait()\n",
      {"HANGWATCH_THRESHOLD_MS=100", "HANGWATCH_STARTUP_MS=300", "HANGWATCH_STARTUP_STALL=0"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.report.hangs.empty());
  EXPECT_TRUE(r.report.startup_stalls.empty());
}

}  // namespace
}  // namespace hangwatch::testing
