// The agent's costs, side by side with their baselines:
//   BM_Heartbeat/baseline vs BM_Heartbeat/hangwatch: a run-loop pass without and with the
//     BeginWork()/EndWork() pair (target: <= 1.5 ns difference per pair: one load, one test
//     and one store each, the timed mode being a bit of the state word).
//   BM_Heartbeat/timed: the pair with Config::time_every_pass (target: <= 12 ns over baseline);
//     BM_Heartbeat/two_clock_reads: its floor, the two reads of the pass clock alone.
//   BM_Heartbeat/watched_thread: the pair on a thread watched through WatchThread() (its word
//     found through a thread-local pointer; target: <= 3 ns over baseline);
//     BM_Heartbeat/unwatched_thread: the pair on a thread nobody watches (a no-op).
//   BM_ScopedLabel/main: a hangwatch::ScopedLabel pushed and popped on the watched main thread
//     (hangwatch/context.h: a load, a store and a release store each way); target: a few ns
//     over baseline. BM_ScopedLabel/unwatched_thread: the same on a thread nobody watches (one
//     thread-local load: nothing measurable over baseline).
//   BM_Heartbeat/timed_queued: a timed pair whose pass had a queued time (SetPassSource's
//     queued_ns): the out-of-line end that counts it in the queued + running histogram.
//   BM_SetPassSource/main, /unwatched_thread: an adapter naming the pass's source (four stores
//     and a fence on the watched thread; one thread-local load elsewhere).
//   BM_ContextMemory/on, /off: what Start() allocates with Config::context and input on or off
//     (counters heap_bytes: malloc'd bytes in use after Start() minus before; rss_kb: the
//     resident set's growth) and the sizes of the words and scratch involved. Run each alone
//     (--benchmark_filter=BM_ContextMemory/on$), so that the process is fresh.
//   BM_StackTable/insert/N: interning an N-frame stack that is already known (the common case
//     during a hang: the same stack sample after sample); insert_new/N: a stack never seen.
//     Target for insert/64: <= 200 ns.
//   BM_ExitFlush/hangwatch: what an _exit() under the preload shim waits for the watchdog to
//     write its last records, at a 10-minute threshold (a two-minute check interval); target
//     <= 50 ms whatever the threshold. BM_ExitFlush/no_agent: the same call with nothing to ask.
//   BM_WatchdogIdle/<check interval ms>: the watchdog thread's own CPU time while the run loop
//   idles,
//     as counter cpu_pct (% of one core; target <= 0.1 %) over 2 s of wall time.
//   BM_WatchdogIdle/threads:N: the same at the default check interval with N idle threads
//     watched besides the main one (1, 8, 64 side by side: the cost must stay flat).
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/context/context_probe.h"
#include "agent/context/display_input.h"
#include "agent/core/exit_flush.h"
#include "agent/threads/thread_registry.h"
#include "hang/model/stack_table.h"
#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"

