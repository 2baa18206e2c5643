// Symbolization benchmarks, hangwatch beside its peers in the same run.
//
// In process (always): one address per iteration, cycling over return addresses in this
// binary, libc and libstdc++, with the per-module tables warm:
//   Hangwatch_LookupInProcess       allocation-free view of the mangled name
//   Hangwatch_LookupInProcessDemangled
//   Hangwatch_SymbolizeInProcess    std::string API, including the loaded-libraries check
//   Dladdr                          glibc (exports only, linear in the symbols)
//   AbslSymbolize                   absl::Symbolize (demangled)
//   ElfSymbolTable_LibcDebugSymtab  loading the .symtab of libc's installed debug file (what
//                                   the agent pays once per process for libc's local names)
//   PerfMap_Refresh/N               reading a perf map of N lines (node --perf-basic-prof
//                                   writes ~10k at start-up), from scratch
//
// Offline (when HANGWATCH_BENCH_BIG=BINARY; bench/symbolize_peers.sh generates one with more
// than 80 MB of DWARF, its 10,000 addresses in BINARY.addrs and LLVM's GSYM in BINARY.gsym):
//   Offline_HangwatchIndex   lookups with inline chains from the index (built once)
//   Offline_LlvmGsym         llvm::gsym::GsymReader::lookup on the same addresses
//   Offline_IndexBuild       BuildSymbolIndex over the whole DWARF (one iteration)
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/debugging/symbolize.h"
#include "benchmark/benchmark.h"
#include "symbols/debug_file_locator.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/in_process_symbolizer.h"
#include "symbols/index/symbol_index.h"
#include "symbols/index/symbol_index_builder.h"
#include "symbols/module_map.h"
#include "symbols/perf_map.h"

#if HANGWATCH_HAVE_GSYM
#include "llvm/DebugInfo/GSYM/GsymReader.h"
#endif

