// `hangwatch run --threads loops` of a real JVM (OpenJDK 17): the JVM's launcher parks the main
// thread in pthread_join, so the process arms there (integrations/preload/main_thread_join.cc)
// and the JDK HTTP server's dispatcher thread, a loop in epoll_wait, is watched; a handler that
// computes on it is a hang of that thread, and the agent asks the JVM for its perf map when the
// hang opens (agent/samplers/jvm_perf_map_request.h), so the JIT-compiled method is the culprit
// by name, with the file and line of the JVM's thread dump, and the samples in it are one stack.
// `--no-java` asks nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/jvm/java_child.h"
#include "tests/loopback_http.h"

namespace hangwatch::jvm_test {
namespace {

// The hang records of thread `name` in the report so far.
std::vector<nlohmann::json> HangsOf(const std::string& report, const std::string& name) {
  std::vector<nlohmann::json> out;
  std::istringstream in(ReadFile(report));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "hang" && j.contains("thread") &&
        j["thread"].value("name", "") == name) {
      out.push_back(j);
    }
  }
  return out;
}

struct ServedRun {
  nlohmann::json hang;  // the first hang of HTTP-Dispatcher (null: none within the bound)
  std::string output;   // the program's and `hangwatch run`'s
  pid_t java = 0;
};

// Runs SlowServer under `hangwatch run --threads loops FLAGS`, asks for `query` ("ms=N": N ms of
// work, "nap=N": N ms asleep) until a
// hang of its dispatcher is recorded (its waits show a loop after a second of idling and a few
// requests: the hangs before are not its), then quits it and waits for `run` to end.
ServedRun RunSlowServer(const std::string& query, std::vector<std::string> flags) {
  ServedRun out;
  char dir[] = "/tmp/hangwatch-run-java-XXXXXX";
  if (mkdtemp(dir) == nullptr) return out;
  const std::string report = std::string(dir) + "/hangs.jsonl";
  std::vector<std::string> prefix = {HANGWATCH_CLI, "run",      "--threads",
                                     "loops",       "--report", report};
  prefix.insert(prefix.end(), flags.begin(), flags.end());
  prefix.push_back("--");
  {
    JavaChild run("SlowServer", {}, {}, prefix);
    EXPECT_TRUE(run.ready()) << run.Output();
    const std::string text = run.Output();
    const size_t at = text.find("port ");
    const int port = at == std::string::npos ? 0 : std::atoi(text.c_str() + at + 5);
    out.java = run.java_pid();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (port > 0 && out.hang.is_null() && std::chrono::steady_clock::now() < deadline) {
      if (testing::LoopbackGet(port, "/?" + query).empty()) break;
      // The record is written once the pass has ended, by the watchdog's next tick.
      for (int i = 0; i < 100 && out.hang.is_null(); ++i) {
        if (auto hangs = HangsOf(report, "HTTP-Dispatcher"); !hangs.empty())
          out.hang = hangs[0];
        else
          SleepMs(10);
      }
    }
    if (port > 0) testing::LoopbackGet(port, "/quit");
    for (int i = 0; i < 3000 && run.Alive(); ++i) SleepMs(10);
    out.output = run.Output();
  }
  std::system(("rm -rf " + std::string(dir)).c_str());
  return out;
}

std::string PerfMapOf(pid_t pid) { return "/tmp/perf-" + std::to_string(pid) + ".map"; }

// Whether JVM `pid`'s perf map was written at or after `since` (another JVM that had the same
// pid earlier, a docs example or another test, may have left one: pids wrap at 32768 here).
bool PerfMapWrittenSince(pid_t pid, time_t since) {
  struct stat st {};
  return stat(PerfMapOf(pid).c_str(), &st) == 0 && st.st_mtime >= since;
}

