// `hangwatch snapshot PID` of real JVMs (OpenJDK 17): Java frames with file:line in the native
// stacks, Java-level deadlocks (synchronized blocks, ReentrantLocks) in the wait-for output,
// --no-java, one line and the native snapshot when the JVM may not be signalled (-Xrs without a
// listener, -XX:+DisableAttachMechanism) or does not answer in time (stopped), libjvm.so's
// symbols cached after the first snapshot.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "jvm/attach_client.h"
#include "nlohmann/json.hpp"
#include "tests/jvm/java_child.h"

namespace hangwatch::jvm {
namespace {

using jvm_test::JavaChild;
using jvm_test::ReadFile;

struct SnapshotRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  std::chrono::milliseconds took{0};
};

// `hangwatch snapshot ARGS...` with `env` added, bounded by 60 s.
SnapshotRun Snapshot(const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {}) {
  char dir[] = "/tmp/hangwatch-jvm-snap-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {};
  const std::string out = std::string(dir) + "/out";
  const std::string err = std::string(dir) + "/err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    for (const std::string& e : env) putenv(strdup(e.c_str()));
    std::vector<std::string> all = {HANGWATCH_CLI, "snapshot"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    // Said in the test's failure (a CLI being relinked by a concurrent build is absent).
    std::fprintf(stderr, "cannot execute %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  SnapshotRun r;
  int status = 0;
  for (int i = 0; i < 6000; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    jvm_test::SleepMs(10);
  }
  if (r.exit_code == -1 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  system(("rm -rf " + std::string(dir)).c_str());
  return r;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The thread named `name` of a --json snapshot (null when absent).
nlohmann::json ThreadNamed(const nlohmann::json& snap, const std::string& name) {
  for (const nlohmann::json& t : snap["threads"]) {
    if (t["name"] == name) return t;
  }
  return nullptr;
}

class SnapshotJavaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jvm_test::HaveJava()) GTEST_SKIP() << "no java/javac";
    ASSERT_FALSE(jvm_test::JavaClasses().empty()) << "javac failed";
  }
};

// Each worker's Java frames at the blocked line, the deadlock of the two, in text and JSON.
void ExpectDeadlock(const std::string& main, const std::string& a, const std::string& b,
                    const std::string& lock_words, int line, const std::string& java_state) {
  JavaChild jvm(main);
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const std::string pid = std::to_string(jvm.pid());
  const SnapshotRun text = Snapshot({pid});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string frame =
      "java  " + main + ".lockBoth  " + main + ".java:" + std::to_string(line);
  EXPECT_EQ(Count(text.out, frame), 2u) << text.out;
  const size_t deadlock = text.out.find("DEADLOCK: deadlock of 2 threads: thread ");
  ASSERT_NE(deadlock, std::string::npos) << text.out << text.err;
  const std::string line_text = text.out.substr(deadlock, text.out.find('\n', deadlock) - deadlock);
  EXPECT_NE(line_text.find("\"" + a + "\" wants " + lock_words), std::string::npos) << line_text;
  EXPECT_NE(line_text.find("held by thread"), std::string::npos) << line_text;
  EXPECT_NE(line_text.find("\"" + b + "\""), std::string::npos) << line_text;
  EXPECT_NE(text.out.find("waiting for " + lock_words), std::string::npos);
  EXPECT_EQ(text.err.find("no Java frames"), std::string::npos) << text.err;
  EXPECT_NE(text.out.find(": Java frames from its thread dump"), std::string::npos);
  EXPECT_NE(text.out.find("  Java thread \"" + a + "\": " + java_state), std::string::npos)
      << text.out;

  const SnapshotRun json = Snapshot({pid, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json snap = nlohmann::json::parse(json.out);
  const nlohmann::json ta = ThreadNamed(snap, a);
  const nlohmann::json tb = ThreadNamed(snap, b);
  ASSERT_FALSE(ta.is_null()) << json.out;
  ASSERT_FALSE(tb.is_null()) << json.out;
  EXPECT_NE(snap.value("jvm", "").find("OpenJDK"), std::string::npos) << snap.value("jvm", "");
  EXPECT_EQ(ta["java"]["name"], a);
  EXPECT_EQ(ta["java"]["state"], java_state);
  EXPECT_EQ(ta["wait"]["lock"]["type"], "runtime") << ta["wait"].dump();
  EXPECT_EQ(ta["wait"]["lock"]["words"], lock_words);
  EXPECT_EQ(ta["wait"]["owner"], tb["tid"]);
  for (const nlohmann::json& t : {ta, tb}) {
    bool found = false;
    bool native_below = false;  // libjvm's frames stay with the Java ones
    for (const nlohmann::json& f : t["frames"]) {
      if (f.value("kind", "") == "java" && f["symbol"] == main + ".lockBoth") {
        EXPECT_EQ(f["file"], main + ".java");
        EXPECT_EQ(f["line"], line);
        EXPECT_FALSE(f.contains("code"));
        found = true;
      }
      native_below |= !found && f.value("module", "").find("libjvm.so") != std::string::npos;
    }
    EXPECT_TRUE(found) << t.dump();
    EXPECT_TRUE(native_below) << t.dump();
  }
  ASSERT_EQ(snap["deadlocks"].size(), 1u) << json.out;
  std::vector<int> cycle = snap["deadlocks"][0]["threads"];
  std::sort(cycle.begin(), cycle.end());
  std::vector<int> want = {ta["tid"].get<int>(), tb["tid"].get<int>()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(cycle, want);
  // The handshake started the listener: nothing printed into the program's output.
  EXPECT_EQ(jvm.Output(), "ready\n");
  EXPECT_TRUE(jvm.Alive());
}

TEST_F(SnapshotJavaTest, SynchronizedDeadlock) {
  ExpectDeadlock("SyncDeadlock", "worker-a", "worker-b", "Java monitor (a java.lang.Object)", 15,
                 "BLOCKED (on object monitor)");
}

TEST_F(SnapshotJavaTest, ReentrantLockDeadlock) {
  ExpectDeadlock("JucDeadlock", "juc-a", "juc-b",
                 "Java lock (a java.util.concurrent.locks.ReentrantLock$NonfairSync)", 15,
                 "WAITING (parking)");
}

TEST_F(SnapshotJavaTest, NoJavaAsksNothing) {
  JavaChild jvm("SyncDeadlock");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const SnapshotRun r = Snapshot({std::to_string(jvm.pid()), "--no-java"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("java  "), std::string::npos);
  EXPECT_EQ(r.out.find("DEADLOCK"), std::string::npos);
  EXPECT_NE(r.out.find("libjvm.so"), std::string::npos);
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(jvm.pid(), &facts, &error)) << error;
  EXPECT_NE(access(AttachSocketPath(facts).c_str(), F_OK), 0);  // never attached
}

// One line on stderr saying why, the native snapshot on stdout, the JVM alive and its output
// free of a thread dump.
void ExpectRefused(JavaChild& jvm, const std::string& why) {
  const SnapshotRun r = Snapshot({std::to_string(jvm.pid())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "no Java frames"), 1u) << r.err;
  EXPECT_NE(r.err.find("note: no Java frames: " + why), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("libjvm.so"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("java  "), std::string::npos);
  EXPECT_TRUE(jvm.Alive());
  EXPECT_EQ(jvm.Output(), "ready\n");
}

TEST_F(SnapshotJavaTest, XrsJvmGetsNoSignal) {
  JavaChild jvm("Idle", {"-Xrs"});
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(jvm.pid(), &facts, &error)) << error;
  const std::string socket = AttachSocketPath(facts);
  for (int i = 0; i < 1000 && access(socket.c_str(), F_OK) != 0; ++i) jvm_test::SleepMs(5);
  // Its listener, started at start-up, answers without a signal.
  const SnapshotRun ok = Snapshot({std::to_string(jvm.pid())});
  EXPECT_NE(ok.out.find("java  Idle.idleLoop  Idle.java:5"), std::string::npos) << ok.out;
  // Without it (a cleaned /tmp), a signal would end the process: none is sent.
  ASSERT_EQ(unlink(socket.c_str()), 0);
  ExpectRefused(jvm, "the JVM does not handle SIGQUIT (run with -Xrs?)");
}

TEST_F(SnapshotJavaTest, AttachMechanismDisabled) {
  JavaChild jvm("Idle", {"-XX:+DisableAttachMechanism"});
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  ExpectRefused(jvm,
                "the JVM's attach mechanism is off (-XX:+DisableAttachMechanism in the "
                "command line)");
}

TEST_F(SnapshotJavaTest, StoppedJvm) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const std::string pid = std::to_string(jvm.pid());
  ASSERT_EQ(kill(jvm.pid(), SIGSTOP), 0);
  ASSERT_TRUE(jvm.WaitForState('T'));
  // No listener: no signal, at once.
  SnapshotRun r = Snapshot({pid, "--java-timeout-ms", "500"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: no Java frames: the JVM is stopped (state T)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("libjvm.so"), std::string::npos) << r.out;
  EXPECT_EQ(jvm_test::ProcessState(jvm.pid()), 'T');  // left as it was
  // With its listener running (a first snapshot), a stopped JVM cannot answer: bounded.
  ASSERT_EQ(kill(jvm.pid(), SIGCONT), 0);
  r = Snapshot({pid});
  ASSERT_NE(r.out.find("java  Idle.idleLoop"), std::string::npos) << r.out << r.err;
  ASSERT_EQ(kill(jvm.pid(), SIGSTOP), 0);
  ASSERT_TRUE(jvm.WaitForState('T'));
  r = Snapshot({pid, "--java-timeout-ms", "500"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "no Java frames"), 1u) << r.err;
  EXPECT_NE(r.err.find("note: no Java frames: the JVM did not answer within 500 ms"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("libjvm.so"), std::string::npos) << r.out;
  EXPECT_LT(r.took, std::chrono::milliseconds(5000));
  ASSERT_EQ(kill(jvm.pid(), SIGCONT), 0);
  EXPECT_TRUE(jvm.Alive());
  EXPECT_EQ(jvm.Output(), "ready\n");
}

// A JVM in a pid namespace of its own (a container's): its dump's nids are that namespace's
// tids, matched to the threads here through their NSpid; the attach files are named with its
// pid in there.
TEST_F(SnapshotJavaTest, JvmInItsOwnPidNamespace) {
  if (system("unshare -p -f --mount-proc true 2>/dev/null") != 0) {
    GTEST_SKIP() << "cannot make a pid namespace here (unshare -p needs CAP_SYS_ADMIN)";
  }
  // No hsperfdata file: its name (/tmp/hsperfdata_USER/1) would be every such JVM's.
  JavaChild jvm("SyncDeadlock", {"-XX:-UsePerfData"}, {}, {"unshare", "-p", "-f", "--mount-proc"});
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const pid_t java = jvm.java_pid();
  ASSERT_NE(java, jvm.pid());
  JvmProcessFacts facts;
  std::string error;
  ASSERT_TRUE(ReadJvmProcessFacts(java, &facts, &error)) << error;
  ASSERT_EQ(facts.ns_pid, 1);
  const SnapshotRun r = Snapshot({std::to_string(java)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.out, "java  SyncDeadlock.lockBoth  SyncDeadlock.java:15"), 2u) << r.out;
  EXPECT_NE(r.out.find("DEADLOCK: deadlock of 2 threads"), std::string::npos) << r.out;
  EXPECT_EQ(jvm.Output(), "ready\n");
  unlink(AttachSocketPath(facts).c_str());  // /tmp/.java_pid1, shared with the host's /tmp
}

// A JVM in a user namespace of its own (rootless containers): it answers only its own user, and
// root outside maps to no one in there. One line says so; the native snapshot prints.
TEST_F(SnapshotJavaTest, JvmInAUserNamespaceRefusesRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (to run the JVM as another user)";
  const std::vector<std::string> prefix = {
      "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-U", "-r", "-p",
      "-f",      "--mount-proc"};
  std::string probe;
  for (const std::string& p : prefix) probe += p + " ";
  if (system((probe + "true 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "cannot make a user namespace as nobody here";
  }
  JavaChild jvm("Idle", {"-XX:-UsePerfData"}, {}, prefix);
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  const pid_t java = jvm.java_pid();
  ASSERT_NE(java, jvm.pid());
  const SnapshotRun r = Snapshot({std::to_string(java)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: no Java frames: the JVM closed the connection without an answer"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("libjvm.so"), std::string::npos);
  EXPECT_EQ(jvm.Output(), "ready\n");
  EXPECT_TRUE(jvm.Alive());
  unlink("/tmp/.java_pid1");  // the namespace's pid 1, in the host's /tmp
}

// libjvm.so has a large .symtab and no DWARF: its index is cached by the first snapshot, and
// --timings reports the Java part on a line of its own.
TEST_F(SnapshotJavaTest, LibjvmSymbolsCachedAndTimings) {
  JavaChild jvm("Idle");
  ASSERT_TRUE(jvm.ready()) << jvm.Output();
  char dir[] = "/tmp/hangwatch-jvm-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::string> env = {std::string("HANGWATCH_CACHE_DIR=") + dir};
  const SnapshotRun first = Snapshot({std::to_string(jvm.pid()), "--timings"}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string build_id = [] {
    FILE* p = popen(
        "readelf -n $(dirname $(readlink -f $(command -v java)))/../lib/server/"
        "libjvm.so | sed -n 's/.*Build ID: //p'",
        "r");
    char buf[128] = {};
    if (p != nullptr && fgets(buf, sizeof(buf), p) == nullptr) buf[0] = '\0';
    if (p != nullptr) pclose(p);
    std::string s = buf;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }();
  ASSERT_FALSE(build_id.empty());
  EXPECT_EQ(access((std::string(dir) + "/" + build_id + ".hwsym").c_str(), F_OK), 0)
      << "libjvm.so's index not cached";
  EXPECT_NE(first.err.find("java: thread dump "), std::string::npos) << first.err;
  EXPECT_NE(first.err.find(" java "), std::string::npos) << first.err;  // the phase
  const SnapshotRun second = Snapshot({std::to_string(jvm.pid()), "--timings"}, env);
  EXPECT_NE(second.err.find("no signal"), std::string::npos) << second.err;
  system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace hangwatch::jvm