namespace {

using namespace std::chrono_literals;

// ---- heartbeat ----

// One "pass" of a trivial run loop: a counter bump the compiler must keep.
void BM_HeartbeatBaseline(benchmark::State& state) {
  uint64_t work = 0;
  for (auto _ : state) {
    work += 1;
    benchmark::DoNotOptimize(work);
  }
}
BENCHMARK(BM_HeartbeatBaseline)->Name("BM_Heartbeat/baseline");

// A pass with the agent running (the watchdog polls meanwhile); `timed`: with
// Config::time_every_pass, each pair also reads the pass clock twice and counts the pass in the
// lag histogram (target: <= 12 ns per pair over baseline).
void BM_HeartbeatAgent(benchmark::State& state, bool timed) {
  hangwatch::Config config;
  config.log_hangs = false;
  config.time_every_pass = timed;
  const bool started = hangwatch::Start(config).ok();
  uint64_t work = 0;
  for (auto _ : state) {
    hangwatch::BeginWork();
    work += 1;
    benchmark::DoNotOptimize(work);
    hangwatch::EndWork();
  }
  if (started) hangwatch::Stop();
  if (!started) state.SkipWithError("hangwatch::Start failed");
}
BENCHMARK_CAPTURE(BM_HeartbeatAgent, hangwatch, false)->Name("BM_Heartbeat/hangwatch");
BENCHMARK_CAPTURE(BM_HeartbeatAgent, timed, true)->Name("BM_Heartbeat/timed");

// A timed pass whose adapter says its work had waited (SetPassSource with a queued time, as
// GLib's and libuv's adapters do for a late timer): the pass's end goes out of line to count it
// in the lag records' queued + running histogram (a clock read, the ring's two stores). Beside
// BM_Heartbeat/timed and BM_SetPassSource/main: the difference is that path.
void BM_HeartbeatTimedQueued(benchmark::State& state) {
  hangwatch::Config config;
  config.log_hangs = false;
  config.time_every_pass = true;
  if (!hangwatch::Start(config).ok()) return state.SkipWithError("hangwatch::Start failed");
  uint64_t work = 0;
  for (auto _ : state) {
    hangwatch::BeginWork();
    hangwatch::SetPassSource("bench.timer", nullptr, 5'000'000);
    work += 1;
    benchmark::DoNotOptimize(work);
    hangwatch::EndWork();
  }
  hangwatch::Stop();
}
BENCHMARK(BM_HeartbeatTimedQueued)->Name("BM_Heartbeat/timed_queued");

// The pair on a thread other than the one that called Start(): the agent is started by a
// helper thread (its "main"), this thread watches itself with WatchThread(). `watch` false:
// it does not, and the pair does nothing.
void BM_HeartbeatOtherThread(benchmark::State& state, bool watch) {
  hangwatch::Config config;
  config.log_hangs = false;
  bool started = false;
  std::thread([&] { started = hangwatch::Start(config).ok(); }).join();
  if (!started) {
    state.SkipWithError("hangwatch::Start failed");
    return;
  }
  hangwatch::ThreadWatch w;
  if (watch) w = hangwatch::WatchThread("bench");
  if (watch && !w.watching()) state.SkipWithError("WatchThread did not watch");
  uint64_t work = 0;
  for (auto _ : state) {
    hangwatch::BeginWork();
    work += 1;
    benchmark::DoNotOptimize(work);
    hangwatch::EndWork();
  }
  w.Stop();
  hangwatch::Stop();
}
BENCHMARK_CAPTURE(BM_HeartbeatOtherThread, watched, true)->Name("BM_Heartbeat/watched_thread");
BENCHMARK_CAPTURE(BM_HeartbeatOtherThread, unwatched, false)->Name("BM_Heartbeat/unwatched_thread");

// The floor of any timed pass: the two clock reads alone (the pass clock the agent picked on
// this machine), without the histogram.
void BM_HeartbeatClockFloor(benchmark::State& state) {
  hangwatch::Config config;
  config.log_hangs = false;
  config.time_every_pass = true;
  const bool started = hangwatch::Start(config).ok();  // picks and calibrates the clock
  const uint32_t clock = hangwatch::internal::g_pass_timer.clock.load();
  if (started) hangwatch::Stop();
  uint64_t work = 0;
  for (auto _ : state) {
    work += hangwatch::internal::ReadPassClock(clock);
    work += hangwatch::internal::ReadPassClock(clock);
    benchmark::DoNotOptimize(work);
  }
  state.SetLabel(clock == hangwatch::internal::kPassClockCounter ? "cpu counter" : "clock_gettime");
}
BENCHMARK(BM_HeartbeatClockFloor)->Name("BM_Heartbeat/two_clock_reads");

// ---- hang context ----

// The calling thread as one nobody watches while it lives: its run-loop pointer is null (the
// process's first thread points at the main word from the start, so it is cleared here).
class UnwatchedHere {
 public:
  UnwatchedHere() : saved_(hangwatch::internal::t_run_loop_state) {
    hangwatch::internal::t_run_loop_state = nullptr;
  }
  ~UnwatchedHere() { hangwatch::internal::t_run_loop_state = saved_; }
  UnwatchedHere(const UnwatchedHere&) = delete;
  UnwatchedHere& operator=(const UnwatchedHere&) = delete;

