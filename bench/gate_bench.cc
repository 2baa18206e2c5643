// `hangwatch gate` over a large report, side by side with the floor it cannot go below and the
// cost of decoding everything:
//   BM_Gate/read_floor: mapping the report and its baseline and finding their lines (memchr):
//     what any reader of the files pays;
//   BM_Gate/scan_floor, BM_Gate/scan_lines: the report's lines found in memory (memchr, what
//     `wc -l` does), and report::ScanLine on each (what top, the exporter and the gate pay per
//     line); HANGWATCH_BENCH_REPORT=FILE scans FILE instead;
//   BM_Gate/report_reader: reading and decoding both in full (ReadReportFile, as `hangwatch
//     report` does); the gate decodes only the longest hang of each signature
//     (tools/gate/gate_reader.h);
//   BM_Gate/gate: what the command does in-process: the baseline and allow file loaded, the
//     report read, symbolized offline, judged, and its text, JSON, JUnit and Markdown made;
//   BM_Gate/cli: the `hangwatch` binary itself (fork + exec + everything, output to files).
// Input, generated once into a temporary directory: 100,000 hangs over 1,000 signatures (one
// 8-frame stack and a 10-sample timeline each) and 10,000 lag records (40 non-empty buckets
// each) in the report; 50,000 hangs over 1,000 signatures, half of them the report's, in the
// baseline. The frames point into a module that is not on disk, so symbolization costs one
// failed lookup (symbols_bench measures lookups). Target: BM_Gate/gate <= 1 s.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "report/record_scan.h"
#include "report/report_record.h"
#include "tools/gate/gate_options.h"
#include "tools/gate/gate_output.h"
#include "tools/reader/report_reader.h"

