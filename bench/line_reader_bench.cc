// How `hangwatch export` and `gate` read lines (tools/reader/line_reader.h) against the floors any
// reader pays: the same file read through a 1 MiB buffer counting newlines with memchr (no line
// handed out), and std::getline from an ifstream (a line copied into a string each time).
//   /short: 64 MiB of 2 KiB lines (hang records at the agent's defaults are 1-20 KiB);
//   /long:  64 MiB of 8 MiB lines (each assembled across eight reads: the case that was
//           quadratic, and that a reader of partial lines must not make so).
// Input generated once into a temporary directory. Bytes per second in each row's counters.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"

namespace {

constexpr size_t kFileBytes = 64u << 20;

const std::string& Dir() {
  static const std::string dir = [] {
    char t[] = "/tmp/hangwatch-line-bench.XXXXXX";
    return std::string(mkdtemp(t) ? t : "/tmp");
  }();
  return dir;
}

// A file of kFileBytes made of lines of `line_bytes` (newline included), made once.
std::string File(size_t line_bytes) {
  const std::string path = Dir() + "/lines-" + std::to_string(line_bytes);
  if (access(path.c_str(), R_OK) != 0) {
    std::string line(line_bytes - 1, 'x');
    line.push_back('\n');
    std::ofstream out(path, std::ios::binary);
    for (size_t n = 0; n < kFileBytes; n += line_bytes) out << line;
  }
  return path;
}

size_t LineBytes(const benchmark::State& state) {
  return state.range(0) == 0 ? size_t{2} << 10 : size_t{8} << 20;
}

void Label(benchmark::State& state, size_t lines) {
  state.SetLabel(state.range(0) == 0 ? "short" : "long");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileBytes));
  state.counters["lines"] = static_cast<double>(lines);
}

void BM_LineReader(benchmark::State& state) {
  const std::string path = File(LineBytes(state));
  size_t lines = 0;
  for (auto _ : state) {
    hangwatch::tools::InputFile file;
    std::string error;
    if (!file.Open(path, &error)) state.SkipWithError(error.c_str());
    hangwatch::tools::LineReader reader(file, 0);
    hangwatch::tools::Line line;
    lines = 0;
    size_t bytes = 0;
    while (reader.Next(&line)) {
      ++lines;
      bytes += line.text.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  Label(state, lines);
}

void BM_MemchrFloor(benchmark::State& state) {
  const std::string path = File(LineBytes(state));
  static char buf[1 << 20];
  size_t lines = 0;
  for (auto _ : state) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    lines = 0;
    off_t at = 0;
    for (ssize_t n; (n = pread(fd, buf, sizeof buf, at)) > 0; at += n) {
      for (const char* p = buf;
           (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(buf + n - p))));
           ++p) {
        ++lines;
      }
    }
    close(fd);
  }
  Label(state, lines);
}

void BM_GetlineFloor(benchmark::State& state) {
  const std::string path = File(LineBytes(state));
  size_t lines = 0;
  for (auto _ : state) {
    std::ifstream in(path, std::ios::binary);
    lines = 0;
    size_t bytes = 0;
    for (std::string line; std::getline(in, line);) {
      ++lines;
      bytes += line.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  Label(state, lines);
}

BENCHMARK(BM_LineReader)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemchrFloor)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GetlineFloor)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
