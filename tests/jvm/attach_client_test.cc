// jvm/attach_client.h against real JVMs (OpenJDK 17's java): a thread dump through the attach
// listener started by the handshake (and not printed into the program's output), no signal to a
// JVM that would die of it (-Xrs) or print a dump (-XX:+DisableAttachMechanism, also from
// JAVA_TOOL_OPTIONS), a stopped JVM refused at once, and a listener that does not answer in
// time ends in a timeout within the bound; a listener at the JVM's path that is not the JVM is
// refused.
#include "jvm/attach_client.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "jvm/thread_dump.h"
#include "tests/jvm/java_child.h"

namespace hangwatch::jvm {
namespace {

using jvm_test::JavaChild;

class AttachClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jvm_test::HaveJava()) GTEST_SKIP() << "no java/javac";
    ASSERT_FALSE(jvm_test::JavaClasses().empty()) << "javac failed";
  }
};

TEST_F(AttachClientTest, ThreadDumpThroughTheHandshake) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const AttachReply r = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
  ASSERT_EQ(r.status, AttachStatus::kOk) << r.why;
  EXPECT_TRUE(r.signalled);
  const ThreadDump dump = ParseThreadDump(r.text);
  bool found = false;
  for (const JavaThread& t : dump.threads) {
    if (t.name != "main") continue;
    // A thread of the process (the launcher runs main in a thread of its own).
    EXPECT_EQ(
        access(("/proc/" + std::to_string(jvm.pid()) + "/task/" + std::to_string(t.nid)).c_str(),
               F_OK),
        0);
    ASSERT_GE(t.frames.size(), 2u);
    EXPECT_EQ(t.frames[0].method, "java.lang.Thread.sleep");
    EXPECT_TRUE(t.frames[0].native_method);
    EXPECT_EQ(t.frames[1].method, "Idle.idleLoop");
    EXPECT_EQ(t.frames[1].file, "Idle.java");
    EXPECT_EQ(t.frames[1].line, 5);
    found = true;
  }
  EXPECT_TRUE(found) << r.text;
  // The signal started the listener: no dump in the program's output, no trigger file left.
  EXPECT_EQ(jvm.Output(), "ready\n");
  EXPECT_NE(access((jvm.cwd() + "/.attach_pid" + std::to_string(jvm.pid())).c_str(), F_OK), 0);
  // The listener now runs: no second signal.
  const AttachReply again = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
  ASSERT_EQ(again.status, AttachStatus::kOk) << again.why;
  EXPECT_FALSE(again.signalled);
  // A command the JVM refuses: its own message.
  const AttachReply bad = RunAttachCommand(jvm.pid(), "jcmd", {"No.such_command"}, {});
  EXPECT_EQ(bad.status, AttachStatus::kFailed);
  EXPECT_NE(bad.why.find("status"), std::string::npos) << bad.why;
  EXPECT_TRUE(jvm.Alive());
}

// -Xrs: the JVM leaves SIGQUIT to its default action (the process would end) and, since no
// signal can start its attach listener, starts it at start-up: a dump without a signal. With
// the socket gone (a cleaned /tmp), no signal is sent.
TEST_F(AttachClientTest, NoSignalToAJvmRunWithXrs) {
  JavaChild jvm("Idle", {"-Xrs"});
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(jvm.pid(), &facts, &error)) << error;
  EXPECT_FALSE(facts.catches_sigquit);
  const std::string socket = AttachSocketPath(facts);
  for (int i = 0; i < 1000 && access(socket.c_str(), F_OK) != 0; ++i) jvm_test::SleepMs(5);
  const AttachReply r = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
  EXPECT_EQ(r.status, AttachStatus::kOk) << r.why;
  EXPECT_FALSE(r.signalled);
  ASSERT_EQ(unlink(socket.c_str()), 0);
  const AttachReply refused = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
  EXPECT_EQ(refused.status, AttachStatus::kRefused);
  EXPECT_FALSE(refused.signalled);
  EXPECT_NE(refused.why.find("-Xrs"), std::string::npos) << refused.why;
  EXPECT_TRUE(jvm.Alive());
}

