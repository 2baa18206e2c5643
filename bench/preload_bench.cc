// The preload shim's cost on the call an event loop idles in: poll() with a zero timeout on a
// pipe with nothing to read, straight to libc (poll_plain) and through the shim's interposed
// poll on the main thread with the agent armed (poll_main: the loop's own wait, its call site
// learned as the loop's) and on another thread (poll_other), and a handler's poll on the main
// thread (poll_main_in_handler: another call site, deeper; the pass continues through it).
// Targets: <= 20 ns added on the main thread, <= 5 ns on other threads.
//
// The shim times every pass (two reads of the pass clock per wait, for the lag records);
// poll_main_untimed is the same shim with HANGWATCH_TIME_PASSES=0, measured in a child process
// of its own (an armed shim stays armed): the timed shim may add at most 25 ns over it.
//
// The shim is dlopen'ed (RTLD_LOCAL: this binary's own calls still go to libc) and its poll
// resolved with dlsym; it is looked for in $HANGWATCH_PRELOAD_LIB, else in the build tree next
// to bench/. Every benchmark times batches of polls on the thread under test and reports the
// time of one poll (manual time). A poll is a syscall of a few hundred ns whose cost drifts with
// the machine's load far more than the 5-20 ns measured here, so poll_main and poll_other also
// time a plain batch next to each shim batch, on the same thread, and report the mean
// difference per call (median over pairs) as the counter `added_ns`: the comparison that
// survives the drift.
#include <dlfcn.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

using PollFn = int (*)(struct pollfd*, nfds_t, int);
constexpr int kBatch = 100;
// Iterations are batches; a fixed count keeps a run short (1M polls of each kind).
constexpr int kIterations = 10000;

std::string ShimPath() {
  if (const char* env = std::getenv("HANGWATCH_PRELOAD_LIB"); env != nullptr && *env) return env;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  return dir + "/../integrations/preload/libhangwatch_preload.so";
}

PollFn ShimPoll() {
  static PollFn fn = [] {
    void* h = dlopen(ShimPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      std::fprintf(stderr, "preload_bench: %s\n", dlerror());
      return PollFn{nullptr};
    }
    return reinterpret_cast<PollFn>(dlsym(h, "poll"));
  }();
  return fn;
}

PollFn LibcPoll() {
  static PollFn volatile fn = &::poll;  // called through a pointer, like the shim's
  return fn;
}

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    if (pipe(fds) != 0) std::abort();
  }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
};

// kBatch polls; the nanoseconds they took. The shim learns the loop's wait from where it is
// called (integrations/preload/loop_wait_sites.h): LearnLoopWait() makes this call site the
// loop's, with the same poll timing out.
__attribute__((noinline)) double TimeBatch(PollFn fn, int fd, int timeout_ms = 0) {
  struct pollfd p = {fd, POLLIN, 0};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBatch; ++i) benchmark::DoNotOptimize(fn(&p, 1, timeout_ms));
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

// The same batch from another call site: on the main thread, once the loop's wait is learned
// (at TimeBatch's site, from a shallower frame), a handler's wait, which the pass continues
// through (no about_to_wait / woke_up).
__attribute__((noinline)) double TimeHandlerBatch(PollFn fn, int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBatch; ++i) benchmark::DoNotOptimize(fn(&p, 1, 0));
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

// Arms the shim (the main thread's first blocking wait) and has it learn TimeBatch's poll as
// the loop's wait: a batch of 1 ms polls on a pipe with nothing to read, each timing out.
void LearnLoopWait(PollFn shim, int fd) { TimeBatch(shim, fd, 1); }

struct Pair {
  double plain_ns = 0, shim_ns = 0;
};

// A plain batch and a shim batch (shim == nullptr: plain twice), in alternating order: the
// second of two back-to-back batches is measurably slower, a bias that alternation cancels.
Pair TimePair(PollFn shim, int fd, bool in_handler = false) {
  static thread_local bool plain_first = false;
  plain_first = !plain_first;
  PollFn other = shim != nullptr ? shim : LibcPoll();
  const auto shim_batch = [&] {
    return in_handler ? TimeHandlerBatch(other, fd) : TimeBatch(other, fd);
  };
  Pair p;
  if (plain_first) {
    p.plain_ns = TimeBatch(LibcPoll(), fd);
    p.shim_ns = shim_batch();
  } else {
    p.shim_ns = shim_batch();
    p.plain_ns = TimeBatch(LibcPoll(), fd);
  }
  return p;
}

