// `hangwatch snapshot PID` of a JVM (OpenJDK 17 running tests/jvm/data/SyncDeadlock.java: two
// threads deadlocked, ~20 threads in all), its native part and its Java part apart:
//   BM_SnapshotJvm/native_first: --no-java with an empty symbol cache each time (libjvm.so's
//     57,000-function symbol table indexed: what every snapshot paid before the index of a
//     binary without DWARF was cached);
//   BM_SnapshotJvm/native_cached: --no-java, the cache warm (every snapshot after the first);
//   BM_SnapshotJvm/with_java: the whole command, cache warm, the JVM's listener running;
//   BM_JavaThreadDump: the Java part alone, in process: jvm::RunAttachCommand("threaddump")
//     (connect, the JVM's safepoint and dump) and jvm::ParseThreadDump;
//   BM_JavaPerfMap: what the agent asks when a hang opens, `jcmd Compiler.perfmap` (connect, the
//     JVM writing its perf map), beside the thread dump; map_kb: the map's size.
// The snapshot's times are the command's wall time (fork + exec included); counters from its
// --timings: symbols_ms (the symbols phase's wall time), cpu_ms (all phases' CPU), java_ms (the
// java phase's wall time). Run with --benchmark_repetitions=N for medians.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jvm/attach_client.h"
#include "jvm/thread_dump.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string TempDir(const char* what) {
  std::string t = std::string("/tmp/jvm_snapshot_bench_") + what + "_XXXXXX";
  return mkdtemp(t.data()) != nullptr ? t : std::string();
}

// The JVM, started once for the whole run (classes compiled first) and killed at exit.
class Jvm {
 public:
  Jvm() {
    classes_ = TempDir("classes");
    if (classes_.empty()) return;
    if (system(("javac -d " + classes_ + " " JAVA_SOURCES "/SyncDeadlock.java").c_str()) != 0) {
      return;
    }
    out_ = classes_ + "/out.txt";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      if (chdir(classes_.c_str()) != 0) _exit(126);
      execlp("java", "java", "-cp", classes_.c_str(), "SyncDeadlock", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 6000 && ReadFile(out_).find("ready\n") == std::string::npos; ++i) {
      usleep(10000);
    }
    ready_ = ReadFile(out_).find("ready\n") != std::string::npos;
  }
  ~Jvm() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      unlink(("/tmp/.java_pid" + std::to_string(pid_)).c_str());  // left by a killed JVM
    }
    if (!classes_.empty()) system(("rm -rf " + classes_).c_str());
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_ && kill(pid_, 0) == 0; }

 private:
  std::string classes_;
  std::string out_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

Jvm& Target() {
  static Jvm jvm;
  return jvm;
}

// `hangwatch snapshot PID --timings ARGS` with HANGWATCH_CACHE_DIR=cache; its stderr.
bool RunSnapshot(pid_t pid, const std::vector<std::string>& extra, const std::string& cache,
                 std::string* err) {
  const std::string err_path = cache + ".err";
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(e, 2);
    setenv("HANGWATCH_CACHE_DIR", cache.c_str(), 1);
    std::vector<std::string> args = {HANGWATCH_CLI, "snapshot", std::to_string(pid), "--timings"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  *err = ReadFile(err_path);
  unlink(err_path.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A phase's wall ms from the --timings line ("symbols 0.5/0.6/135": 0.6), or total-cpu's value.
double Phase(const std::string& err, const std::string& name, bool wall) {
  const size_t at = err.find(" " + name + " ");
  if (at == std::string::npos) return -1;
  const char* p = err.c_str() + at + name.size() + 2;
  if (!wall) return std::atof(p);
  const char* slash = std::strchr(p, '/');
  return slash != nullptr ? std::atof(slash + 1) : -1;
}

enum class Mode { kNativeFirst, kNativeCached, kWithJava };

void BM_SnapshotJvm(benchmark::State& state, Mode mode) {
  Jvm& jvm = Target();
  if (!jvm.ready()) {
    state.SkipWithError("the JVM did not start (java, javac)");
    return;
  }
  const std::string warm = TempDir("cache");
  std::string err;
  RunSnapshot(jvm.pid(), {}, warm, &err);  // warms the cache, starts the listener
  double symbols = 0;
  double cpu = 0;
  double java = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    std::string cache = warm;
    if (mode == Mode::kNativeFirst) {
      state.PauseTiming();
      cache = TempDir("cold");
      state.ResumeTiming();
    }
    std::vector<std::string> extra;
    if (mode != Mode::kWithJava) extra.push_back("--no-java");
    const bool ok = RunSnapshot(jvm.pid(), extra, cache, &err);
    state.PauseTiming();
    if (mode == Mode::kNativeFirst) system(("rm -rf " + cache).c_str());
    if (!ok || (mode == Mode::kWithJava && err.find("java: thread dump") == std::string::npos)) {
      state.SkipWithError(("snapshot failed: " + err).c_str());
      break;
    }
    symbols += Phase(err, "symbols", true);
    cpu += Phase(err, "total-cpu", false);
    if (mode == Mode::kWithJava) java += Phase(err, "java", true);
    ++runs;
    state.ResumeTiming();
  }
  system(("rm -rf " + warm).c_str());
  if (runs == 0) return;
  state.counters["symbols_ms"] = symbols / static_cast<double>(runs);
  state.counters["cpu_ms"] = cpu / static_cast<double>(runs);
  if (mode == Mode::kWithJava) state.counters["java_ms"] = java / static_cast<double>(runs);
}
BENCHMARK_CAPTURE(BM_SnapshotJvm, native_first, Mode::kNativeFirst)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SnapshotJvm, native_cached, Mode::kNativeCached)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SnapshotJvm, with_java, Mode::kWithJava)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_JavaThreadDump(benchmark::State& state) {
  Jvm& jvm = Target();
  if (!jvm.ready()) {
    state.SkipWithError("the JVM did not start (java, javac)");
    return;
  }
  size_t threads = 0;
  for (auto _ : state) {
    const hangwatch::jvm::AttachReply r =
        hangwatch::jvm::RunAttachCommand(jvm.pid(), "threaddump", {}, {});
    if (r.status != hangwatch::jvm::AttachStatus::kOk) {
      state.SkipWithError(r.why.c_str());
      break;
    }
    threads = hangwatch::jvm::ParseThreadDump(r.text).threads.size();
  }
  state.counters["threads"] = static_cast<double>(threads);
}
BENCHMARK(BM_JavaThreadDump)->Unit(benchmark::kMillisecond)->UseRealTime();

// What the agent asks a JVM when a hang opens (agent/samplers/jvm_perf_map_request.h), beside
// the thread dump above: `Compiler.perfmap`, the JVM writing /tmp/perf-PID.map (no safepoint),
// and the map's size.
void BM_JavaPerfMap(benchmark::State& state) {
  Jvm& jvm = Target();
  if (!jvm.ready()) {
    state.SkipWithError("the JVM did not start (java, javac)");
    return;
  }
  for (auto _ : state) {
    const hangwatch::jvm::AttachReply r =
        hangwatch::jvm::RunAttachCommand(jvm.pid(), "jcmd", {"Compiler.perfmap"}, {});
    if (r.status != hangwatch::jvm::AttachStatus::kOk) {
      state.SkipWithError(r.why.c_str());
      break;
    }
  }
  const std::string map = "/tmp/perf-" + std::to_string(jvm.pid()) + ".map";
  state.counters["map_kb"] = static_cast<double>(ReadFile(map).size()) / 1024.0;
  unlink(map.c_str());
}
BENCHMARK(BM_JavaPerfMap)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