 private:
  std::atomic<uint64_t>* saved_;
};

// A label pushed and popped per iteration, beside the loop body of BM_Heartbeat/baseline.
// `watched`: on the main thread with the agent started there (as BM_Heartbeat/hangwatch);
// otherwise on a thread nobody watches, the agent running all the same.
void BM_ScopedLabel(benchmark::State& state, bool watched) {
  hangwatch::Config config;
  config.log_hangs = false;
  const bool started = hangwatch::Start(config).ok();
  if (!started) return state.SkipWithError("hangwatch::Start failed");
  {
    std::optional<UnwatchedHere> unwatched;
    if (!watched) unwatched.emplace();
    uint64_t work = 0;
    for (auto _ : state) {
      hangwatch::ScopedLabel label("bench.label");
      work += 1;
      benchmark::DoNotOptimize(work);
    }
    if (watched && hangwatch::internal::g_main_loop.context.label_depth.load() != 0) {
      state.SkipWithError("unbalanced labels");
    }
  }
  hangwatch::Stop();
}
BENCHMARK_CAPTURE(BM_ScopedLabel, main, true)->Name("BM_ScopedLabel/main");
BENCHMARK_CAPTURE(BM_ScopedLabel, unwatched, false)->Name("BM_ScopedLabel/unwatched_thread");

void BenchSourceCallback() {}

// An adapter's SetPassSource() per iteration (a name and a callback), likewise.
void BM_SetPassSource(benchmark::State& state, bool watched) {
  hangwatch::Config config;
  config.log_hangs = false;
  const bool started = hangwatch::Start(config).ok();
  if (!started) return state.SkipWithError("hangwatch::Start failed");
  {
    std::optional<UnwatchedHere> unwatched;
    if (!watched) unwatched.emplace();
    const void* callback = reinterpret_cast<const void*>(&BenchSourceCallback);
    uint64_t work = 0;
    for (auto _ : state) {
      hangwatch::SetPassSource("bench.source", callback);
      work += 1;
      benchmark::DoNotOptimize(work);
    }
  }
  hangwatch::Stop();
}
BENCHMARK_CAPTURE(BM_SetPassSource, main, true)->Name("BM_SetPassSource/main");
BENCHMARK_CAPTURE(BM_SetPassSource, unwatched, false)->Name("BM_SetPassSource/unwatched_thread");

// Resident set size in KiB (/proc/self/statm), 0 if unreadable.
uint64_t ResidentKiB() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

// Heap bytes in use: malloc's arenas plus its own mmap()ed blocks.
uint64_t HeapBytesInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// What Start() takes with the context on or off; one iteration, meant for a fresh process.
void BM_ContextMemory(benchmark::State& state, bool context) {
  hangwatch::Config config;
  config.log_hangs = false;
  config.context = context;
  config.input = context;
  double heap = 0, rss = 0;
  for (auto _ : state) {
    const uint64_t heap0 = HeapBytesInUse();
    const uint64_t rss0 = ResidentKiB();
    if (!hangwatch::Start(config).ok()) return state.SkipWithError("hangwatch::Start failed");
    std::this_thread::sleep_for(100ms);  // the watchdog's first ticks
    heap = static_cast<double>(HeapBytesInUse()) - static_cast<double>(heap0);
    rss = static_cast<double>(ResidentKiB()) - static_cast<double>(rss0);
    hangwatch::Stop();
  }
  state.counters["heap_bytes"] = heap;
  state.counters["rss_kb"] = rss;
  state.counters["pass_context_bytes"] = sizeof(hangwatch::internal::PassContext);
  state.counters["thread_loop_bytes"] = sizeof(hangwatch::internal::ThreadLoop);
  state.counters["watched_slot_bytes"] = sizeof(hangwatch::agent::WatchedThreadSlot);
  // DisplayInput with its two buffers: the peek and the 4 KiB of directory entries.
  state.counters["display_input_bytes"] =
      sizeof(hangwatch::agent::DisplayInput) + hangwatch::agent::DisplayInput::kPeekBytes + 4096;
}
BENCHMARK_CAPTURE(BM_ContextMemory, on, true)
    ->Name("BM_ContextMemory/on")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContextMemory, off, false)
    ->Name("BM_ContextMemory/off")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ---- stack table ----

std::vector<uintptr_t> MakeStack(size_t depth, uintptr_t seed) {
  std::vector<uintptr_t> s(depth);
  for (size_t i = 0; i < depth; ++i) s[i] = 0x55d0c0a00000u + seed * 0x10000 + i * 0x40 + 7;
  return s;
}

void BM_StackTableInsert(benchmark::State& state) {
  const size_t depth = static_cast<size_t>(state.range(0));
  hangwatch::agent::StackTable table(64, depth);
  // A few stacks sharing their outer frames, as samples of one hang do.
  std::vector<std::vector<uintptr_t>> stacks;
  for (uintptr_t k = 0; k < 8; ++k) {
    stacks.push_back(MakeStack(depth, 1));
    stacks.back()[0] += k * 0x100;
  }
  for (const auto& s : stacks) table.Insert(s.data(), s.size(), s[0], 0, 0);
  size_t i = 0;
  for (auto _ : state) {
    const auto& s = stacks[i++ & 7];
    benchmark::DoNotOptimize(table.Insert(s.data(), s.size(), s[0], 1, 1));
  }
}
BENCHMARK(BM_StackTableInsert)->Name("BM_StackTable/insert")->Arg(16)->Arg(64)->Arg(256);

