// `hangwatch snapshot PID` end to end, against tests/snapshot/snapshot_target.cc: eight threads
// in known call chains (blocked in read, nanosleep, a condition variable, epoll_wait, poll;
// busy loops; a thread in uninterruptible sleep under vfork), and the error cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/snapshot/snapshot_test_util.h"

namespace hangwatch::snapshot_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

struct Chain {
  const char* thread;                   // thread name
  std::vector<std::string> functions;   // innermost first, consecutive real frames
  std::vector<std::string> leaf_hints;  // one must appear in a frame above the chain (libc)
  bool blocked;
};

// The chains of snapshot_target.cc, in its "ready" order.
const std::vector<Chain>& Chains() {
  static const std::vector<Chain> chains = {
      {"reader", {"ReadChainC", "ReadChainB", "ReadChainA", "Recurse"}, {"read"}, true},
      {"sleeper", {"SleepChainB", "SleepChainA", "Recurse"}, {"nanosleep"}, true},
      {"waiter",
       {"CondChainC", "CondChainB", "CondChainA", "Recurse"},
       {"pthread_cond_wait"},
       true},
      {"poller", {"EpollChainB", "EpollChainA", "Recurse"}, {"epoll_wait"}, true},
      {"counter", {"CountChainC", "CountChainB", "CountChainA", "Recurse"}, {}, false},
      {"spinner", {"SpinChainB", "SpinChainA", "Recurse"}, {}, false},
      {"pollfd", {"PollChainB", "PollChainA", "Recurse"}, {"poll"}, true},
      {"reader2", {"ReadChainC", "ReadChainB", "ReadChainA", "Recurse"}, {"read"}, true},
  };
  return chains;
}

const Json* FindThread(const Json& snap, int tid) {
  for (const Json& t : snap["threads"]) {
    if (t["tid"].get<int>() == tid) return &t;
  }
  return nullptr;
}

// The outermost symbol of each address (inlined entries dropped): one name per real frame.
std::vector<std::string> RealFrameSymbols(const Json& thread) {
  std::vector<std::string> out;
  for (const Json& f : thread["frames"]) {
    if (f.value("inlined", false)) continue;
    out.push_back(f.value("symbol", std::string("??")));
  }
  return out;
}

class SnapshotTest : public ::testing::Test {
 protected:
  // Symbol indexes go to a scratch cache shared by the suite (the first snapshot indexes the
  // target and libc, the others reuse it), never to the user's.
  static void SetUpTestSuite() {
    char dir[] = "/tmp/hw_snapshot_cache_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    cache_ = new std::string(dir);
    setenv("HANGWATCH_CACHE_DIR", dir, 1);
  }
  static void TearDownTestSuite() {
    std::string cmd = "rm -rf '" + *cache_ + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
    delete cache_;
    cache_ = nullptr;
  }
  static std::string* cache_;
};
std::string* SnapshotTest::cache_ = nullptr;

// Every chain of the target, every function of it in order, in the agent's frame format.
void ExpectAllChains(const Target& target, const Json& snap) {
  EXPECT_EQ(snap["type"], "snapshot");
  EXPECT_EQ(snap["pid"].get<int>(), target.pid());
  EXPECT_TRUE(snap.contains("stopped_us"));
  EXPECT_EQ(snap["threads"].size(), 9u) << "main thread + 8 chains";

  for (size_t i = 0; i < Chains().size(); ++i) {
    const Chain& chain = Chains()[i];
    SCOPED_TRACE(chain.thread);
    const Json* t = FindThread(snap, target.tids()[i]);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ((*t)["name"], chain.thread);
    EXPECT_EQ((*t)["status"], "captured");
    if (chain.blocked) {
      EXPECT_EQ((*t)["state"], "S");
    } else {
      EXPECT_EQ((*t)["state"], "R");
      EXPECT_GT((*t)["cpu_us"].get<uint64_t>(), 0u);
    }
    ASSERT_FALSE((*t)["frames"].empty());
    EXPECT_EQ((*t)["registers"]["pc"], (*t)["frames"][0]["addr"]);

    std::vector<std::string> symbols = RealFrameSymbols(*t);
    auto first = std::find(symbols.begin(), symbols.end(), chain.functions[0]);
    ASSERT_NE(first, symbols.end()) << ::testing::PrintToString(symbols);
    for (size_t k = 0; k < chain.functions.size(); ++k) {
      ASSERT_LT(static_cast<size_t>(first - symbols.begin()) + k, symbols.size());
      EXPECT_EQ(first[static_cast<ptrdiff_t>(k)], chain.functions[k])
          << ::testing::PrintToString(symbols);
    }
    // Callers up to the thread's entry function (start_thread above it is named only when
    // libc's debug information is installed: it is not in libc's dynamic symbol table).
    EXPECT_NE(std::find(symbols.begin(), symbols.end(), "(anonymous namespace)::ThreadMain(void*)"),
              symbols.end())
        << ::testing::PrintToString(symbols);
    if (!chain.leaf_hints.empty()) {
      bool found = false;
      for (auto it = symbols.begin(); it != first; ++it) {
        for (const std::string& hint : chain.leaf_hints)
          found |= it->find(hint) != std::string::npos;
      }
      EXPECT_TRUE(found) << "expected " << chain.leaf_hints[0] << " above the chain in "
                         << ::testing::PrintToString(symbols);
    }
    // Frames of our own code: the agent's frame format, with file and line.
    for (const Json& f : (*t)["frames"]) {
      for (const char* key : {"addr", "module", "build_id", "offset"}) {
        EXPECT_TRUE(f.contains(key)) << key;
      }
      if (f.value("symbol", "") == chain.functions[0]) {
        EXPECT_EQ(f["module"], std::string(SNAPSHOT_TARGET));
        EXPECT_FALSE(f["build_id"].get<std::string>().empty());
        EXPECT_THAT(f.value("file", ""), HasSubstr("snapshot_target.cc"));
        EXPECT_GT(f.value("line", 0), 0);
      }
    }
  }
  bool target_module = false;
  for (const Json& m : snap["modules"]) target_module |= m["path"] == std::string(SNAPSHOT_TARGET);
  EXPECT_TRUE(target_module);
}

