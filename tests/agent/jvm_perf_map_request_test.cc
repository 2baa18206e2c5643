// agent/samplers/jvm_perf_map_request: when the JVM is asked for its perf map, with a fake in
// place of the attach exchange: one request at a time (hangs that open meanwhile are served by
// the next one), the spacing between two, a JVM that refuses or fails never asked again, a
// timeout asked again, each kind of failure said once, and a destructor that never waits for a
// request under way.
#include "agent/samplers/jvm_perf_map_request.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace hangwatch::agent {
namespace {

using std::chrono::milliseconds;

// Replies in order (the last one repeated); each request can be held until released.
struct FakeJvm {
  std::vector<jvm::AttachStatus> replies;
  std::atomic<int> asked{0};
  std::atomic<int> answered{0};
  std::mutex gate;  // held by the test: requests wait for it

  JvmPerfMapRequest::Ask Ask() {
    return [this] {
      const int n = asked.fetch_add(1);
      std::lock_guard<std::mutex> wait(gate);
      jvm::AttachReply r;
      r.status = replies[std::min<size_t>(static_cast<size_t>(n), replies.size() - 1)];
      r.why = "why " + std::to_string(n);
      return r;
    };
  }
  // The thread dump's reply: `dump_text` with `dump_status`.
  JvmPerfMapRequest::Ask Dump() {
    return [this] {
      dumps.fetch_add(1);
      jvm::AttachReply r;
      r.status = dump_status;
      r.text = dump_text;
      r.why = "dump refused";
      return r;
    };
  }
  JvmPerfMapRequest::Answered Answered() {
    return [this] { answered.fetch_add(1); };
  }
  std::string dump_text;
  jvm::AttachStatus dump_status = jvm::AttachStatus::kOk;
  std::atomic<int> dumps{0};
};

// The notes a request said, collected from its worker thread (made before the request, so
// that it outlives it).
class Notes {
 public:
  JvmPerfMapRequest::Note sink() {
    return [this](const std::string& note) {
      std::lock_guard<std::mutex> lock(mu_);
      said_.push_back(note);
    };
  }
  std::vector<std::string> said() const {
    std::lock_guard<std::mutex> lock(mu_);
    return said_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> said_;
};

JvmPerfMapRequest::Options NoSpacing() {
  JvmPerfMapRequest::Options o;
  o.min_spacing = milliseconds(0);
  return o;
}

TEST(JvmPerfMapRequest, HangsOpenedDuringARequestAreServedByTheNextOneOnly) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kOk};
  JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), NoSpacing());
  std::unique_lock<std::mutex> hold(jvm.gate);
  request.HangOpened(1);
  while (jvm.asked.load() == 0) std::this_thread::yield();  // the first is under way
  request.HangOpened(1);
  request.HangOpened(1);
  request.HangOpened(1);
  hold.unlock();
  ASSERT_TRUE(request.WaitForRequests(2, milliseconds(10000)));
  EXPECT_FALSE(request.WaitForRequests(3, milliseconds(200))) << "three hangs, one request";
  EXPECT_EQ(request.counts().asked, 2u);
  EXPECT_EQ(request.counts().answered, 2u);
  EXPECT_EQ(jvm.answered.load(), 2) << "the map re-read after each answer";
}

TEST(JvmPerfMapRequest, AHangSoonAfterARequestWaitsForTheSpacing) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kOk};
  JvmPerfMapRequest::Options o;
  o.min_spacing = std::chrono::hours(1);
  auto request = std::make_unique<JvmPerfMapRequest>(jvm.Ask(), jvm.Dump(), jvm.Answered(), o);
  request->HangOpened(1);
  ASSERT_TRUE(request->WaitForRequests(1, milliseconds(10000)));
  request->HangOpened(1);
  EXPECT_FALSE(request->WaitForRequests(2, milliseconds(200)));
  const auto before = std::chrono::steady_clock::now();
  request.reset();  // the worker waits out the spacing: stopping wakes it
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(30));
  EXPECT_EQ(jvm.asked.load(), 1);
}

TEST(JvmPerfMapRequest, AJvmThatRefusesOrFailsIsNeverAskedAgainAndSaidOnce) {
  for (const jvm::AttachStatus status : {jvm::AttachStatus::kRefused, jvm::AttachStatus::kFailed}) {
    FakeJvm jvm;
    jvm.replies = {status};
    Notes notes;
    JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), NoSpacing());
    request.set_note(notes.sink());
    request.HangOpened(1);
    ASSERT_TRUE(request.WaitForRequests(1, milliseconds(10000)));
    request.HangOpened(1);
    EXPECT_FALSE(request.WaitForRequests(2, milliseconds(200)));
    EXPECT_TRUE(request.counts().given_up);
    EXPECT_EQ(jvm.answered.load(), 0);
    const std::vector<std::string> said = notes.said();
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("why 0"), std::string::npos) << said[0];
    EXPECT_NE(said[0].find("stay unnamed"), std::string::npos) << said[0];
  }
}

TEST(JvmPerfMapRequest, ATimeoutIsAskedAgainAtTheNextHangAndSaidOnce) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kTimeout, jvm::AttachStatus::kTimeout, jvm::AttachStatus::kOk};
  Notes notes;
  JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), NoSpacing());
  request.set_note(notes.sink());
  for (uint64_t n = 1; n <= 3; ++n) {
    request.HangOpened(1);
    ASSERT_TRUE(request.WaitForRequests(n, milliseconds(10000))) << n;
  }
  EXPECT_FALSE(request.counts().given_up);
  EXPECT_EQ(request.counts().answered, 1u);
  const std::vector<std::string> said = notes.said();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("timeout: why 0 (asked again at the next hang)"), std::string::npos)
      << said[0];
}