// The line of SlowServer.java that holds `text`, 0 when none.
int SlowServerLine(const std::string& text) {
  std::istringstream in(ReadFile(JAVA_SOURCES "/SlowServer.java"));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

TEST(RunJava, ALoopThreadOfAJvmIsWatchedAndItsCompiledMethodIsTheCulprit) {
  if (!HaveJava()) GTEST_SKIP() << "needs java and javac (openjdk-17-jdk-headless)";
  const time_t started = time(nullptr);
  const ServedRun run = RunSlowServer("ms=1200", {});
  ASSERT_FALSE(run.hang.is_null()) << run.output;
  EXPECT_EQ(run.hang["culprit"].value("symbol", ""), "long SlowServer.spin(long)") << run.hang;
  // Its file and line: where the JVM's thread dump, asked for with the map, found the thread
  // (spin's loop).
  EXPECT_EQ(run.hang["culprit"].value("file", ""), "SlowServer.java") << run.hang;
  EXPECT_GE(run.hang["culprit"].value("line", 0), SlowServerLine("long x = 0;")) << run.hang;
  EXPECT_LE(run.hang["culprit"].value("line", 0), SlowServerLine("for (int i = 0; i < 10_000"))
      << run.hang;
  // The samples taken once the map was read are one stack: their leaves start at the method.
  const int samples = run.hang.value("samples", 0);
  const auto& dominant = run.hang["stacks"][run.hang.value("dominant_stack", 0)];
  EXPECT_GE(dominant.value("count", 0) * 3, samples) << run.hang;
  EXPECT_EQ(dominant["frames"][0].value("symbol", ""), "long SlowServer.spin(long)") << run.hang;
  EXPECT_NE(run.output.find("thread HTTP-Dispatcher at long SlowServer.spin(long)"),
            std::string::npos)
      << run.output;
  // The JVM wrote it when asked, during the run.
  EXPECT_TRUE(PerfMapWrittenSince(run.java, started)) << "the JVM was not asked";
  unlink(PerfMapOf(run.java).c_str());
}

// A handler asleep in Java (Thread.sleep in SlowServer.nap): the walk of the native stack ends in
// libjvm's JVM_Sleep (a native method's wrapper has no unwind information). Below it come the
// Java frames of the JVM's thread dump (hang/model/java_callers.h), and the culprit is the
// method that slept, with its line, not libc's futex wait.
TEST(RunJava, AHandlerAsleepInJavaIsNamedByTheMethodThatSlept) {
  if (!HaveJava()) GTEST_SKIP() << "needs java and javac (openjdk-17-jdk-headless)";
  const ServedRun run = RunSlowServer("nap=1200", {});
  ASSERT_FALSE(run.hang.is_null()) << run.output;
  const int slept = SlowServerLine("Thread.sleep(ms);");
  const int called = SlowServerLine("nap(Long.parseLong");
  ASSERT_GT(slept, 0);
  EXPECT_EQ(run.hang["culprit"].value("kind", ""), "java") << run.hang;
  EXPECT_EQ(run.hang["culprit"].value("symbol", ""), "SlowServer.nap") << run.hang;
  EXPECT_EQ(run.hang["culprit"].value("file", ""), "SlowServer.java") << run.hang;
  EXPECT_EQ(run.hang["culprit"].value("line", 0), slept) << run.hang;
  EXPECT_EQ(run.hang.value("class", ""), "blocked") << run.hang;
  // The dominant stack: libjvm's JVM_Sleep, then the Java frames in one run from Thread.sleep
  // out to the thread's run(), in place of the interpreter's frames (cold code: the walk went
  // through them) or below the walk's end (compiled code), the handler's lambda at the line
  // that called nap.
  const auto& frames = run.hang["stacks"][run.hang.value("dominant_stack", 0)]["frames"];
  std::vector<std::string> java;
  size_t first = 0, last = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].value("kind", "") != "java") continue;
    if (java.empty()) first = i;
    last = i;
    java.push_back(frames[i].value("symbol", ""));
    if (java.back() == "SlowServer.lambda$main$1") {
      EXPECT_EQ(frames[i].value("line", 0), called);
    }
  }
  ASSERT_GT(first, 0u) << frames;
  EXPECT_EQ(frames[first - 1].value("symbol", ""), "JVM_Sleep") << frames;
  EXPECT_EQ(last - first + 1, java.size()) << "one run of Java frames: " << frames;
  ASSERT_GE(java.size(), 4u) << frames;
  EXPECT_EQ(java[0], "java.lang.Thread.sleep");
  EXPECT_EQ(java[1], "SlowServer.nap");
  EXPECT_EQ(java.back(), "java.lang.Thread.run");
  EXPECT_NE(run.output.find("thread HTTP-Dispatcher at SlowServer.nap (SlowServer.java:" +
                            std::to_string(slept) + ")"),
            std::string::npos)
      << run.output;
  unlink(PerfMapOf(run.java).c_str());
}