namespace {

using namespace hangwatch;

constexpr int kHangs = 100000, kBaselineHangs = 50000, kSignatures = 1000, kLags = 10000;

std::string Hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

HangRecord MakeHang(int i, int signature) {
  HangRecord h;
  h.pid = 1000 + i / 100;
  h.tid = h.pid;
  h.process = "/opt/app/bin/server";
  h.process_name = "server";
  h.host = "ci-runner-3";
  h.hang_id = static_cast<uint64_t>(i % 100);
  h.start_unix_ms = 1763700000000 + i * 1000LL;
  h.duration_ms = 250 + static_cast<uint64_t>((i * 7919) % 2000);
  h.cpu_ms = h.duration_ms * 9 / 10;
  h.cpu_percent = 90;
  h.hang_class = HangClass::kBusy;
  h.threshold_ms = 250;
  h.sample_interval_ms = 25;
  h.samples = 10;
  h.fingerprint = Hex16(0xf00d0000u + static_cast<uint64_t>(signature));
  h.signature = Hex16(0x5160000000000000ull + static_cast<uint64_t>(signature) * 0x9e3779b1ull);
  const std::string app = "/opt/app/bin/server", libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  const std::string app_id = "8d1e4f0c2b3a59687766554433221100aabbccdd";
  Stack s;
  s.count = 10;
  s.last_seen_ms = 225;
  s.cpu_us = h.cpu_ms * 1000;
  const std::vector<std::pair<std::string, std::string>> frames = {
      {libc, "__memmove_avx_unaligned_erms"},
      {app, "app::Handler" + std::to_string(signature) + "::Process(app::Request const&)"},
      {app, "app::Router::Dispatch(app::Request const&)"},
      {app, "app::Connection::OnReadable()"},
      {app, "app::EventLoop::Run()"},
      {app, "main"},
      {libc, "__libc_start_call_main"},
      {libc, "__libc_start_main"}};
  uint64_t offset = 0x10000 + static_cast<uint64_t>(signature) * 0x100;
  for (const auto& [module, symbol] : frames) {
    Frame f;
    f.module = module;
    f.build_id = module == app ? app_id : "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
    f.offset = offset += 0x48;
    f.addr = (module == app ? 0x555500000000ull : 0x7f0000000000ull) + f.offset;
    f.symbol = symbol;
    f.method = FrameMethod::kFramePointer;
    s.frames.push_back(std::move(f));
  }
  h.stacks.push_back(std::move(s));
  h.dominant_stack = 0;
  for (uint32_t k = 0; k < 10; ++k) {
    h.timeline.push_back({k * 25, 0, 22500, 'R', SampleMethod::kSignal});
  }
  h.modules = {{app, 0x555500000000ull, app_id},
               {libc, 0x7f0000000000ull, "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"}};
  h.culprit.symbol = h.stacks[0].frames[1].symbol;
  h.culprit.module = app;
  h.culprit.offset = h.stacks[0].frames[1].offset;
  h.culprit.frame = 1;
  return h;
}

report::Lag MakeLag(int i) {
  report::Lag l;
  l.pid = 1000 + i / 10;
  l.process_name = "server";
  l.host = "ci-runner-3";
  l.start_unix_ms = 1763700000000 + i * 60000LL;
  l.end_unix_ms = l.start_unix_ms + 60000;
  // 40 distinct durations from 0.5 ms to about 60 ms.
  for (int k = 0; k < 40; ++k) {
    const uint64_t ns =
        500000 + static_cast<uint64_t>(k * k) * 37000 + static_cast<uint64_t>(i % 7);
    for (int n = 0; n < 40 - k; ++n) l.passes.Add(ns);
  }
  return l;
}

struct Inputs {
  std::string dir, report, baseline, allow;
  uintmax_t report_bytes = 0;
};

const Inputs& GetInputs() {
  static const Inputs inputs = [] {
    Inputs in;
    char t[] = "/tmp/hangwatch-gate-bench.XXXXXX";
    in.dir = mkdtemp(t) ? t : "/tmp";
    in.report = in.dir + "/report.jsonl";
    in.baseline = in.dir + "/baseline.jsonl";
    in.allow = in.dir + "/allow.txt";
    {
      std::ofstream out(in.report, std::ios::binary);
      for (int i = 0; i < kHangs; ++i) out << report::Encode(MakeHang(i, i % kSignatures)) << '\n';
      for (int i = 0; i < kLags; ++i) out << report::Encode(MakeLag(i)) << '\n';
    }
    {
      std::ofstream out(in.baseline, std::ios::binary);
      for (int i = 0; i < kBaselineHangs; ++i) {
        out << report::Encode(MakeHang(i, kSignatures / 2 + i % kSignatures)) << '\n';
      }
    }
    {
      std::ofstream out(in.allow, std::ios::binary);
      out << "app::Handler1?::Process* # handlers 10-19 are known to be slow\n";
    }
    std::ifstream f(in.report, std::ios::binary | std::ios::ate);
    in.report_bytes = static_cast<uintmax_t>(f.tellg());
    return in;
  }();
  return inputs;
}

void BM_ReadFloor(benchmark::State& state) {
  const Inputs& in = GetInputs();
  size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    for (const std::string& path : {in.report, in.baseline}) {
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st;
      fstat(fd, &st);
      const size_t size = static_cast<size_t>(st.st_size);
      void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      close(fd);
      const char* p = static_cast<const char*>(data);
      const char* e = p + size;
      while (p < e) {
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(e - p));
        if (nl == nullptr) break;
        p = static_cast<const char*>(nl) + 1;
        ++lines;
      }
      munmap(data, size);
    }
    benchmark::DoNotOptimize(lines);
  }
  state.counters["lines"] = static_cast<double>(lines);
}
BENCHMARK(BM_ReadFloor)->Name("BM_Gate/read_floor")->Unit(benchmark::kMillisecond);

