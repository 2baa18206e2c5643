// The cost of JavaScript frames (js/, agent/samplers/js_stacks.h), side by side in one run:
//  - BM_RunPausePerSample/js:1 vs /js:0: `hangwatch run -- node busy.js` (a 700 ms busy loop
//    20 JS frames deep, the real /usr/bin/node under the shim) with and without JS frames
//    (run --no-js: HANGWATCH_JS=0); the time reported is the watched thread's pause per sample
//    (monitor_pause_us / samples of the hang's record). The agent reads JS frames on the
//    watchdog after the capture, so the two should not differ.
//  - BM_WatchdogJsFrames: what the watchdog adds per sample: the JS frames found in one capture
//    of a busy node child (taken once with ptrace: registers, stack copy, frame-pointer walk)
//    and each named from a warm cache, as JsStacks::Merge does (its reads of another process
//    through process_vm_readv cost what the agent's reads of its own do). Counters: JS frames
//    per sample, and the name cache's bytes per name (the names of that sample).
//  - BM_LoadV8Metadata: the agent's one-time start in a node process (the metadata found and
//    read), against a node child.
// Skipped (an error) where /usr/bin/node is missing.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "js/frame_finder.h"
#include "js/function_resolver.h"
#include "js/heap_reader.h"
#include "js/memory_reader.h"
#include "js/v8_metadata.h"
#include "symbols/process_modules.h"
#include "unwind/frame_walker.h"
#include "unwind/ptrace_capture.h"

namespace {

constexpr char kNode[] = "/usr/bin/node";

// 20 frames of recursion, then a busy loop of `ms` (argv[2]); once, after 300 ms.
constexpr char kBusyScript[] =
    "function spin(ms) { const end = Date.now() + ms; let x = 0;\n"
    "  while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }\n"
    "function deep(n, ms) { return n === 0 ? spin(ms) : deep(n - 1, ms) + 1; }\n"
    "const ms = Number(process.argv[2]);\n"
    "setTimeout(function tick() { deep(20, ms); }, 300);\n";

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/hangwatch-js-bench-" +
         std::to_string(getpid()) + "-" + name;
}

std::string WriteScript() {
  const std::string path = TempPath("busy.js");
  std::ofstream(path) << kBusyScript;
  return path;
}

// The first integer after "\"key\":" in `text`, -1 when absent.
long long JsonNumber(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size() + 3);
}

