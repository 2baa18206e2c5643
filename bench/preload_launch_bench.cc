// What the preload shim costs a process that never waits for events: fork + execve of
// /bin/true, waited for, plainly (true_plain) and with the shim in LD_PRELOAD and the HANGWATCH_*
// settings `hangwatch run` passes on (tools/run/run_command.cc: the launch log among them, so the
// shim writes its "load" line), side by side (true_preload). Target: <= 0.2 ms per process more
// than the plain exec: under `run` every compiler and tool call of a build pays it.
//
// Each iteration runs one plain and one preloaded process, in alternating order (the second of
// two back-to-back runs is measurably slower on a busy machine, a bias the alternation cancels),
// and reports the time of one of the two (manual time). Counters: `plain_us` and `preload_us`,
// the medians of each kind, and `added_us`, the median over the iterations of (preloaded -
// plain): the comparison that survives the machine's drift.
//
// The shim is taken from $HANGWATCH_PRELOAD_LIB, else from the build tree next to bench/ (so an
// older build's shim can be measured by the same binary).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

extern "C" char** environ;

namespace {

constexpr char kProgram[] = "/bin/true";
constexpr int kIterations = 1000;

std::string ShimPath() {
  if (const char* env = std::getenv("HANGWATCH_PRELOAD_LIB"); env != nullptr && *env) return env;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  return dir + "/../integrations/preload/libhangwatch_preload.so";
}

// An environment: ours without LD_PRELOAD and HANGWATCH_*, plus `extra`. Kept as strings and
// as the pointer array execve takes.
class Environment {
 public:
  explicit Environment(const std::vector<std::string>& extra) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      if (kv.rfind("LD_PRELOAD=", 0) == 0 || kv.rfind("HANGWATCH_", 0) == 0) continue;
      strings_.push_back(kv);
    }
    strings_.insert(strings_.end(), extra.begin(), extra.end());
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char* const* get() const { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// Runs /bin/true with `env` and waits for it; the nanoseconds from fork to reaped. -1 when it
// could not run or did not exit with 0.
double TimeOneProcess(const Environment& env) {
  char* const argv[] = {const_cast<char*>(kProgram), nullptr};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    execve(kProgram, argv, env.get());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  const auto end = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::chrono::duration<double, std::nano>(end - start).count();
}

// A scratch directory for what the shim writes (the launch log; the report and open-hang
// directory it is told of stay untouched by a process that never waits), removed at the end.
struct RunDir {
  std::string path;
  RunDir() {
    char tmpl[] = "/tmp/hangwatch_launch_bench.XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~RunDir() {
    if (!path.empty() && std::system(("rm -rf '" + path + "'").c_str()) != 0) {
      std::fprintf(stderr, "cannot remove %s\n", path.c_str());
    }
  }
};

// What `hangwatch run` (run_command.cc, ChildEnvironment) sets for its command, --inherit
// included: under `run` the shim is passed on to every program.
std::vector<std::string> RunSettings(const std::string& shim, const RunDir& dir) {
  struct stat err_st {};
  std::string stderr_id;
  if (fstat(2, &err_st) == 0) {
    stderr_id = std::to_string(err_st.st_dev) + ":" + std::to_string(err_st.st_ino);
  }
  return {"LD_PRELOAD=" + shim,
          "HANGWATCH_THRESHOLD_MS=250",
          "HANGWATCH_REPORT=" + dir.path + "/report.jsonl",
          "HANGWATCH_OPEN_HANG_DIR=" + dir.path,
          "HANGWATCH_LAUNCH_LOG=" + dir.path + "/launch.log",
          "HANGWATCH_LOG=0",
          "HANGWATCH_STDERR=" + stderr_id,
          "HANGWATCH_STARTUP_STALL=1",
          "HANGWATCH_STARTUP_MS=2000",
          "HANGWATCH_INHERIT=1"};
}

double Median(std::vector<double>* v) {
  if (v->empty()) return 0;
  std::nth_element(v->begin(), v->begin() + v->size() / 2, v->end());
  return (*v)[v->size() / 2];
}

void Measure(benchmark::State& state, bool report_preload) {
  const std::string shim = ShimPath();
  if (access(shim.c_str(), R_OK) != 0) return state.SkipWithError("cannot find the shim");
  RunDir dir;
  if (dir.path.empty()) return state.SkipWithError("cannot create a scratch directory");
  const Environment plain({});
  const Environment preload(RunSettings(shim, dir));
  std::vector<double> added, plain_us, preload_us;
  added.reserve(kIterations);
  plain_us.reserve(kIterations);
  preload_us.reserve(kIterations);
  bool plain_first = false;
  for (auto _ : state) {
    plain_first = !plain_first;
    double plain_ns, preload_ns;
    if (plain_first) {
      plain_ns = TimeOneProcess(plain);
      preload_ns = TimeOneProcess(preload);
    } else {
      preload_ns = TimeOneProcess(preload);
      plain_ns = TimeOneProcess(plain);
    }
    if (plain_ns < 0 || preload_ns < 0) return state.SkipWithError("/bin/true failed");
    state.SetIterationTime((report_preload ? preload_ns : plain_ns) * 1e-9);
    added.push_back((preload_ns - plain_ns) / 1000);
    plain_us.push_back(plain_ns / 1000);
    preload_us.push_back(preload_ns / 1000);
  }
  state.counters["added_us"] = Median(&added);
  state.counters["plain_us"] = Median(&plain_us);
  state.counters["preload_us"] = Median(&preload_us);
  // The shim really was loaded and wrote its line: a benchmark of nothing would look cheap.
  if (report_preload && access((dir.path + "/launch.log").c_str(), F_OK) != 0) {
    state.SkipWithError("the preloaded processes wrote no launch log: was the shim loaded?");
  }
}

void BM_TruePlain(benchmark::State& state) { Measure(state, false); }
void BM_TruePreload(benchmark::State& state) { Measure(state, true); }

BENCHMARK(BM_TruePlain)->Name("BM_Launch/true_plain")->UseManualTime()->Iterations(kIterations);
BENCHMARK(BM_TruePreload)->Name("BM_Launch/true_preload")->UseManualTime()->Iterations(kIterations);

}  // namespace

BENCHMARK_MAIN();