// Runs pairs of batches on a thread that is not the main thread; the caller sleeps meanwhile
// (futex wait), leaving the CPU to it.
class OtherThread {
 public:
  OtherThread(PollFn shim, int fd) : shim_(shim), fd_(fd), thread_([this] { Loop(); }) {}
  ~OtherThread() {
    request_.store(-1);
    request_.notify_one();
    thread_.join();
  }
  Pair Run() {
    const int ticket = ++sent_;
    request_.store(ticket);
    request_.notify_one();
    done_.wait(ticket - 1);
    return result_;
  }

 private:
  void Loop() {
    int seen = 0;
    while (true) {
      request_.wait(seen);
      const int r = request_.load();
      if (r < 0) return;
      seen = r;
      result_ = TimePair(shim_, fd_);
      done_.store(r);
      done_.notify_one();
    }
  }
  PollFn shim_;
  int fd_;
  int sent_ = 0;
  Pair result_;
  std::atomic<int> request_{0}, done_{0};
  std::thread thread_;
};

// added_ns is the median of the per-pair differences: a batch preempted by another process
// (a few ms on a busy machine) would dominate a mean.
template <typename RunPair>
void Measure(benchmark::State& state, RunPair run, bool report_shim) {
  std::vector<double> added;
  added.reserve(kIterations);
  for (auto _ : state) {
    const Pair p = run();
    state.SetIterationTime((report_shim ? p.shim_ns : p.plain_ns) * 1e-9 / kBatch);
    added.push_back((p.shim_ns - p.plain_ns) / kBatch);
  }
  std::nth_element(added.begin(), added.begin() + added.size() / 2, added.end());
  state.counters["added_ns"] = added.empty() ? 0 : added[added.size() / 2];
}

void BM_PollPlain(benchmark::State& state) {
  Pipe pipe;
  Measure(
      state, [&] { return TimePair(nullptr, pipe.fds[0]); }, false);
}

// The baseline on another thread: plain against plain (added_ns is the method's noise).
void BM_PollPlainOther(benchmark::State& state) {
  Pipe pipe;
  OtherThread other(nullptr, pipe.fds[0]);
  Measure(
      state, [&] { return other.Run(); }, false);
}

// Also a pipe with a byte waiting (never read): each poll returns it ready, and the shim keeps
// which descriptor began the pass (integrations/preload/wake_trigger.h) where the idle pipe's
// poll keeps its time-out. Its added time per poll is the counter added_ready_ns, measured in
// pairs alternating with the idle ones.
void BM_PollMain(benchmark::State& state) {
  PollFn shim = ShimPoll();
  if (shim == nullptr) return state.SkipWithError("cannot load the shim");
  Pipe pipe, ready;
  if (write(ready.fds[1], "x", 1) != 1) return state.SkipWithError("write");
  LearnLoopWait(shim, pipe.fds[0]);  // arms the agent; TimeBatch's poll is the loop's wait
  std::vector<double> added_ready;
  added_ready.reserve(kIterations);
  Measure(
      state,
      [&] {
        const Pair r = TimePair(shim, ready.fds[0]);
        added_ready.push_back((r.shim_ns - r.plain_ns) / kBatch);
        return TimePair(shim, pipe.fds[0]);
      },
      true);
  std::nth_element(added_ready.begin(), added_ready.begin() + added_ready.size() / 2,
                   added_ready.end());
  state.counters["added_ready_ns"] = added_ready.empty() ? 0 : added_ready[added_ready.size() / 2];
}

// A poll of a handler on the main thread (TimeHandlerBatch's call site, deeper than the loop's
// learned wait): the pass continues through it.
void BM_PollMainInHandler(benchmark::State& state) {
  PollFn shim = ShimPoll();
  if (shim == nullptr) return state.SkipWithError("cannot load the shim");
  Pipe pipe;
  LearnLoopWait(shim, pipe.fds[0]);
  Measure(
      state, [&] { return TimePair(shim, pipe.fds[0], /*in_handler=*/true); }, true);
}

