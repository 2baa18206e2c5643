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

#include "nlohmann/json.hpp"
#include "tests/snapshot/snapshot_test_util.h"

namespace hangwatch::snapshot_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// deadlock_target, started with its stdout on a pipe; killed and reaped at the end.
class StuckTarget {
 public:
  StuckTarget() {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      execl(DEADLOCK_TARGET, DEADLOCK_TARGET, static_cast<char*>(nullptr));
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
  // locker-a, locker-b, holder, blocked.
  const std::vector<int>& tids() const { return tids_; }

  // True once each of the three waiters sleeps in futex and the holder in its pause.
  bool WaitUntilStuck() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      bool stuck = tids_.size() == 4;
      for (size_t i = 0; stuck && i < tids_.size(); ++i) {
        const std::string line = Slurp("/proc/" + std::to_string(pid_) + "/task/" +
                                       std::to_string(tids_[i]) + "/syscall");
        const bool futex = line.rfind(std::to_string(SYS_futex) + " ", 0) == 0;
        stuck = i == 2 ? !line.empty() && line.rfind("running", 0) != 0 : futex;
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