TEST_F(SnapshotTest, EveryChainAppearsWithEveryFunctionInOrder) {
  Target target;
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({std::to_string(target.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  ASSERT_EQ(CountLines(r.out), 1u) << "one JSON object on one line";
  Json snap = Json::parse(r.out);
  EXPECT_EQ(snap["stop"], "all");
  ExpectAllChains(target, snap);
}

TEST_F(SnapshotTest, PerThreadStopsFindTheSameChains) {
  Target target;
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({std::to_string(target.pid()), "--json", "--per-thread"});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  Json snap = Json::parse(r.out);
  EXPECT_EQ(snap["stop"], "per_thread");
  ExpectAllChains(target, snap);
  EXPECT_EQ(TracerPid(target.pid()), 0);
  EXPECT_EQ(target.Ask('r'), "read 1");
}

TEST_F(SnapshotTest, TargetKeepsRunningUnperturbedAfterwards) {
  Target target;
  ASSERT_TRUE(target.ready());
  for (int round = 0; round < 3; ++round) {
    CliResult r = RunCli({std::to_string(target.pid())});
    ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  }
  // Nothing left traced or stopped.
  EXPECT_EQ(TracerPid(target.pid()), 0);
  EXPECT_EQ(ThreadStates(target.pid()).find_first_of("tT"), std::string::npos)
      << ThreadStates(target.pid());
  // The busy thread advances (wait for it on the counter itself, bounded by Ask's timeout).
  uint64_t first = std::stoull(target.Ask('c'));
  uint64_t later = first;
  for (int i = 0; i < 100000 && later == first; ++i) later = std::stoull(target.Ask('c'));
  EXPECT_GT(later, first);
  // The blocked reader was not broken: its read() completes normally when data comes.
  EXPECT_EQ(target.Ask('r'), "read 1");
  // read, nanosleep and poll are restarted transparently after a ptrace stop: no EINTR.
  // epoll_wait is one of the calls that Linux fails with EINTR after any stop, even without a
  // signal handler (signal(7), "Interruption of system calls ... by stop signals"): one per
  // snapshot at most, which every event loop retries.
  std::string eintr = target.Ask('e');
  EXPECT_THAT(eintr, ::testing::StartsWith("read=0 nanosleep=0 epoll_wait="));
  EXPECT_THAT(eintr, ::testing::EndsWith(" poll=0"));
  int epoll_eintr = std::atoi(eintr.c_str() + eintr.find("epoll_wait=") + 11);
  EXPECT_LE(epoll_eintr, 3);
}

TEST_F(SnapshotTest, TextOutputShowsEveryThread) {
  Target target;
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  EXPECT_THAT(r.out, HasSubstr("stopped for "));
  for (size_t i = 0; i < Chains().size(); ++i) {
    EXPECT_THAT(r.out, HasSubstr("thread " + std::to_string(target.tids()[i]) + " \"" +
                                 Chains()[i].thread + "\""));
    for (const std::string& f : Chains()[i].functions) EXPECT_THAT(r.out, HasSubstr(f));
  }
  EXPECT_THAT(r.out, HasSubstr("snapshot_target.cc:"));
  EXPECT_THAT(r.out, HasSubstr("(snapshot_target+0x"));
}

TEST_F(SnapshotTest, TimingsLineNamesEveryPhaseAndLeavesTheOutputAlone) {
  Target target;
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({"--timings", std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  EXPECT_THAT(r.out, HasSubstr("thread " + std::to_string(target.tids()[0])));
  EXPECT_THAT(r.out, Not(HasSubstr("timings")));
  // One line on stderr: "timings (ms cpu/wall/page faults): start-up 0.7/-/95 modules ...".
  const size_t at = r.err.find("timings (ms cpu/wall/page faults):");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  for (const char* phase : {" start-up ", " modules ", " capture ", " cfi-setup ", " unwind ",
                            " symbols ", " output ", " total-cpu "}) {
    EXPECT_THAT(line, HasSubstr(phase)) << line;
  }
  // Without the option, no such line.
  CliResult plain = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.err, Not(HasSubstr("timings")));
}

// A thread interrupted inside the vDSO (clock_gettime's fast path) has no file on disk for its
// top frame: its CFI comes from the vDSO image in the target's memory, and the walk must go
// through it into the caller, here a child of this test process looping in clock_gettime.
TEST_F(SnapshotTest, UnwindsOutOfTheVdsoIntoTheCaller) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  const std::string exe(self, static_cast<size_t>(n));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    timespec ts;
    for (;;) clock_gettime(CLOCK_MONOTONIC, &ts);
  }
  struct Reaper {  // also when an assertion below returns early
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  int in_vdso = 0;
  for (int attempt = 0; attempt < 20 && in_vdso < 3; ++attempt) {
    CliResult r = RunCli({"--json", "--no-symbols", std::to_string(child)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Json snap = Json::parse(r.out);
    ASSERT_EQ(snap["threads"].size(), 1u);
    const Json& frames = snap["threads"][0]["frames"];
    ASSERT_FALSE(frames.empty());
    if (frames[0]["module"] != "[vdso]") continue;  // caught in libc or our loop this time
    ++in_vdso;
    bool reached_caller = false;
    for (const Json& f : frames) reached_caller |= f["module"] == exe;
    EXPECT_TRUE(reached_caller) << "no frame of " << exe << " below the vDSO: " << frames.dump();
    EXPECT_EQ(frames[1].value("method", ""), "cfi") << frames.dump();
  }
  EXPECT_GT(in_vdso, 0) << "never caught the child inside the vDSO";
}

// A thread name is the target's to choose (another user's process, when root takes the
// snapshot): an escape sequence in it must not reach the terminal.
TEST_F(SnapshotTest, ThreadNamesCannotWriteControlSequencesToTheTerminal) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    prctl(PR_SET_NAME, "\x1b]0;pwned\x07", 0, 0, 0);  // retitles a terminal window
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    for (;;) pause();
  }
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);  // named
  close(ready[0]);
  CliResult r = RunCli({"--no-symbols", std::to_string(child)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"\\x1b]0;pwned\\x07\""));
}

TEST_F(SnapshotTest, FramePointersAloneStillFindOurChains) {
  Target target;
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({std::to_string(target.pid()), "--json", "--no-cfi"});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  Json snap = Json::parse(r.out);
  // Busy chains run in frame-pointer code only: complete. (Blocked ones start in libc, which
  // Debian builds without frame pointers: the caller of the libc function may be skipped.)
  for (size_t i : {4u, 5u}) {
    const Json* t = FindThread(snap, target.tids()[i]);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ((*t)["unwind"], "fp");
    std::vector<std::string> symbols = RealFrameSymbols(*t);
    auto first = std::find(symbols.begin(), symbols.end(), Chains()[i].functions[0]);
    ASSERT_NE(first, symbols.end()) << ::testing::PrintToString(symbols);
    for (size_t k = 0; k < Chains()[i].functions.size(); ++k) {
      EXPECT_EQ(first[static_cast<ptrdiff_t>(k)], Chains()[i].functions[k]);
    }
  }
}

TEST_F(SnapshotTest, StoppedProcessStaysStopped) {
  Target target;
  ASSERT_TRUE(target.ready());
  ASSERT_EQ(kill(target.pid(), SIGSTOP), 0);
  // Wait (bounded) for the group stop to reach every thread.
  for (int i = 0; i < 100000; ++i) {
    std::string s = ThreadStates(target.pid());
    if (s.find_first_not_of("T") == std::string::npos) break;
    sched_yield();
  }
  ASSERT_EQ(ThreadStates(target.pid()).find_first_not_of("T"), std::string::npos);
  CliResult r = RunCli({std::to_string(target.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  Json snap = Json::parse(r.out);
  const Json* t = FindThread(snap, target.tids()[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*t)["state"], "T");
  std::vector<std::string> symbols = RealFrameSymbols(*t);
  EXPECT_NE(std::find(symbols.begin(), symbols.end(), "ReadChainC"), symbols.end());
  // Still stopped by the job-control stop: the snapshot did not resume it.
  EXPECT_EQ(ThreadStates(target.pid()).find_first_not_of("T"), std::string::npos)
      << ThreadStates(target.pid());
  EXPECT_EQ(TracerPid(target.pid()), 0);
  ASSERT_EQ(kill(target.pid(), SIGCONT), 0);
  EXPECT_EQ(target.Ask('r'), "read 1");
}

TEST_F(SnapshotTest, UninterruptibleThreadIsReadWithoutStoppingAndReleased) {
  Target target({"--vfork"});
  ASSERT_TRUE(target.ready());
  const int vforker = target.tids()[7];
  CliResult r = RunCli({std::to_string(target.pid()), "--json", "--stop-timeout-ms", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  EXPECT_THAT(r.err, HasSubstr("thread " + std::to_string(vforker) + " did not stop in time"));
  Json snap = Json::parse(r.out);
  const Json* t = FindThread(snap, vforker);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*t)["state"], "D");
  EXPECT_EQ((*t)["status"], "did not stop");
  // Every other chain was captured in full.
  const Json* reader = FindThread(snap, target.tids()[0]);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ((*reader)["status"], "captured");
  // The CLI has exited: the late stopper is released; the vfork completes and everything runs.
  EXPECT_EQ(target.Ask('v'), "vfork done");
  EXPECT_EQ(TracerPid(target.pid()), 0);
  EXPECT_EQ(ThreadStates(target.pid()).find_first_of("tT"), std::string::npos);
  EXPECT_EQ(target.Ask('r'), "read 1");
}

// Waits (bounded) until one of the process's threads is in a tracing stop ('t').
bool SawTracingStop(pid_t pid) {
  for (int i = 0; i < 2000000; ++i) {
    if (ThreadStates(pid).find('t') != std::string::npos) return true;
    sched_yield();
  }
  return false;
}

TEST_F(SnapshotTest, TargetExitingDuringTheSnapshotIsACleanError) {
  // The vfork thread keeps the stop window open (it cannot stop while in uninterruptible
  // sleep): the other threads sit in a tracing stop ('t') until the timeout. The target is
  // killed right then, in the middle of the snapshot.
  Target target({"--vfork"});
  ASSERT_TRUE(target.ready());
  Cli cli({std::to_string(target.pid()), "--stop-timeout-ms", "60000"});
  ASSERT_TRUE(SawTracingStop(target.pid())) << "the snapshot never stopped a thread";
  target.KillAndReap();
  CliResult r = cli.Finish(30000);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("exited during the snapshot"));
}

TEST_F(SnapshotTest, CtrlCDuringTheStopReleasesTheTarget) {
  // As above, the vfork thread holds the stop window open; SIGINT arrives inside it.
  Target target({"--vfork"});
  ASSERT_TRUE(target.ready());
  Cli cli({std::to_string(target.pid()), "--stop-timeout-ms", "60000"});
  ASSERT_TRUE(SawTracingStop(target.pid())) << "the snapshot never stopped a thread";
  ASSERT_EQ(kill(cli.pid(), SIGINT), 0);
  CliResult r = cli.Finish(30000);
  // The CLI dies of the SIGINT (default action), but only after detaching every thread.
  EXPECT_EQ(r.signal, SIGINT) << r.exit_code << r.err;
  EXPECT_EQ(TracerPid(target.pid()), 0);
  EXPECT_EQ(ThreadStates(target.pid()).find('t'), std::string::npos) << ThreadStates(target.pid());
  EXPECT_EQ(target.Ask('r'), "read 1");
  EXPECT_EQ(target.Ask('v'), "vfork done");
}

TEST_F(SnapshotTest, SnapshotOfAThreadChurningProcessNeverHangsOrLeavesItStopped) {
  Target target({"--churn"});
  ASSERT_TRUE(target.ready());
  for (int i = 0; i < 5; ++i) {
    CliResult r = RunCli({std::to_string(target.pid()), "--no-symbols"});
    ASSERT_EQ(r.exit_code, 0) << r.err << " signal " << r.signal;
  }
  EXPECT_EQ(TracerPid(target.pid()), 0);
  EXPECT_EQ(target.Ask('r'), "read 1");
}

TEST_F(SnapshotTest, AnotherUsersProcessIsPermissionDenied) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to run the CLI as another user";
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) missing";
  struct stat st;
  ASSERT_EQ(stat(HANGWATCH_CLI, &st), 0);
  Target target;  // owned by root
  ASSERT_TRUE(target.ready());
  CliResult r = RunCli({std::to_string(target.pid())},
                       {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  if (r.exit_code == 127 || r.err.find("Permission denied") != std::string::npos) {
    if (r.err.find("hangwatch snapshot") == std::string::npos) {
      GTEST_SKIP() << "the CLI cannot be executed as uid 65534: " << r.err;
    }
  }
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("not allowed to trace process " + std::to_string(target.pid())));
  EXPECT_THAT(r.err, HasSubstr("/proc/sys/kernel/yama/ptrace_scope"));
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(target.Ask('r'), "read 1");
}

TEST_F(SnapshotTest, AlreadyTracedProcessNamesTheTracer) {
  Target target;
  ASSERT_TRUE(target.ready());
  ASSERT_EQ(ptrace(PTRACE_SEIZE, target.pid(), nullptr, nullptr), 0);
  CliResult r = RunCli({std::to_string(target.pid())});
  // Release it: a seized tracee detaches only from a stop.
  ASSERT_EQ(ptrace(PTRACE_INTERRUPT, target.pid(), nullptr, nullptr), 0);
  int status = 0;
  ASSERT_EQ(waitpid(target.pid(), &status, __WALL), target.pid());
  ASSERT_EQ(ptrace(PTRACE_DETACH, target.pid(), nullptr, nullptr), 0);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("already being traced by process " + std::to_string(getpid())));
  EXPECT_EQ(target.Ask('r'), "read 1");
}

TEST_F(SnapshotTest, NonexistentPid) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // reaped: the pid is free
  CliResult r = RunCli({std::to_string(child)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "hangwatch snapshot: no process with pid " + std::to_string(child) + "\n");
  EXPECT_TRUE(r.out.empty());
}

// The thread name comes from /proc/.../stat, where it sits in parentheses: a name that has
// parentheses and spaces of its own must come out whole.
TEST_F(SnapshotTest, ThreadNameWithParenthesesAndSpaces) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_NAME, "a) (b c) d", 0, 0, 0);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);  // named
  close(ready[0]);
  // Named, but on a busy machine it may not have reached pause() yet: wait (bounded) until it
  // sleeps there, the state the snapshot must show.
  for (int i = 0; i < 10000 && ThreadStates(child) != "S"; ++i) usleep(1000);
  ASSERT_EQ(ThreadStates(child), "S");
  CliResult r = RunCli({std::to_string(child), "--json", "--no-symbols"});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json snap = Json::parse(r.out);
  ASSERT_EQ(snap["threads"].size(), 1u);
  EXPECT_EQ(snap["threads"][0]["name"], "a) (b c) d");
  EXPECT_EQ(snap["threads"][0]["state"], "S");
}