// The report's bytes in memory, for the scanner's benchmarks: the generated report, or the file
// HANGWATCH_BENCH_REPORT names (e.g. bench/gen_hang_reports.py's, with 1-3 stacks of 8-32
// frames per hang and long timelines).
const std::string& ReportBytes() {
  static const std::string bytes = [] {
    const char* path = std::getenv("HANGWATCH_BENCH_REPORT");
    std::ifstream f(path != nullptr ? path : GetInputs().report.c_str(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }();
  return bytes;
}

// Calls fn on each line of text (memchr for the newlines, as `wc -l` finds them).
template <typename Fn>
size_t ForEachLine(std::string_view text, Fn&& fn) {
  size_t lines = 0;
  for (const char *p = text.data(), *e = p + text.size(); p < e; ++lines) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
    if (nl == nullptr) nl = e;
    fn(std::string_view(p, static_cast<size_t>(nl - p)));
    p = nl + 1;
  }
  return lines;
}

// The floor of the scanner: finding the lines of the report in memory.
void BM_ScanFloor(benchmark::State& state) {
  const std::string& bytes = ReportBytes();
  for (auto _ : state) benchmark::DoNotOptimize(ForEachLine(bytes, [](std::string_view) {}));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ScanFloor)->Name("BM_Gate/scan_floor")->Unit(benchmark::kMillisecond);

// report::ScanLine on each of those lines: what top, the exporter and the gate pay per line.
void BM_ScanLines(benchmark::State& state) {
  const std::string& bytes = ReportBytes();
  size_t hangs = 0;
  for (auto _ : state) {
    hangs = 0;
    ForEachLine(bytes, [&](std::string_view line) {
      report::ScannedLine scanned;
      hangs += report::ScanLine(line, &scanned) == report::LineKind::kHang;
    });
  }
  state.counters["hangs"] = static_cast<double>(hangs);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ScanLines)->Name("BM_Gate/scan_lines")->Unit(benchmark::kMillisecond);

void BM_DecodeFloor(benchmark::State& state) {
  const Inputs& in = GetInputs();
  for (auto _ : state) {
    tools::Report report, baseline;
    std::string error;
    if (!tools::ReadReportFile(in.report, &report, &error) ||
        !tools::ReadReportFile(in.baseline, &baseline, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    benchmark::DoNotOptimize(report.hangs.data());
  }
  state.counters["report_MB"] = static_cast<double>(in.report_bytes) / 1e6;
}
BENCHMARK(BM_DecodeFloor)->Name("BM_Gate/report_reader")->Unit(benchmark::kMillisecond);

void BM_Gate(benchmark::State& state) {
  const Inputs& in = GetInputs();
  tools::GateOptions options;
  options.baselines = {in.baseline};
  options.allow_path = in.allow;
  options.budgets.max_hang_ms = 2000;
  options.budgets.max_p99_ms = 50;
  options.budgets.max_slow_passes = {{2, 1000}};
  size_t new_hangs = 0, violations = 0, bytes = 0;
  for (auto _ : state) {
    tools::GateInputs inputs;
    tools::Report report;
    tools::GateVerdict verdict;
    std::vector<std::string> warnings;
    std::string error;
    tools::ReportSymbolizeOptions symbolize;
    symbolize.symbolizer.read_cache = symbolize.symbolizer.write_cache = false;
    if (!tools::LoadGateInputs(options, &inputs, &error) ||
        !tools::EvaluateGate({in.report}, options, inputs, &symbolize, &report, &verdict, &warnings,
                             &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    bytes = tools::FormatGateText(verdict, 50).size() + tools::FormatGateJson(verdict).size() +
            tools::FormatGateJunit(verdict, "bench", 1.0).size() +
            tools::FormatGateMarkdown(verdict).size();
    new_hangs = verdict.new_hangs.size();
    violations = verdict.violations.size();
  }
  state.counters["new_signatures"] = static_cast<double>(new_hangs);
  state.counters["violations"] = static_cast<double>(violations);
  state.counters["output_KB"] = static_cast<double>(bytes) / 1e3;
}
BENCHMARK(BM_Gate)->Name("BM_Gate/gate")->Unit(benchmark::kMillisecond);

void BM_GateCli(benchmark::State& state) {
  const Inputs& in = GetInputs();
  const std::string out = in.dir + "/out.json", junit = in.dir + "/junit.xml",
                    md = in.dir + "/summary.md";
  int status = 0;
  for (auto _ : state) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 2);
      execl(HANGWATCH_CLI, HANGWATCH_CLI, "gate", in.report.c_str(), "--baseline",
            in.baseline.c_str(), "--allow", in.allow.c_str(), "--max-hang-ms", "2000",
            "--max-p99-ms", "50", "--max-slow-passes", "50:1000", "--junit", junit.c_str(),
            "--markdown", md.c_str(), "--format", "json", "--no-cache",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(pid, &status, 0);
    unlink(md.c_str());
  }
  // 3: the gate fails (new hangs over 2 s); anything else is a broken run.
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) {
    state.SkipWithError("hangwatch gate did not exit with 3");
  }
}
BENCHMARK(BM_GateCli)->Name("BM_Gate/cli")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const Inputs& in = GetInputs();
  (void)!std::system(("rm -rf '" + in.dir + "'").c_str());
  return 0;
}
