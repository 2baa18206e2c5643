// `hangwatch snapshot PID` of a Python process, with its Python frames and without them
// (--no-python), side by side in one run: Debian's python3.11 running
// tests/python/frames_program.py 50 frames deep (`recurse 50`, asleep at the bottom).
//   BM_SnapshotPython/python: the command as a user runs it (fork + exec + everything: the
//     interpreter located, its layout checked, every thread's chain read inside the stop
//     window, names and lines resolved, JSON written);
//   BM_SnapshotPython/native: the same with --no-python.
// Time is the command's wall time; the counter stopped_us is how long the target was stopped
// (the snapshot's own `stopped_us`), averaged over the iterations. Run with
// --benchmark_repetitions=N --benchmark_enable_random_interleaving=true for medians.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr const char* kPython = "/usr/bin/python3.11";

// The Python process, started once for the whole run and killed at exit.
class PythonTarget {
 public:
  PythonTarget() {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      execl(kPython, kPython, FRAMES_PROGRAM, "recurse", "50", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // "ready TID IDENT\n" once the 50 frames are in place; the sleep follows at once.
    char line[128] = {};
    size_t n = 0;
    while (n + 1 < sizeof(line)) {
      const ssize_t got = read(out[0], line + n, 1);
      if (got <= 0 || line[n] == '\n') break;
      ++n;
    }
    close(out[0]);
    ready_ = std::string(line, n).rfind("ready ", 0) == 0;
    // Wait (bounded) until the main thread sleeps in time.sleep: stat's state is S.
    for (int i = 0; ready_ && i < 2000 && State() != 'S'; ++i) usleep(1000);
  }
  ~PythonTarget() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_ && State() == 'S'; }

 private:
  char State() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t paren = s.rfind(')');
    return paren != std::string::npos && paren + 2 < s.size() ? s[paren + 2] : '?';
  }
  pid_t pid_ = -1;
  bool ready_ = false;
};

PythonTarget& Target() {
  static PythonTarget t;  // killed at exit
  return t;
}

// Runs `hangwatch snapshot PID --json [--no-python]` with its output in `out`; its exit code.
int RunSnapshot(pid_t pid, bool python, const std::string& out) {
  const std::string pid_arg = std::to_string(pid);
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    if (python) {
      execl(HANGWATCH_CLI, HANGWATCH_CLI, "snapshot", pid_arg.c_str(), "--json",
            static_cast<char*>(nullptr));
    } else {
      execl(HANGWATCH_CLI, HANGWATCH_CLI, "snapshot", pid_arg.c_str(), "--json", "--no-python",
            static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The snapshot's "stopped_us" and how many Python frames it holds.
void ReadJson(const std::string& path, double* stopped_us, int* python_frames) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const size_t at = s.find("\"stopped_us\":");
  *stopped_us = at == std::string::npos ? -1 : std::atof(s.c_str() + at + 13);
  *python_frames = 0;
  for (size_t p = s.find("\"kind\":\"python\""); p != std::string::npos;
       p = s.find("\"kind\":\"python\"", p + 1)) {
    ++*python_frames;
  }
}

void BM_Snapshot(benchmark::State& state, bool python) {
  PythonTarget& target = Target();
  if (!target.ready()) {
    state.SkipWithError("python3.11 did not reach its 50-deep sleep");
    return;
  }
  const std::string out = "/tmp/snapshot_python_bench." + std::to_string(getpid()) + ".json";
  double stopped_sum = 0;
  int python_frames = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    if (RunSnapshot(target.pid(), python, out) != 0) {
      state.SkipWithError("hangwatch snapshot failed");
      break;
    }
    state.PauseTiming();
    double stopped = 0;
    ReadJson(out, &stopped, &python_frames);
    stopped_sum += stopped;
    ++runs;
    state.ResumeTiming();
  }
  unlink(out.c_str());
  if (runs == 0) return;
  if (!target.ready()) {
    state.SkipWithError("the Python process left its 50-deep sleep during the run");
    return;
  }
  // 51 with Python frames (recurse x 50 and <module>), 0 without: the two runs differ only there.
  if (python_frames != (python ? 51 : 0)) {
    state.SkipWithError("unexpected number of Python frames in the snapshot");
  }
  state.counters["stopped_us"] = stopped_sum / static_cast<double>(runs);
  state.counters["python_frames"] = python_frames;
}
BENCHMARK_CAPTURE(BM_Snapshot, python, true)
    ->Name("BM_SnapshotPython/python")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Snapshot, native, false)
    ->Name("BM_SnapshotPython/native")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