// A handler reading a socket whose peer never writes: the thread is asleep in poll under the
// JDK's libnio, read through /proc, and a stack scan goes from libnio's frame to the JVM's entry
// into Java (JavaCalls::call_helper), past the Java frames. The dump's frames go there, and the
// culprit is the program's method that read, not libc's poll or the JDK's socket code.
TEST(RunJava, AHandlerReadingASocketIsNamedByTheMethodThatRead) {
  if (!HaveJava()) GTEST_SKIP() << "needs java and javac (openjdk-17-jdk-headless)";
  const ServedRun run = RunSlowServer("read=1200", {});
  ASSERT_FALSE(run.hang.is_null()) << run.output;
  EXPECT_EQ(run.hang["culprit"].value("kind", ""), "java") << run.hang;
  EXPECT_EQ(run.hang["culprit"].value("symbol", ""), "SlowServer.await") << run.hang;
  EXPECT_EQ(run.hang["culprit"].value("line", 0),
            SlowServerLine("return socket.getInputStream().read();"))
      << run.hang;
  EXPECT_EQ(run.hang["cause"].value("kind", ""), "ipc") << run.hang;
  unlink(PerfMapOf(run.java).c_str());
}

// A Java program without a loop thread (its main() computes and returns): armed at the join,
// nothing watched, and `run` says so instead of a silent "no hangs".
TEST(RunJava, AJvmWithoutALoopThreadIsNotWatchedAndSaysWhy) {
  if (!HaveJava()) GTEST_SKIP() << "needs java and javac (openjdk-17-jdk-headless)";
  JavaChild run("Batch", {}, {},
                {HANGWATCH_CLI, "run", "--threads", "loops", "--fail-on-hang", "--"});
  for (int i = 0; i < 6000 && run.Alive(); ++i) SleepMs(10);
  ASSERT_FALSE(run.Alive()) << run.Output();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 4) << run.Output();
  EXPECT_NE(run.Output().find("hangwatch run: no process was watched: java never waited for "
                              "events: its main thread waited in pthread_join for another "
                              "thread, and none of the threads --threads selects ran an event "
                              "loop"),
            std::string::npos)
      << run.Output();
}

// A Swing program under xvfb-run: AWT's toolkit thread (AWT-XAWT, a poll loop on the X
// connection) is watched; main()'s thread and the event thread, which make many X round trips
// (polls without a time-out, each answered at once) and idle on Java monitors the shim does not
// see, are not taken for loops: no hang made of their idle time.
TEST(RunJava, ASwingProgramsToolkitThreadIsWatchedAndItsIdleThreadsHaveNoHang) {
  if (!HaveJava() || access("/usr/bin/xvfb-run", X_OK) != 0) {
    GTEST_SKIP() << "needs java, javac and xvfb-run";
  }
  char dir[] = "/tmp/hangwatch-run-swing-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string report = std::string(dir) + "/hangs.jsonl";
  std::string output;
  {
    JavaChild run("SwingIdle", {}, {},
                  {HANGWATCH_CLI, "run", "--threads", "loops", "--report", report, "--",
                   "/usr/bin/xvfb-run", "-a"});
    ASSERT_TRUE(run.ready()) << run.Output();
    for (int i = 0; i < 6000 && run.Alive(); ++i) SleepMs(10);
    ASSERT_FALSE(run.Alive()) << run.Output();
    output = run.Output();
  }
  EXPECT_NE(output.find("lag of thread AWT-XAWT"), std::string::npos) << output;
  EXPECT_NE(output.find("one that waits on a condition variable or a Java monitor (Swing's event "
                        "thread) is not"),
            std::string::npos)
      << output;
  std::istringstream in(ReadFile(report));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "hang") continue;
    const std::string thread = j.contains("thread") ? j["thread"].value("name", "") : "";
    EXPECT_NE(thread, "java") << "main()'s thread is no loop: " << line;
    EXPECT_LT(j.value("duration_ms", 0), 1000) << "idle time counted as a pass: " << line;
  }
  std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(RunJava, NoJavaAsksTheJvmNothing) {
  if (!HaveJava()) GTEST_SKIP() << "needs java and javac (openjdk-17-jdk-headless)";
  const ServedRun run = RunSlowServer("ms=600", {"--no-java"});
  ASSERT_FALSE(run.hang.is_null()) << run.output;
  struct stat st {};
  EXPECT_NE(stat(PerfMapOf(run.java).c_str(), &st), 0) << "the JVM was asked for its map";
  EXPECT_EQ(run.hang["culprit"].value("symbol", "").find("SlowServer"), std::string::npos)
      << run.hang;
  unlink(PerfMapOf(run.java).c_str());
}

}  // namespace
}  // namespace hangwatch::jvm_test