void BM_StackTableInsertNew(benchmark::State& state) {
  const size_t depth = static_cast<size_t>(state.range(0));
  constexpr size_t kCapacity = 1024;
  hangwatch::agent::StackTable table(kCapacity, depth);
  std::vector<std::vector<uintptr_t>> stacks;
  for (uintptr_t k = 0; k < kCapacity; ++k) stacks.push_back(MakeStack(depth, k));
  size_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity) {
      table.Clear();  // amortized: one small memset per 1024 inserts
      i = 0;
    }
    const auto& s = stacks[i++];
    benchmark::DoNotOptimize(table.Insert(s.data(), s.size(), s[0], 1, 1));
  }
}
BENCHMARK(BM_StackTableInsertNew)->Name("BM_StackTable/insert_new")->Arg(16)->Arg(64)->Arg(256);

// ---- watchdog idle cost ----

// CPU time (ns) of this process's thread named `comm`, from /proc/self/task/*/schedstat.
uint64_t ThreadCpuNsByName(const char* comm) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  uint64_t ns = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    std::ifstream c(base + "/comm");
    std::string name;
    std::getline(c, name);
    if (name != comm) continue;
    std::ifstream s(base + "/schedstat");
    s >> ns;
    break;
  }
  closedir(d);
  return ns;
}

void BM_WatchdogIdle(benchmark::State& state) {
  hangwatch::Config config;
  config.log_hangs = false;
  config.check_interval = std::chrono::milliseconds(state.range(0));
  if (!hangwatch::Start(config).ok()) {
    state.SkipWithError("hangwatch::Start failed");
    return;
  }
  std::this_thread::sleep_for(50ms);  // let the thread settle (name set, first tick done)
  double cpu_ns = 0, wall_ns = 0;
  for (auto _ : state) {
    const uint64_t c0 = ThreadCpuNsByName("hangwatch");
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(2s);  // an idle run loop
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t c1 = ThreadCpuNsByName("hangwatch");
    cpu_ns += static_cast<double>(c1 - c0);
    wall_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  hangwatch::Stop();
  state.counters["cpu_pct"] = 100.0 * cpu_ns / wall_ns;
  state.counters["cpu_us_per_s"] = 1e6 * cpu_ns / wall_ns;
}
BENCHMARK(BM_WatchdogIdle)
    ->Name("BM_WatchdogIdle")
    ->Arg(50)  // the default for the default 250 ms threshold
    ->Arg(25)
    ->Arg(10)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// N idle threads watched besides the main one, at the default threshold.
void BM_WatchdogIdleThreads(benchmark::State& state) {
  hangwatch::Config config;
  config.log_hangs = false;
  if (!hangwatch::Start(config).ok()) {
    state.SkipWithError("hangwatch::Start failed");
    return;
  }
  std::atomic<bool> done{false};
  std::atomic<int> watching{0};
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < state.range(0); ++i) {
    threads.emplace_back([&] {
      hangwatch::ThreadWatch w = hangwatch::WatchThread("idle");
      if (w.watching()) ++watching;
      while (!done.load()) std::this_thread::sleep_for(10ms);  // an idle loop: no pass
    });
  }
  while (watching.load() < state.range(0)) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(100ms);  // every thread adopted by the watchdog
  double cpu_ns = 0, wall_ns = 0;
  for (auto _ : state) {
    const uint64_t c0 = ThreadCpuNsByName("hangwatch");
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(2s);
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t c1 = ThreadCpuNsByName("hangwatch");
    cpu_ns += static_cast<double>(c1 - c0);
    wall_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  done = true;
  for (auto& t : threads) t.join();
  hangwatch::Stop();
  state.counters["cpu_pct"] = 100.0 * cpu_ns / wall_ns;
  state.counters["cpu_us_per_s"] = 1e6 * cpu_ns / wall_ns;
}
BENCHMARK(BM_WatchdogIdleThreads)
    ->Name("BM_WatchdogIdle/threads")
    ->Arg(0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// ---- exit flush ----

void BM_ExitFlush(benchmark::State& state, bool agent) {
  hangwatch::Config config;
  config.threshold = 600s;
  config.log_hangs = false;
  config.time_every_pass = true;
  for (auto _ : state) {
    if (agent && !hangwatch::Start(config).ok()) {
      state.SkipWithError("Start() failed");
      return;
    }
    hangwatch::BeginWork();
    hangwatch::EndWork();
    const auto begin = std::chrono::steady_clock::now();
    const bool answered = hangwatch::agent::FlushBeforeExit();
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - begin).count());
    if (agent) hangwatch::Stop();
    if (answered != agent) {
      state.SkipWithError("unexpected answer");
      return;
    }
  }
}
BENCHMARK_CAPTURE(BM_ExitFlush, hangwatch, true)
    ->Name("BM_ExitFlush/hangwatch")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExitFlush, no_agent, false)
    ->Name("BM_ExitFlush/no_agent")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