int Run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void BM_RunPausePerSample(benchmark::State& state) {
  if (access(kNode, X_OK) != 0) {
    state.SkipWithError("/usr/bin/node is not installed");
    return;
  }
  const bool js = state.range(0) != 0;
  const std::string script = WriteScript();
  double samples = 0, js_frames = 0;
  for (auto _ : state) {
    const std::string report = TempPath("report.jsonl");
    std::remove(report.c_str());
    std::vector<std::string> argv = {HANGWATCH_CLI, "run",      "--quiet", "--threshold-ms",
                                     "200",         "--report", report};
    if (!js) argv.push_back("--no-js");  // HANGWATCH_JS=0 in the program's environment
    for (const char* a : {"--", kNode}) argv.push_back(a);
    argv.push_back(script);
    argv.push_back("700");
    Run(argv, {});
    std::ifstream in(report);
    std::stringstream text;
    text << in.rdbuf();
    const long long pause = JsonNumber(text.str(), "monitor_pause_us");
    const long long n = JsonNumber(text.str(), "samples");
    if (pause < 0 || n <= 0) {
      state.SkipWithError("no hang in the report");
      return;
    }
    state.SetIterationTime(static_cast<double>(pause) * 1e-6 / static_cast<double>(n));
    samples += static_cast<double>(n);
    size_t kinds = 0;
    for (size_t at = 0; (at = text.str().find("\"kind\":\"js\"", at)) != std::string::npos; ++at) {
      ++kinds;
    }
    js_frames += static_cast<double>(kinds);
    std::remove(report.c_str());
  }
  state.counters["samples"] = benchmark::Counter(samples, benchmark::Counter::kAvgIterations);
  state.counters["js_frames_in_report"] =
      benchmark::Counter(js_frames, benchmark::Counter::kAvgIterations);
  std::remove(script.c_str());
}
// One `hangwatch run` per repetition; the median of 7 is reported.
BENCHMARK(BM_RunPausePerSample)
    ->ArgName("js")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(1)
    ->Repetitions(7)
    ->ReportAggregatesOnly(true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_WatchdogJsFrames(benchmark::State& state) {
  using namespace hangwatch;
  if (access(kNode, X_OK) != 0) {
    state.SkipWithError("/usr/bin/node is not installed");
    return;
  }
  const std::string script = WriteScript();
  const pid_t child = fork();
  if (child == 0) {
    execl(kNode, kNode, script.c_str(), "60000", static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(1500 * 1000);  // the child's timer (300 ms) fired: it spins 20 frames deep
  unwind::PtraceSnapshot snapshot = unwind::CapturePtraceSnapshot(child);
  const unwind::PtraceThread* main = nullptr;
  for (const unwind::PtraceThread& t : snapshot.threads) {
    if (t.tid == child) main = &t;
  }
  auto modules = symbols::ReadProcessModules(child);
  js::ProcessMemoryReader memory(child);
  absl::StatusOr<js::V8Metadata> metadata = modules.ok()
                                                ? js::LoadV8Metadata(*modules, memory)
                                                : absl::StatusOr<js::V8Metadata>(modules.status());
  if (main == nullptr || !metadata.ok()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    state.SkipWithError("no capture of the node child, or no metadata");
    return;
  }
  constexpr size_t kMaxFrames = 256;
  uintptr_t pcs[kMaxFrames];
  const unwind::WalkResult walk =
      unwind::WalkFramePointers(main->stack_view(), main->regs, pcs, kMaxFrames);
  js::FrameFinder finder(*metadata, memory, kMaxFrames);
  js::HeapReader heap(*metadata, memory);
  js::FunctionResolver resolver(heap);
  js::JsFrame frames[kMaxFrames];
  // The cache Merge consults: by SharedFunctionInfo, filled before the timed loop.
  std::unordered_map<uint64_t, js::FunctionInfo> names;
  size_t found = finder.Find(pcs, walk.num_frames, main->stack_view(), frames);
  for (size_t i = 0; i < found; ++i) {
    js::FunctionInfo info;
    if (resolver.Resolve(frames[i].sfi, &info)) names[frames[i].sfi] = info;
  }
  size_t name_bytes = 0;
  for (const auto& [sfi, info] : names) {
    name_bytes += sizeof(sfi) + sizeof(info) + 2 * sizeof(void*) + info.name.capacity() +
                  info.script.capacity();
  }
  size_t named = 0;
  for (auto _ : state) {
    found = finder.Find(pcs, walk.num_frames, main->stack_view(), frames);
    for (size_t i = 0; i < found; ++i) named += names.count(frames[i].sfi);
    benchmark::DoNotOptimize(named);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::remove(script.c_str());
  state.counters["native_frames"] = static_cast<double>(walk.num_frames);
  state.counters["js_frames"] = static_cast<double>(found);
  state.counters["names"] = static_cast<double>(names.size());
  state.counters["bytes_per_name"] =
      names.empty() ? 0 : static_cast<double>(name_bytes) / static_cast<double>(names.size());
}
BENCHMARK(BM_WatchdogJsFrames)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

// What the agent does once at start in a node process (JsStacks::Create): the modules listed,
// the one exporting V8's metadata found (each module's dynamic symbols; node's static symbols
// for the builtins' range) and the constants read.
void BM_LoadV8Metadata(benchmark::State& state) {
  using namespace hangwatch;
  if (access(kNode, X_OK) != 0) {
    state.SkipWithError("/usr/bin/node is not installed");
    return;
  }
  const pid_t child = fork();
  if (child == 0) {
    execl(kNode, kNode, "-e", "setTimeout(() => {}, 60000)", static_cast<char*>(nullptr));
    _exit(127);
  }
  js::ProcessMemoryReader memory(child);
  // Until node has mapped its modules (its own executable at least), bounded.
  for (int i = 0; i < 500; ++i) {
    auto modules = symbols::ReadProcessModules(child);
    if (modules.ok() && js::LoadV8Metadata(*modules, memory).ok()) break;
    usleep(10 * 1000);
  }
  bool ok = true;
  for (auto _ : state) {
    auto modules = symbols::ReadProcessModules(child);
    ok = ok && modules.ok() && js::LoadV8Metadata(*modules, memory).ok();
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (!ok) state.SkipWithError("no metadata");
}
BENCHMARK(BM_LoadV8Metadata)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