TEST_F(SnapshotTest, Zombie) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  // Not reaped yet: wait (bounded) until the kernel shows it as a zombie.
  std::string path = "/proc/" + std::to_string(child) + "/stat";
  bool zombie = false;
  for (int i = 0; i < 1000000 && !zombie; ++i) {
    std::string s = Slurp(path);
    zombie = s.find(") Z ") != std::string::npos;
    if (!zombie) sched_yield();
  }
  ASSERT_TRUE(zombie);
  CliResult r = RunCli({std::to_string(child)});
  waitpid(child, nullptr, 0);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is a zombie"));
}

TEST_F(SnapshotTest, BadUsage) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{}, "missing PID"},
      {{"abc"}, "'abc' is not a process id"},
      {{"0"}, "'0' is not a process id"},
      {{"-5"}, "unknown option '-5'"},
      {{"1", "2"}, "one PID only"},
      {{"1", "--bogus"}, "unknown option '--bogus'"},
      {{"1", "--max-frames", "0"}, "--max-frames needs a number"},
      {{"1", "--stack-kb"}, "--stack-kb needs a number"},
      {{"1", "--stop-timeout-ms", "x"}, "--stop-timeout-ms needs a number"},
      {{"99999999999"}, "is not a process id"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    CliResult r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  CliResult help = RunCli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: hangwatch snapshot PID"));
}

}  // namespace
}  // namespace hangwatch::snapshot_test
