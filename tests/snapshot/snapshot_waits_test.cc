// `hangwatch snapshot PID` names what each thread waits for, prints the wait-for graph and
// reports a deadlock naming every thread of the cycle: against tests/snapshot/deadlock_target.cc,
// two threads deadlocked over two mutexes and a named thread holding a mutex another waits for.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cause/syscall_decode.h"
#include "nlohmann/json.hpp"
#include "tests/snapshot/snapshot_test_util.h"
#include "tools/snapshot/snapshot_waits.h"

namespace hangwatch::snapshot_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// deadlock_target, started with its stdout on a pipe; killed and reaped at the end.
class StuckTarget {
 public:
  // `args`: the fixture's mode ({} for the waits without a timeout, {"timed"} for the timed ones).
  explicit StuckTarget(std::vector<std::string> args = {}) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      std::vector<char*> argv{const_cast<char*>(DEADLOCK_TARGET)};
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(DEADLOCK_TARGET, argv.data());
      _exit(127);
    }
    close(out[1]);
    from_ = out[0];
    std::string line;
    if (ReadLine(from_, &line) && line.rfind("ready", 0) == 0) {
      std::istringstream s(line.substr(5));
      int tid;
      while (s >> tid) tids_.push_back(tid);
    }
  }
  ~StuckTarget() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    close(from_);
  }
  StuckTarget(const StuckTarget&) = delete;
  StuckTarget& operator=(const StuckTarget&) = delete;

  pid_t pid() const { return pid_; }
  int from() const { return from_; }
  // locker-a, locker-b, holder, blocked (and cond-waiter in the timed mode); timed-waiter in the
  // deadline mode.
  const std::vector<int>& tids() const { return tids_; }

  // The first number of a thread's syscall line: the call it sleeps in ("" when running).
  std::string SyscallOf(int tid) const {
    const std::string line =
        Slurp("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/syscall");
    if (line.rfind("running", 0) == 0) return "";
    return line.substr(0, line.find(' '));
  }

  // True once every waiter sleeps in futex and the holder (index 2) in its sleep.
  bool WaitUntilStuck() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      bool stuck = tids_.size() >= 4;
      for (size_t i = 0; stuck && i < tids_.size(); ++i) {
        const std::string nr = SyscallOf(tids_[i]);
        stuck = i == 2 ? !nr.empty() && nr != "-1" : nr == std::to_string(SYS_futex);
      }
      if (stuck) return true;
      const timespec pause{0, 5'000'000};
      nanosleep(&pause, nullptr);  // polling the target's state, bounded by the deadline
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  int from_ = -1;
  std::vector<int> tids_;
};

std::string Named(int tid, const char* name) {
  return "thread " + std::to_string(tid) + " \"" + name + "\"";
}

TEST(SnapshotWaitsTest, DeadlockOfTwoThreadsIsReportedNamingBoth) {
  StuckTarget target;
  ASSERT_EQ(target.tids().size(), 4u);
  ASSERT_TRUE(target.WaitUntilStuck());
  const int a = target.tids()[0], b = target.tids()[1];
  CliResult r = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t dl = r.out.find("DEADLOCK: deadlock of 2 threads: ");
  ASSERT_NE(dl, std::string::npos) << r.out;
  const std::string line = r.out.substr(dl, r.out.find('\n', dl) - dl);
  EXPECT_THAT(line, HasSubstr(Named(a, "locker-a") + " wants mutex 0x"));
  EXPECT_THAT(line, HasSubstr("held by " + Named(b, "locker-b") + ", which wants mutex 0x"));
  EXPECT_THAT(line, HasSubstr("held by " + Named(a, "locker-a")));
  // The holder and the thread blocked on it are no part of the cycle.
  EXPECT_THAT(line, Not(HasSubstr("holder")));
  EXPECT_THAT(r.out, HasSubstr("wait-for graph"));
  EXPECT_THAT(r.out, HasSubstr(Named(a, "locker-a") + " -> " + Named(b, "locker-b")));
  EXPECT_THAT(r.out, HasSubstr(Named(b, "locker-b") + " -> " + Named(a, "locker-a")));
}

