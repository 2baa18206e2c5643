// Writes a synthetic JSON Lines report for the HTML report's tests and benchmark:
//
//   report_html_fixture HANGS [SEED] > report.jsonl
//
// Deterministic for one SEED. The hangs look like those of a server watched for a long time:
// five processes; a few dozen call paths (signatures) of which some hang much more often than
// others; stacks of 8 to 30 frames through an application binary, libstdc++ and libc, with
// files and lines for the application's frames; one sample every 10 to 50 ms, each with its
// scheduler state and CPU time; then 20 lag records (the five processes, on two hosts). Busy
// paths end in application code, blocked ones in libc's waits, and one path
// (Storage::flushSegment) is busy in some hangs and blocked in others, so that one signature
// groups both classes. One culprit has a 300-character name.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hangwatch/hang_record.h"
#include "report/report_record.h"
#include "report/stack_identity.h"

namespace {

using namespace hangwatch;

uint64_t state = 88172645463325252ull;
uint64_t Next() {  // xorshift64
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }

struct Fn {
  std::string module, build_id, symbol, file;
  uint64_t offset = 0;
  int line = 0;
};

const char* const kApp = "/srv/bin/demo-server";
const char* const kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
const char* const kLibstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
const char* const kNames[] = {"demo-server", "demo-worker", "demo-indexer", "demo-gateway",
                              "demo-cron"};

std::string BuildId(const std::string& module) {
  char buf[48];
  uint64_t h = 1469598103934665603ull;
  for (char c : module) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::snprintf(buf, sizeof buf, "%016llx%016llx%08x", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(h * 31), static_cast<unsigned>(h >> 7));
  return buf;
}

Fn AppFn(const std::string& symbol, const std::string& file) {
  Fn f{kApp,
       BuildId(kApp),
       symbol,
       file,
       0x10000 + Below(0x400000),
       20 + static_cast<int>(Below(900))};
  return f;
}

Fn LibFn(const char* module, const std::string& symbol) {
  return Fn{module, BuildId(module), symbol, "", 0x20000 + Below(0x100000), 0};
}

Frame ToFrame(const Fn& f, bool leaf) {
  Frame fr;
  fr.module = f.module;
  fr.build_id = f.build_id;
  fr.offset = f.offset + (leaf ? 0 : 5);
  fr.addr = 0x7f0000000000ull + fr.offset;
  fr.symbol = f.symbol;
  fr.file = f.file;
  fr.line = f.line;
  fr.method = leaf ? FrameMethod::kPc : FrameMethod::kFramePointer;
  return fr;
}

struct Path {
  std::vector<Fn> frames;  // outermost first
  bool busy = true;
  std::vector<Fn> leaves;  // innermost frames a sample may end in
};

std::vector<Path> MakePaths() {
  const char* const areas[] = {"Storage", "Query",       "Http", "Cache",
                               "Index",   "Replication", "Auth", "Metrics"};
  const char* const verbs[] = {"flush",   "parse",    "compact", "lookup", "serialize",
                               "rebuild", "validate", "merge",   "encode", "scan"};
  const char* const nouns[] = {"Segment", "Request",  "Batch",  "Page",
                               "Entry",   "Snapshot", "Header", "Manifest"};
  std::vector<Fn> pool;
  for (const char* a : areas) {
    for (const char* v : verbs) {
      const std::string noun = nouns[Below(8)];
      pool.push_back(AppFn(std::string("app::") + a + "::" + v + noun + "(int)",
                           std::string("/srv/src/") + a + "/" + v + "_" + noun + ".cc"));
    }
  }
  const std::vector<Fn> waits = {LibFn(kLibc, "__GI___poll"), LibFn(kLibc, "clock_nanosleep"),
                                 LibFn(kLibc, "__futex_abstimed_wait_common"),
                                 LibFn(kLibc, "__libc_pread64"), LibFn(kLibc, "fsync")};
  const Fn main_fn = AppFn("main", "/srv/src/main.cc");
  const Fn loop = AppFn("app::EventLoop::runOnce()", "/srv/src/event_loop.cc");
  const Fn start = LibFn(kLibc, "__libc_start_call_main");
  std::vector<Path> paths;
  for (int p = 0; p < 40; ++p) {
    Path path;
    path.frames = {start, main_fn, loop};
    const size_t depth = 3 + Below(18);
    for (size_t d = 0; d < depth; ++d) path.frames.push_back(pool[Below(pool.size())]);
    path.busy = p % 3 != 1;
    if (path.busy) {
      for (int k = 0; k < 3; ++k) path.leaves.push_back(pool[Below(pool.size())]);
      path.leaves.push_back(LibFn(kLibstdcxx, "std::_Rb_tree_increment(std::_Rb_tree_node_base*)"));
    } else {
      path.leaves.push_back(waits[Below(waits.size())]);
      path.leaves.push_back(waits[Below(waits.size())]);
    }
    paths.push_back(path);
  }
  // Path 0: the same functions, busy in some hangs and blocked in others.
  paths[0].frames.push_back(AppFn("app::Storage::flushSegment(int)", "/srv/src/Storage/flush.cc"));
  paths[0].leaves = {LibFn(kLibc, "__memmove_avx_unaligned_erms"),
                     LibFn(kLibstdcxx, "std::_Rb_tree_increment(std::_Rb_tree_node_base*)")};
  paths[1] = paths[0];
  paths[1].busy = false;
  paths[1].leaves = {waits[4]};
  // Path 2: a name too long for any box.
  std::string longname = "app::detail::Visitor<";
  while (longname.size() < 290) longname += "std::map<std::string, std::vector<int>>, ";
  paths[2].frames.push_back(AppFn(longname + "void>::visitAll()", "/srv/src/visitor.h"));
  paths[2].busy = true;  // in libstdc++ under it: the long name is the culprit
  paths[2].leaves = {LibFn(kLibstdcxx, "std::_Rb_tree_increment(std::_Rb_tree_node_base*)")};
  return paths;
}

HangRecord MakeHang(const std::vector<Path>& paths, uint64_t index, int64_t* clock_ms) {
  // Paths 0 and 1 are the most frequent; the others follow a long tail.
  const uint64_t r = Below(100);
  const size_t p = r < 12 ? 0 : r < 20 ? 1 : 2 + std::min<uint64_t>(Below(38), Below(38));
  const Path& path = paths[p];
  HangRecord h;
  const uint64_t proc = Below(5);
  static const char* const kNames[] = {"demo-server", "demo-worker", "demo-indexer", "demo-gateway",
                                       "demo-cron"};
  h.pid = 1000 + static_cast<int64_t>(proc) * 7;
  h.tid = h.pid;
  h.process = kApp;
  h.process_name = kNames[proc];
  h.host = proc < 3 ? "web-1" : "web-2";
  h.labels = {{"build", "17"}, {"region", proc < 3 ? "eu" : "us"}};
  h.hang_id = index;
  *clock_ms += 1000 + static_cast<int64_t>(Below(600000));
  h.start_unix_ms = *clock_ms;
  h.threshold_ms = 250;
  h.sample_interval_ms = 10 * static_cast<uint32_t>(1 + Below(5));
  h.duration_ms = 250 + Below(400) + (Below(10) == 0 ? Below(6000) : 0);
  h.hang_class = path.busy ? HangClass::kBusy : HangClass::kBlocked;
  // Stacks: the path ending in each of its leaves, some cut a few frames short.
  const size_t nstacks = 1 + Below(std::min<size_t>(path.leaves.size(), 4));
  for (size_t s = 0; s < nstacks; ++s) {
    Stack st;
    st.id = static_cast<int>(s);
    // Paths 0 and 1 keep every frame: all their stacks have the signature of both.
    const size_t keep = path.frames.size() - (s == 0 || p < 2 ? 0 : Below(3));
    st.frames.push_back(ToFrame(path.leaves[s], true));
    for (size_t k = keep; k-- > 0;) st.frames.push_back(ToFrame(path.frames[k], false));
    h.stacks.push_back(std::move(st));
  }
  const uint32_t first = h.threshold_ms / 2;
  const uint32_t n = std::min<uint32_t>(
      200, static_cast<uint32_t>((h.duration_ms - first) / h.sample_interval_ms + 1));
  for (uint32_t k = 0; k < n; ++k) {
    TimelineEntry e;
    e.t_ms = first + k * h.sample_interval_ms;
    // Mostly the first stack, in runs: a hang moves from one stack to the next.
    e.stack = static_cast<int>(std::min<uint64_t>(k * nstacks / n, nstacks - 1));
    if (Below(50) == 0) e.stack = -1;
    const bool running = path.busy ? Below(10) != 0 : Below(20) == 0;
    e.state = running ? 'R' : (Below(8) == 0 ? 'D' : 'S');
    e.cpu_us = running ? h.sample_interval_ms * 1000 - static_cast<uint32_t>(Below(500)) : 0;
    e.method = e.stack < 0 ? SampleMethod::kUnknown
               : running   ? SampleMethod::kSignal
                           : SampleMethod::kProc;
    if (e.stack >= 0) {
      Stack& st = h.stacks[static_cast<size_t>(e.stack)];
      if (st.count == 0) st.first_seen_ms = e.t_ms;
      st.last_seen_ms = e.t_ms;
      ++st.count;
      st.cpu_us += e.cpu_us;
      ++h.samples;
    } else {
      ++h.failed_samples;
    }
    h.cpu_ms += e.cpu_us / 1000;
    h.timeline.push_back(e);
  }
  // Stacks sorted by count (ids renumbered, timeline remapped).
  std::vector<size_t> order(h.stacks.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return h.stacks[a].count > h.stacks[b].count; });
  std::vector<Stack> sorted;
  std::vector<int> new_id(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    new_id[order[k]] = static_cast<int>(k);
    sorted.push_back(std::move(h.stacks[order[k]]));
    sorted.back().id = static_cast<int>(k);
  }
  h.stacks = std::move(sorted);
  for (TimelineEntry& e : h.timeline) {
    if (e.stack >= 0) e.stack = new_id[static_cast<size_t>(e.stack)];
  }
  while (!h.stacks.empty() && h.stacks.back().count == 0) h.stacks.pop_back();
  h.cpu_percent = static_cast<uint32_t>(std::min<uint64_t>(100, 100 * h.cpu_ms / h.duration_ms));
  h.dominant_stack = h.stacks.empty() ? -1 : 0;
  if (const Stack* d = h.dominant()) {
    h.culprit = report::FindCulprit(*d);
    h.signature = report::Signature(*d);
    h.fingerprint = report::Fingerprint(*d, d->frames[0].offset);
  }
  for (const char* m : {kApp, kLibc, kLibstdcxx}) {
    h.modules.push_back({m, 0x7f0000000000ull, BuildId(m)});
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: report_html_fixture HANGS [SEED] > report.jsonl\n");
    return 2;
  }
  const uint64_t hangs = std::strtoull(argv[1], nullptr, 10);
  if (argc == 3) state ^= std::strtoull(argv[2], nullptr, 10) * 0x9e3779b97f4a7c15ull;
  if (state == 0) state = 1;
  const std::vector<Path> paths = MakePaths();
  int64_t clock_ms = 1795400000000;
  for (uint64_t i = 0; i < hangs; ++i) {
    const std::string line = report::Encode(MakeHang(paths, i, &clock_ms)) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  // Lag records: per process, four intervals of a minute, each timing every pass (mostly
  // about a millisecond, a few tens of ms, one in a thousand a hang's length).
  for (int proc = 0; proc < 5; ++proc) {
    for (int interval = 0; interval < 4; ++interval) {
      report::Lag l;
      l.pid = 1000 + proc * 7;
      l.process_name = kNames[proc];
      l.host = proc < 3 ? "web-1" : "web-2";
      l.labels = {{"build", "17"}};
      l.start_unix_ms = 1795400000000 + interval * 60000;
      l.end_unix_ms = l.start_unix_ms + 60000;
      const uint64_t passes = 2000 + Below(3000);
      for (uint64_t k = 0; k < passes; ++k) {
        const uint64_t r = Below(1000);
        const uint64_t ns = r == 0   ? 300'000'000 + Below(2'000'000'000)
                            : r < 50 ? 10'000'000 + Below(40'000'000)
                                     : 200'000 + Below(1'500'000);
        l.passes.Add(ns);
      }
      const std::string line = report::Encode(l) + "\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