TEST(JvmPerfMapRequest, StoppingNeverWaitsForARequestUnderWay) {
  auto jvm = std::make_shared<FakeJvm>();  // outlives the detached worker's request
  jvm->replies = {jvm::AttachStatus::kOk};
  std::unique_lock<std::mutex> hold(jvm->gate);
  {
    JvmPerfMapRequest request(
        jvm->Ask(), jvm->Dump(), [jvm] { jvm->answered.fetch_add(1); }, NoSpacing());
    request.HangOpened(1);
    while (jvm->asked.load() == 0) std::this_thread::yield();
  }  // returns while the request is held
  hold.unlock();
  for (int i = 0; i < 10000 && jvm->answered.load() == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(jvm->answered.load(), 1) << "the request ended on its own";
}

}  // namespace
}  // namespace hangwatch::agent

namespace hangwatch::agent {
namespace {

// Two threads of a HotSpot thread dump (its format, trimmed): nid 0x1a2b is 6699.
constexpr char kDump[] =
    "2026-12-06 15:00:00\n"
    "Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode):\n\n"
    "\"HTTP-Dispatcher\" #14 prio=5 os_prio=0 cpu=1501.00ms elapsed=3.00s tid=0x00007f0000001000 "
    "nid=0x1a2b runnable  [0x00007f0000002000]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\tat SlowServer.spin(SlowServer.java:14)\n"
    "\tat SlowServer.lambda$main$0(SlowServer.java:24)\n"
    "\tat sun.net.httpserver.ServerImpl$Dispatcher.run(java.base@17.0.15/ServerImpl.java:404)\n"
    "\n"
    "\"worker\" #15 prio=5 os_prio=0 cpu=1.00ms elapsed=3.00s tid=0x00007f0000003000 "
    "nid=0x1a2c waiting on condition  [0x00007f0000004000]\n"
    "   java.lang.Thread.State: WAITING (parking)\n"
    "\tat SlowServer.spin(SlowServer.java:15)\n\n";

TEST(JvmPerfMapRequest, AJitFramesLineIsWhereTheDumpFoundItsThread) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kOk};
  jvm.dump_text = kDump;
  JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), NoSpacing());
  request.HangOpened(6699);
  ASSERT_TRUE(request.WaitForRequests(1, milliseconds(10000)));
  EXPECT_EQ(request.counts().dumps, 1u);
  std::string file;
  uint32_t line = 0;
  ASSERT_TRUE(request.FrameLine(6699, "long SlowServer.spin(long)", &file, &line));
  EXPECT_EQ(file, "SlowServer.java");
  EXPECT_EQ(line, 14u);
  ASSERT_TRUE(request.FrameLine(
      6699, "void SlowServer.lambda$main$0(com.sun.net.httpserver.HttpExchange)", &file, &line));
  EXPECT_EQ(line, 24u);
  EXPECT_FALSE(request.FrameLine(6699, "Interpreter", &file, &line)) << "not a method";
  EXPECT_FALSE(request.FrameLine(6699, "void Other.run()", &file, &line)) << "not in its stack";
  EXPECT_FALSE(request.FrameLine(6700, "long SlowServer.spin(long)", &file, &line))
      << "a thread in the dump that did not hang is not kept";
}

// A second hang of the thread, whose request waits for the spacing, has no line until its own
// dump: never the first hang's moment.
TEST(JvmPerfMapRequest, ALineIsFromADumpTakenAfterItsHangOpened) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kOk};
  jvm.dump_text = kDump;
  JvmPerfMapRequest::Options o;
  o.min_spacing = std::chrono::hours(1);
  JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), o);
  request.HangOpened(6699);
  ASSERT_TRUE(request.WaitForRequests(1, milliseconds(10000)));
  std::string file;
  uint32_t line = 0;
  EXPECT_TRUE(request.FrameLine(6699, "long SlowServer.spin(long)", &file, &line));
  request.HangOpened(6699);
  EXPECT_FALSE(request.FrameLine(6699, "long SlowServer.spin(long)", &file, &line));
}

TEST(JvmPerfMapRequest, ARefusedDumpIsSaidOnceAndNotAskedAgainWhileTheMapStillIs) {
  FakeJvm jvm;
  jvm.replies = {jvm::AttachStatus::kOk};
  jvm.dump_status = jvm::AttachStatus::kFailed;
  Notes notes;
  JvmPerfMapRequest request(jvm.Ask(), jvm.Dump(), jvm.Answered(), NoSpacing());
  request.set_note(notes.sink());
  for (uint64_t n = 1; n <= 2; ++n) {
    request.HangOpened(6699);
    ASSERT_TRUE(request.WaitForRequests(n, milliseconds(10000))) << n;
  }
  EXPECT_EQ(request.counts().answered, 2u) << "the map is still asked for";
  EXPECT_EQ(jvm.dumps.load(), 1);
  const std::vector<std::string> said = notes.said();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("have no lines"), std::string::npos) << said[0];
}

}  // namespace
}  // namespace hangwatch::agent