TEST(SnapshotWaitsTest, LockHeldByANamedWorkerNamesItUnderTheWaiter) {
  StuckTarget target;
  ASSERT_EQ(target.tids().size(), 4u);
  ASSERT_TRUE(target.WaitUntilStuck());
  const int holder = target.tids()[2], blocked = target.tids()[3];
  CliResult r = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The line right under the blocked thread's header.
  const size_t header = r.out.find("\n" + Named(blocked, "blocked") + " ");
  ASSERT_NE(header, std::string::npos) << r.out;
  const size_t wait = r.out.find('\n', header + 1) + 1;
  const std::string line = r.out.substr(wait, r.out.find('\n', wait) - wait);
  EXPECT_THAT(line, ::testing::MatchesRegex("  waiting for mutex 0x[0-9a-f]+ held by thread " +
                                            std::to_string(holder) + " \"holder\""));
  EXPECT_THAT(r.out, HasSubstr(Named(blocked, "blocked") + " -> " + Named(holder, "holder")));
  EXPECT_THAT(r.out, HasSubstr("HolderSleeps"));
}

TEST(SnapshotWaitsTest, JsonCarriesEachWaitTheGraphAndTheDeadlock) {
  StuckTarget target;
  ASSERT_EQ(target.tids().size(), 4u);
  ASSERT_TRUE(target.WaitUntilStuck());
  const int a = target.tids()[0], b = target.tids()[1];
  const int holder = target.tids()[2], blocked = target.tids()[3];
  CliResult r = RunCli({std::to_string(target.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  std::map<int, Json> waits;
  for (const Json& t : j["threads"]) waits[t["tid"].get<int>()] = t["wait"];
  EXPECT_EQ(waits[a]["owner"], b);
  EXPECT_EQ(waits[b]["owner"], a);
  EXPECT_EQ(waits[blocked]["owner"], holder);
  EXPECT_EQ(waits[blocked]["lock"]["type"], "mutex");
  EXPECT_THAT(waits[holder]["syscall"].get<std::string>(), Not(HasSubstr("futex")));
  ASSERT_EQ(j["deadlocks"].size(), 1u);
  const std::vector<int> cycle = j["deadlocks"][0]["threads"];
  EXPECT_EQ(std::set<int>(cycle.begin(), cycle.end()), (std::set<int>{a, b}));
  EXPECT_EQ(j["wait_for"].size(), 3u);
}

}  // namespace
}  // namespace hangwatch::snapshot_test

namespace hangwatch::snapshot_test {
namespace {

// The line right under a thread's header: what it waits for.
std::string WaitLineOf(const std::string& out, int tid, const char* name) {
  const size_t header = out.find("\n" + Named(tid, name) + " ");
  if (header == std::string::npos) return "";
  const size_t wait = out.find('\n', header + 1) + 1;
  return out.substr(wait, out.find('\n', wait) - wait);
}

// Every wait of the timed fixture read right: the ptrace stop of the snapshot turns each timed
// wait into restart_syscall, which names neither the call nor the lock.
void ExpectTimedWaitsRead(const StuckTarget& target, const CliResult& r) {
  const int a = target.tids()[0], b = target.tids()[1];
  const int holder = target.tids()[2], blocked = target.tids()[3], cond = target.tids()[4];
  const size_t dl = r.out.find("DEADLOCK: deadlock of 2 threads: ");
  ASSERT_NE(dl, std::string::npos) << r.out;
  const std::string line = r.out.substr(dl, r.out.find('\n', dl) - dl);
  EXPECT_THAT(line, HasSubstr(Named(a, "locker-a") + " wants mutex 0x"));
  EXPECT_THAT(line, HasSubstr("held by " + Named(b, "locker-b") + ", which wants mutex 0x"));
  EXPECT_THAT(r.out, HasSubstr(Named(a, "locker-a") + " -> " + Named(b, "locker-b")));
  EXPECT_THAT(r.out, HasSubstr(Named(b, "locker-b") + " -> " + Named(a, "locker-a")));
  // std::timed_mutex::try_lock_for: a mutex with its owner.
  EXPECT_THAT(WaitLineOf(r.out, blocked, "blocked"),
              ::testing::MatchesRegex("  waiting for mutex 0x[0-9a-f]+ held by thread " +
                                      std::to_string(holder) + " \"holder\""));
  EXPECT_THAT(WaitLineOf(r.out, holder, "holder"),
              ::testing::MatchesRegex("  sleeping in (clock_)?nanosleep\\(.*"));
  EXPECT_THAT(WaitLineOf(r.out, cond, "cond-waiter"),
              ::testing::MatchesRegex("  waiting on condition variable 0x[0-9a-f]+ \\(no owner.*"));
  EXPECT_THAT(r.out, Not(HasSubstr("syscall " + std::to_string(SYS_restart_syscall))));
  EXPECT_THAT(r.out, Not(HasSubstr("restart_syscall")));
}

TEST(SnapshotTimedWaitsTest, DeadlockOverTimedLocksIsReportedNamingBoth) {
  StuckTarget target({"timed"});
  ASSERT_EQ(target.tids().size(), 5u);
  ASSERT_TRUE(target.WaitUntilStuck());
  CliResult r = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectTimedWaitsRead(target, r);
}

// The second snapshot finds every timed wait already restarted by the first one: the call is
// restart_syscall before, during and after its stop.
TEST(SnapshotTimedWaitsTest, SecondSnapshotReadsWaitsTheFirstRestarted) {
  StuckTarget target({"timed"});
  ASSERT_EQ(target.tids().size(), 5u);
  ASSERT_TRUE(target.WaitUntilStuck());
  CliResult first = RunCli({std::to_string(target.pid()), "--no-symbols"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(target.SyscallOf(target.tids()[0]), std::to_string(SYS_restart_syscall));
  CliResult second = RunCli({std::to_string(target.pid())});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ExpectTimedWaitsRead(target, second);
}

TEST(SnapshotTimedWaitsTest, JsonCarriesTimedWaitsTheGraphAndTheDeadlock) {
  StuckTarget target({"timed"});
  ASSERT_EQ(target.tids().size(), 5u);
  ASSERT_TRUE(target.WaitUntilStuck());
  const int a = target.tids()[0], b = target.tids()[1];
  const int holder = target.tids()[2], blocked = target.tids()[3], cond = target.tids()[4];
  CliResult r = RunCli({std::to_string(target.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  std::map<int, Json> waits;
  for (const Json& t : j["threads"]) waits[t["tid"].get<int>()] = t["wait"];
  EXPECT_EQ(waits[a]["owner"], b);
  EXPECT_EQ(waits[b]["owner"], a);
  EXPECT_EQ(waits[blocked]["owner"], holder);
  EXPECT_EQ(waits[blocked]["lock"]["type"], "mutex");
  EXPECT_EQ(waits[cond]["lock"]["type"], "condition_variable");
  EXPECT_THAT(waits[holder]["syscall"].get<std::string>(), HasSubstr("nanosleep("));
  for (int tid : {a, b, blocked, cond, holder}) {
    if (tid != holder) {
      EXPECT_THAT(waits[tid]["syscall"].get<std::string>(), HasSubstr("futex(")) << tid;
    }
    EXPECT_EQ(waits[tid]["restarted"], "known") << tid;  // the call read before the stop
  }
  ASSERT_EQ(j["deadlocks"].size(), 1u);
  const std::vector<int> cycle = j["deadlocks"][0]["threads"];
  EXPECT_EQ(std::set<int>(cycle.begin(), cycle.end()), (std::set<int>{a, b}));
  EXPECT_EQ(j["wait_for"].size(), 3u);
}

// A timed lock snapshotted halfway still times out at its deadline (the kernel restarts it with
// the deadline it had, not a fresh timeout): a wait of 1500 ms snapshotted after 700 ms returns
// ETIMEDOUT, well before the 700 ms late a fresh timeout would make it.
TEST(SnapshotTimedWaitsTest, TimedLockSnapshottedHalfwayTimesOutAtItsDeadline) {
  const auto start = std::chrono::steady_clock::now();
  StuckTarget target({"deadline", "1500"});
  ASSERT_EQ(target.tids().size(), 1u);
  const int waiter = target.tids()[0];
  const auto waiting_deadline = start + std::chrono::seconds(10);
  while (target.SyscallOf(waiter) != std::to_string(SYS_futex) ||
         std::chrono::steady_clock::now() < start + std::chrono::milliseconds(700)) {
    ASSERT_LT(std::chrono::steady_clock::now(), waiting_deadline);
    const timespec pause{0, 5'000'000};
    nanosleep(&pause, nullptr);  // until halfway: in its wait, and 700 ms spent
  }
  CliResult r = RunCli({std::to_string(target.pid()), "--no-symbols", "--no-python"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(WaitLineOf(r.out, waiter, "timed-waiter"),
              ::testing::MatchesRegex("  waiting for mutex 0x[0-9a-f]+ held by thread " +
                                      std::to_string(target.pid()) + " .*"));
  std::string result;
  ASSERT_TRUE(ReadLine(target.from(), &result, 30000));
  std::istringstream s(result);
  std::string word, error;
  long late_ms = -1;
  s >> word >> error >> late_ms;
  EXPECT_EQ(word, "result");
  EXPECT_EQ(error, "ETIMEDOUT") << result;
  EXPECT_GE(late_ms, 0) << result;
  EXPECT_LT(late_ms, 500) << result;  // generous: a fresh timeout would be 700 ms late or more
}

}  // namespace
}  // namespace hangwatch::snapshot_test

namespace hangwatch::snapshot_test {
namespace {

using tools::ChooseCall;
using tools::Restart;

unwind::TaskSyscall Line(int64_t nr, std::initializer_list<uint64_t> args) {
  unwind::TaskSyscall s;
  s.nr = nr;
  s.fields = 9;
  size_t i = 0;
  for (uint64_t a : args) s.args[i++] = a;
  return s;
}

constexpr uint64_t kLock = 0x55d0c0de1220;

TEST(ChooseCallTest, ACallThatWasNotRestartedIsTheOneReadAfterTheStop) {
  Restart r = Restart::kUnknown;
  const unwind::TaskSyscall after = Line(SYS_futex, {kLock, 0x80, 2});
  EXPECT_EQ(ChooseCall(Line(SYS_futex, {kLock, 0x80, 2}), SYS_futex, after, &r).nr, SYS_futex);
  EXPECT_EQ(r, Restart::kNo);
  // It moved on to another wait since: the one it sleeps in now.
  EXPECT_EQ(ChooseCall(Line(SYS_clock_nanosleep, {0, 0, 0x7ff0}), -1, after, &r).nr, SYS_futex);
  EXPECT_EQ(r, Restart::kNo);
}

TEST(ChooseCallTest, ARestartedCallIsTheOneReadBeforeTheStop) {
  Restart r = Restart::kNo;
  const unwind::TaskSyscall c = ChooseCall(Line(SYS_futex, {kLock, 0x189, 2}), -1,
                                           Line(SYS_restart_syscall, {kLock, 0x189, 2}), &r);
  EXPECT_EQ(c.nr, SYS_futex);
  EXPECT_EQ(c.args[0], kLock);
  EXPECT_EQ(r, Restart::kKnown);
}

TEST(ChooseCallTest, AThreadThatRanBeforeTheStopIsToldByTheRegistersOrNotAtAll) {
  Restart r = Restart::kNo;
  const unwind::TaskSyscall running;  // "running": no line
  const unwind::TaskSyscall after = Line(SYS_restart_syscall, {kLock, 0x189, 2});
  // x86_64: the call's number in the registers at the stop (orig_rax).
  EXPECT_EQ(ChooseCall(running, SYS_futex, after, &r).nr, SYS_futex);
  EXPECT_EQ(r, Restart::kKnown);
  // Not in a call at the stop, or no number (aarch64): nothing tells.
  EXPECT_EQ(ChooseCall(running, -1, after, &r).nr, SYS_restart_syscall);
  EXPECT_EQ(r, Restart::kUnknown);
  // A line read before that is another call (other arguments) is not taken for it.
  ChooseCall(Line(SYS_futex, {kLock + 64, 0x189, 2}), -1, after, &r);
  EXPECT_EQ(r, Restart::kUnknown);
}

TEST(ChooseCallTest, ACallRestartedBeforeTheSnapshotIsToldByItsKernelWait) {
  Restart r = Restart::kNo;
  const unwind::TaskSyscall after = Line(SYS_restart_syscall, {kLock, 0x189, 2});
  EXPECT_EQ(ChooseCall(after, SYS_restart_syscall, after, &r).nr, SYS_restart_syscall);
  EXPECT_EQ(r, Restart::kUnknown);
  const uint64_t futex[6] = {kLock, 0x189, 2, 0, 0, 0};
  EXPECT_EQ(cause::RestartedCall("futex_wait_queue", futex), SYS_futex);
  EXPECT_EQ(cause::RestartedCall("futex_do_wait", futex), SYS_futex);
  // A restarted sleep has no kernel function of its own: its arguments tell which.
  const uint64_t clock_sleep[6] = {1, 0, 0x7ffd1000, 0, 0, 0};
  const uint64_t sleep[6] = {0x7ffd1000, 0, 0, 0, 0, 0};
  EXPECT_EQ(cause::RestartedCall("do_syscall_64", clock_sleep), SYS_clock_nanosleep);
  EXPECT_EQ(cause::RestartedCall("hrtimer_nanosleep", sleep), SYS_nanosleep);
#ifdef SYS_poll
  const uint64_t poll[6] = {0x7ffd1000, 1, 1500, 0, 0, 0};
  EXPECT_EQ(cause::RestartedCall("poll_schedule_timeout.constprop.0", poll), SYS_poll);
#endif
  // Unreadable, or nothing that fits: not guessed.
  EXPECT_EQ(cause::RestartedCall("", futex), -1);
  EXPECT_EQ(cause::RestartedCall("0", futex), -1);
  const uint64_t nothing[6] = {};
  EXPECT_EQ(cause::RestartedCall("do_syscall_64", nothing), -1);
}

}  // namespace
}  // namespace hangwatch::snapshot_test