namespace hangwatch::symbols {
namespace {

__attribute__((noinline)) int LocalFunction(int x) { return x * 3; }

// Return-address-like addresses: a few bytes into functions of several modules.
const std::vector<uintptr_t>& Addresses() {
  static const std::vector<uintptr_t> addrs = [] {
    std::vector<uintptr_t> v;
    for (const char* name : {"malloc", "free", "printf", "qsort", "strtol", "memcpy", "fopen",
                             "pthread_create", "nanosleep", "epoll_wait", "getenv", "_Znwm",
                             "_ZdlPv", "_ZSt9terminatev", "__cxa_throw", "_ZNSo5flushEv"}) {
      if (void* p = dlsym(RTLD_DEFAULT, name)) v.push_back(reinterpret_cast<uintptr_t>(p) + 9);
    }
    for (void* p :
         {reinterpret_cast<void*>(&LocalFunction), reinterpret_cast<void*>(&absl::Symbolize),
          reinterpret_cast<void*>(&benchmark::Shutdown),
          reinterpret_cast<void*>(&ModuleMap::Snapshot),
          reinterpret_cast<void*>(&BuildSymbolIndex)}) {
      v.push_back(reinterpret_cast<uintptr_t>(p) + 5);
    }
    return v;
  }();
  return addrs;
}

void BM_Hangwatch_LookupInProcess(benchmark::State& state) {
  auto map = CurrentModuleMap();
  WarmUpInProcessSymbolizer(*map);
  const auto& addrs = Addresses();
  size_t i = 0, found = 0;
  SymbolView view;
  for (auto _ : state) {
    found += LookupInProcess(*map, addrs[i], true, false, &view);
    benchmark::DoNotOptimize(view);
    if (++i == addrs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["found_pct"] = 100.0 * found / state.iterations();
}
BENCHMARK(BM_Hangwatch_LookupInProcess);

void BM_Hangwatch_LookupInProcessDemangled(benchmark::State& state) {
  auto map = CurrentModuleMap();
  WarmUpInProcessSymbolizer(*map);
  const auto& addrs = Addresses();
  size_t i = 0;
  SymbolView view;
  for (auto _ : state) {
    LookupInProcess(*map, addrs[i], true, true, &view);
    benchmark::DoNotOptimize(view);
    if (++i == addrs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Hangwatch_LookupInProcessDemangled);

void BM_Hangwatch_SymbolizeInProcess(benchmark::State& state) {
  WarmUpInProcessSymbolizer(*CurrentModuleMap());
  const auto& addrs = Addresses();
  size_t i = 0;
  SymbolInfo info;
  for (auto _ : state) {
    SymbolizeInProcess(addrs[i], true, &info);
    benchmark::DoNotOptimize(info);
    if (++i == addrs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Hangwatch_SymbolizeInProcess);

void BM_ElfSymbolTable_LibcDebugSymtab(benchmark::State& state) {
  std::string debug;
  for (const Module& m : CurrentModuleMap()->modules()) {
    if (m.path.find("/libc.so.6") != std::string::npos && !m.build_id.empty()) {
      DebugFileSearch search;
      debug = FindDebugFileByBuildId(m.build_id, &search);
    }
  }
  if (debug.empty()) return state.SkipWithError("no debug file for libc (libc6-dbg)");
  size_t symbols = 0;
  for (auto _ : state) {
    auto table = ElfSymbolTable::Load(debug);
    if (!table.ok()) return state.SkipWithError("cannot read the debug file");
    symbols = (*table)->size();
  }
  state.counters["symbols"] = static_cast<double>(symbols);
}
BENCHMARK(BM_ElfSymbolTable_LibcDebugSymtab)->Unit(benchmark::kMillisecond);

void BM_PerfMap_Refresh(benchmark::State& state) {
  const std::string path = "/tmp/hangwatch-bench-perf-" + std::to_string(getpid()) + ".map";
  {
    std::ofstream out(path);
    for (int64_t i = 0; i < state.range(0); ++i) {
      char line[128];
      std::snprintf(line, sizeof line,
                    "%llx %x LazyCompile:~handler%lld /srv/app/routes.js:%lld:3\n",
                    0x3a0000000000ull + static_cast<unsigned long long>(i) * 0x180, 0x120,
                    static_cast<long long>(i), static_cast<long long>(i % 900));
      out << line;
    }
  }
  for (auto _ : state) {
    PerfMap map(path);
    benchmark::DoNotOptimize(map.Refresh());
  }
  std::remove(path.c_str());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PerfMap_Refresh)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_Dladdr(benchmark::State& state) {
  const auto& addrs = Addresses();
  size_t i = 0, found = 0;
  Dl_info info;
  for (auto _ : state) {
    found += dladdr(reinterpret_cast<void*>(addrs[i] - 1), &info) != 0 && info.dli_sname;
    benchmark::DoNotOptimize(info);
    if (++i == addrs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["found_pct"] = 100.0 * found / state.iterations();
}
BENCHMARK(BM_Dladdr);

void BM_AbslSymbolize(benchmark::State& state) {
  const auto& addrs = Addresses();
  size_t i = 0, found = 0;
  char buf[1024];
  for (auto _ : state) {
    found += absl::Symbolize(reinterpret_cast<void*>(addrs[i] - 1), buf, sizeof(buf));
    benchmark::DoNotOptimize(buf);
    if (++i == addrs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["found_pct"] = 100.0 * found / state.iterations();
}
BENCHMARK(BM_AbslSymbolize);

// ------------------------------------------------------------------ offline

const char* BigBinary() {
  const char* p = std::getenv("HANGWATCH_BENCH_BIG");
  return p != nullptr && *p ? p : nullptr;
}

const std::vector<uint64_t>& BigAddresses() {
  static const std::vector<uint64_t> addrs = [] {
    std::vector<uint64_t> v;
    std::ifstream in(std::string(BigBinary()) + ".addrs");
    std::string line;
    while (std::getline(in, line)) v.push_back(std::strtoull(line.c_str(), nullptr, 0));
    return v;
  }();
  return addrs;
}

void BM_Offline_HangwatchIndex(benchmark::State& state) {
  if (BigBinary() == nullptr) return state.SkipWithError("set HANGWATCH_BENCH_BIG");
  static std::unique_ptr<SymbolIndex> index = [] {
    SymbolIndexOptions o;
    o.debug_path = o.symbols_path = BigBinary();
    auto bytes = BuildSymbolIndex(o);
    return bytes.ok() ? std::move(*SymbolIndex::FromBytes(std::move(*bytes))) : nullptr;
  }();
  if (index == nullptr) return state.SkipWithError("index build failed");
  const auto& addrs = BigAddresses();
  SymbolizedAddress out;
  size_t frames = 0;
  for (auto _ : state) {
    for (uint64_t a : addrs) {
      index->Lookup(a, &out);
      frames += out.frames.size();
    }
  }
  state.SetItemsProcessed(state.iterations() * addrs.size());
  state.counters["frames_per_addr"] =
      static_cast<double>(frames) / (state.iterations() * addrs.size());
}
BENCHMARK(BM_Offline_HangwatchIndex)->Unit(benchmark::kMillisecond);

#if HANGWATCH_HAVE_GSYM
void BM_Offline_LlvmGsym(benchmark::State& state) {
  if (BigBinary() == nullptr) return state.SkipWithError("set HANGWATCH_BENCH_BIG");
  auto reader = llvm::gsym::GsymReader::openFile(std::string(BigBinary()) + ".gsym");
  if (!reader) {
    llvm::consumeError(reader.takeError());
    return state.SkipWithError("no BINARY.gsym (llvm-gsymutil-14 --convert)");
  }
  const auto& addrs = BigAddresses();
  size_t frames = 0;
  for (auto _ : state) {
    for (uint64_t a : addrs) {
      auto r = reader->lookup(a);
      if (r) {
        frames += r->Locations.size();
      } else {
        llvm::consumeError(r.takeError());
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * addrs.size());
  state.counters["frames_per_addr"] =
      static_cast<double>(frames) / (state.iterations() * addrs.size());
}
BENCHMARK(BM_Offline_LlvmGsym)->Unit(benchmark::kMillisecond);
#endif

// Index build; second argument 1: DIEs read by libdw alone instead of our reader
// (symbols/dwarf_die_reader.h), to show what the hand-written reader buys.
void BM_Offline_IndexBuild(benchmark::State& state) {
  if (BigBinary() == nullptr) return state.SkipWithError("set HANGWATCH_BENCH_BIG");
  SymbolIndexStats stats;
  for (auto _ : state) {
    SymbolIndexOptions o;
    o.debug_path = o.symbols_path = BigBinary();
    o.threads = static_cast<int>(state.range(0));
    o.libdw_dies = state.range(1) != 0;
    auto bytes = BuildSymbolIndex(o, &stats);
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["dwarf_MB"] = stats.debug_bytes / 1e6;
  state.counters["index_MB"] = stats.index_bytes / 1e6;
  state.counters["index_pct_of_dwarf"] = 100.0 * stats.index_bytes / stats.debug_bytes;
  state.counters["units"] = static_cast<double>(stats.units);
}
BENCHMARK(BM_Offline_IndexBuild)
    ->ArgNames({"threads", "libdw"})
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hangwatch::symbols

int main(int argc, char** argv) {
  absl::InitializeSymbolizer(argv[0]);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