void BM_PollOther(benchmark::State& state) {
  PollFn shim = ShimPoll();
  if (shim == nullptr) return state.SkipWithError("cannot load the shim");
  Pipe pipe;
  OtherThread other(shim, pipe.fds[0]);
  Measure(
      state, [&] { return other.Run(); }, true);
}

// poll_main with HANGWATCH_TIME_PASSES=0. The shim this process loaded reads its settings once
// and may be armed already, so a child process loads a copy of it (another path: a
// second, independent instance, with its own copy of the agent library), untimed, arms it on
// its main thread, and sends back the pairs.
void BM_PollMainUntimed(benchmark::State& state) {
  const std::string dir = "/tmp/hangwatch_preload_bench." + std::to_string(getpid());
  const std::string copy = dir + "/libhangwatch_preload.so";
  // The loader loads the agent library from its own directory: the copy gets one beside it.
  const std::string shim = ShimPath();
  const std::string agent = shim.substr(0, shim.rfind('/') + 1) + "libhangwatch_preload_agent.so";
  const std::string cmd =
      "mkdir -p " + dir + " && cp '" + shim + "' " + copy + " && cp '" + agent + "' " + dir + "/";
  if (std::system(cmd.c_str()) != 0) {
    if (std::system(("rm -rf " + dir).c_str()) != 0)
      std::fprintf(stderr, "cannot remove %s\n", dir.c_str());
    return state.SkipWithError("cannot copy the shim and its agent library");
  }
  int fds[2];
  if (pipe(fds) != 0) return state.SkipWithError("pipe");
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    setenv("HANGWATCH_TIME_PASSES", "0", 1);
    void* h = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto shim = h != nullptr ? reinterpret_cast<PollFn>(dlsym(h, "poll")) : nullptr;
    if (shim == nullptr) _exit(1);
    Pipe pipe;
    LearnLoopWait(shim, pipe.fds[0]);  // arms the copy
    for (int i = 0; i < kIterations; ++i) {
      const Pair p = TimePair(shim, pipe.fds[0]);
      if (write(fds[1], &p, sizeof p) != static_cast<ssize_t>(sizeof p)) _exit(1);
    }
    _exit(0);
  }
  close(fds[1]);
  std::vector<Pair> pairs(kIterations);
  size_t got = 0;
  char* buf = reinterpret_cast<char*>(pairs.data());
  const size_t want = pairs.size() * sizeof(Pair);
  for (ssize_t n; got < want && (n = read(fds[0], buf + got, want - got)) > 0;) {
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (std::system(("rm -rf " + dir).c_str()) != 0)
    std::fprintf(stderr, "cannot remove %s\n", dir.c_str());
  if (got != want || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return state.SkipWithError("the child could not measure the untimed shim");
  }
  size_t i = 0;
  Measure(
      state, [&] { return pairs[i++]; }, true);
}

// poll_main runs last: once armed, the agent watches the main thread, and the framework's own
// work on it after the last shim call is one long run-loop pass, sampled as a hang, which would
// perturb whatever ran next.
BENCHMARK(BM_PollPlain)->Name("BM_Preload/poll_plain")->UseManualTime()->Iterations(kIterations);
BENCHMARK(BM_PollPlainOther)
    ->Name("BM_Preload/poll_plain_other")
    ->UseManualTime()
    ->Iterations(kIterations);
BENCHMARK(BM_PollOther)->Name("BM_Preload/poll_other")->UseManualTime()->Iterations(kIterations);
BENCHMARK(BM_PollMainUntimed)
    ->Name("BM_Preload/poll_main_untimed")
    ->UseManualTime()
    ->Iterations(kIterations);
BENCHMARK(BM_PollMainInHandler)
    ->Name("BM_Preload/poll_main_in_handler")
    ->UseManualTime()
    ->Iterations(kIterations);
BENCHMARK(BM_PollMain)->Name("BM_Preload/poll_main")->UseManualTime()->Iterations(kIterations);

}  // namespace

BENCHMARK_MAIN();