TEST_F(AttachClientTest, NoSignalWhenAttachIsDisabled) {
  for (const bool by_variable : {false, true}) {
    SCOPED_TRACE(by_variable ? "JAVA_TOOL_OPTIONS" : "command line");
    JavaChild jvm("Idle",
                  by_variable ? std::vector<std::string>{}
                              : std::vector<std::string>{"-XX:+DisableAttachMechanism"},
                  by_variable ? std::vector<std::string>{"JAVA_TOOL_OPTIONS=-XX:+"
                                                         "DisableAttachMechanism"}
                              : std::vector<std::string>{});
    ASSERT_TRUE(jvm.ready()) << jvm.Output();
    const AttachReply r = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
    EXPECT_EQ(r.status, AttachStatus::kRefused);
    EXPECT_FALSE(r.signalled);
    EXPECT_NE(r.why.find(by_variable ? "in JAVA_TOOL_OPTIONS" : "in the command line"),
              std::string::npos)
        << r.why;
    EXPECT_TRUE(jvm.Alive());
    EXPECT_EQ(jvm.Output().find("Full thread dump"), std::string::npos);
    if (!by_variable) {
      // What the check spares the program: SIGQUIT prints a dump into its output.
      ASSERT_EQ(kill(jvm.pid(), SIGQUIT), 0);
      bool printed = false;
      for (int i = 0; i < 1000 && !printed; ++i) {
        printed = jvm.Output().find("Full thread dump") != std::string::npos;
        if (!printed) jvm_test::SleepMs(10);
      }
      EXPECT_TRUE(printed);
    }
  }
}

// A socket left at the JVM's path by an earlier process of the same pid, with no one listening:
// the handshake is made and the JVM's own socket replaces it.
TEST_F(AttachClientTest, StaleSocketIsReplaced) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(jvm.pid(), &facts, &error)) << error;
  const std::string path = AttachSocketPath(facts);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // the file stays; connecting to it is refused
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  const AttachReply r = RunAttachCommand(jvm.pid(), "threaddump", {}, {});
  EXPECT_EQ(r.status, AttachStatus::kOk) << r.why;
  EXPECT_TRUE(r.signalled);
  EXPECT_NE(r.text.find("Full thread dump"), std::string::npos);
  EXPECT_EQ(jvm.Output(), "ready\n");
  EXPECT_TRUE(jvm.Alive());
}

// A listener planted at the JVM's path by another process of the JVM's user (the socket file
// passes the owner and mode check): the client sees through SO_PEERCRED that the JVM does not
// serve it, sends nothing and does not signal the JVM.
TEST_F(AttachClientTest, PlantedListenerOfTheSameUserIsRefused) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(jvm.pid(), &facts, &error)) << error;
  ASSERT_EQ(facts.uid, geteuid()) << "the JVM runs as this test's user";
  const std::string path = AttachSocketPath(facts);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ASSERT_EQ(listen(fd, 4), 0);  // connections queue: connect() succeeds, no one answers
  AttachOptions options;
  options.timeout_ms = 1000;
  const AttachReply r = RunAttachCommand(jvm.pid(), "threaddump", {}, options);
  close(fd);
  unlink(path.c_str());
  EXPECT_EQ(r.status, AttachStatus::kRefused) << r.why;
  EXPECT_NE(r.why.find("not the JVM"), std::string::npos) << r.why;
  EXPECT_FALSE(r.signalled);
  EXPECT_EQ(jvm.Output(), "ready\n");
  EXPECT_TRUE(jvm.Alive());
}

TEST_F(AttachClientTest, StoppedJvm) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  ASSERT_EQ(kill(jvm.pid(), SIGSTOP), 0);
  ASSERT_TRUE(jvm.WaitForState('T'));
  // No listener yet: refused at once, no signal (it would wait for SIGCONT, and then print a
  // dump, the trigger file being gone).
  AttachOptions options;
  options.timeout_ms = 800;
  const AttachReply refused = RunAttachCommand(jvm.pid(), "threaddump", {}, options);
  EXPECT_EQ(refused.status, AttachStatus::kRefused);
  EXPECT_NE(refused.why.find("stopped"), std::string::npos) << refused.why;
  EXPECT_FALSE(refused.signalled);
  ASSERT_EQ(kill(jvm.pid(), SIGCONT), 0);
  // With its listener running, a stopped JVM accepts the connection but cannot answer.
  ASSERT_EQ(RunAttachCommand(jvm.pid(), "threaddump", {}, {}).status, AttachStatus::kOk);
  ASSERT_EQ(kill(jvm.pid(), SIGSTOP), 0);
  ASSERT_TRUE(jvm.WaitForState('T'));
  const auto start = std::chrono::steady_clock::now();
  const AttachReply late = RunAttachCommand(jvm.pid(), "threaddump", {}, options);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(late.status, AttachStatus::kTimeout) << late.why;
  EXPECT_NE(late.why.find("did not answer within 800 ms"), std::string::npos) << late.why;
  EXPECT_GE(took, std::chrono::milliseconds(700));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  ASSERT_EQ(kill(jvm.pid(), SIGCONT), 0);
  EXPECT_TRUE(jvm.Alive());
  EXPECT_EQ(jvm.Output(), "ready\n");
}

}  // namespace
}  // namespace hangwatch::jvm
