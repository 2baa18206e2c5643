// `hangwatch snapshot PID [--json]`: every thread of another process — name, scheduler state,
// CPU time, the top frame's registers and its symbolized stack — like macOS's stackshot,
// eu-stack or gdb's `thread apply all bt`.
//
// The target is stopped only while registers and stack slices are copied
// (unwind/ptrace_capture.h); unwinding (frame pointers, then DWARF CFI where the frame-pointer
// chain falls short) and symbolization (symbols/offline_symbolizer.h) happen after every thread
// runs again.
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "symbols/module_map.h"
#include "symbols/offline_symbolizer.h"
#include "symbols/process_modules.h"
#include "symbols/symbol_index.h"
#include "tools/command.h"
#include "tools/snapshot_unwind.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch snapshot PID [--json] [--max-frames N] [--stack-kb N]\n"
    "                              [--stop-timeout-ms N] [--per-thread] [--no-cfi]\n"
    "                              [--no-symbols] [--no-index] [--timings]\n"
    "\n"
    "Prints every thread of process PID: thread id, name, scheduler state, CPU time, the top\n"
    "frame's registers (pc, sp, fp) and its stack, symbolized (function, file:line and inlined\n"
    "frames when debug information is available; module+offset always).\n"
    "\n"
    "The process is stopped only while registers and a slice of each stack are copied\n"
    "(ptrace PTRACE_SEIZE/PTRACE_INTERRUPT, process_vm_readv); the stopped window is measured\n"
    "and printed. Unwinding and symbolization happen after it runs again. Ctrl-C never leaves\n"
    "it stopped.\n"
    "\n"
    "  --json               one JSON object on stdout; frames in the agent's report format\n"
    "                       (addr, module, build_id, offset, symbol, file, line)\n"
    "  --max-frames N       frames per thread (default 256)\n"
    "  --stack-kb N         stack bytes copied per thread, from sp upwards (default 64)\n"
    "  --stop-timeout-ms N  how long to wait for all threads to stop (default 1000)\n"
    "  --per-thread         stop, copy and resume each thread on its own instead of all at\n"
    "                       once: each thread pauses only for its own copy (microseconds)\n"
    "                       even on a loaded machine, but threads are captured at slightly\n"
    "                       different instants\n"
    "  --no-cfi             frame pointers only (no DWARF call-frame information)\n"
    "  --no-symbols         no function names, files or lines (module+offset only)\n"
    "  --no-index           read only the debug information the frames need, and cache\n"
    "                       nothing (default: index each module with debug information\n"
    "                       once, in the cache of `hangwatch symbols index`, so that later\n"
    "                       snapshots symbolize in microseconds)\n"
    "  --timings            after the output, one line on stderr: CPU and wall time of each\n"
    "                       phase of this command (start-up, modules, stop, unwind, symbols,\n"
    "                       output)\n"
    "\n"
    "Needs permission to ptrace PID: the same user (subject to\n"
    "/proc/sys/kernel/yama/ptrace_scope) or CAP_SYS_PTRACE. Exit status: 0 on success, 2 on\n"
    "bad usage or when no snapshot could be taken (one line on stderr says why).\n";

struct Options {
  pid_t pid = 0;
  bool json = false;
  size_t max_frames = 256;
  size_t stack_kb = 64;
  int stop_timeout_ms = 1000;
  bool cfi = true;
  bool symbols = true;
  bool index = true;
  bool stop_all = true;
  bool timings = false;
};

int Usage(const char* fmt, const char* arg) {
  std::fprintf(stderr, "hangwatch snapshot: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, " (try hangwatch snapshot --help)\n");
  return kExitUsage;
}

bool ParseNumber(const char* s, uint64_t max, uint64_t* out) {
  if (s == nullptr || *s < '0' || *s > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max) return false;
  *out = v;
  return true;
}

// Returns -1 when parsed, else the exit status.
int ParseArgs(int argc, char** argv, Options* o) {
  bool have_pid = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](uint64_t max, uint64_t min, uint64_t* out) {
      if (i + 1 >= argc) return false;
      ++i;
      return ParseNumber(argv[i], max, out) && *out >= min;
    };
    uint64_t v = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      o->json = true;
    } else if (a == "--no-cfi") {
      o->cfi = false;
    } else if (a == "--no-symbols") {
      o->symbols = false;
    } else if (a == "--no-index") {
      o->index = false;
    } else if (a == "--timings") {
      o->timings = true;
    } else if (a == "--per-thread") {
      o->stop_all = false;
    } else if (a == "--max-frames") {
      if (!value(65536, 1, &v)) return Usage("--max-frames needs a number from 1 to 65536%s", "");
      o->max_frames = v;
    } else if (a == "--stack-kb") {
      if (!value(65536, 1, &v)) return Usage("--stack-kb needs a number from 1 to 65536%s", "");
      o->stack_kb = v;
    } else if (a == "--stop-timeout-ms") {
      if (!value(600000, 1, &v)) {
        return Usage("--stop-timeout-ms needs a number from 1 to 600000%s", "");
      }
      o->stop_timeout_ms = static_cast<int>(v);
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown option '%s'", argv[i]);
    } else if (have_pid) {
      return Usage("unexpected argument '%s': one PID only", argv[i]);
    } else {
      if (!ParseNumber(argv[i], 0x3fffffff, &v) || v == 0) {
        return Usage("'%s' is not a process id", argv[i]);
      }
      o->pid = static_cast<pid_t>(v);
      have_pid = true;
    }
  }
  if (!have_pid) return Usage("missing PID%s", "");
  return -1;
}

// One line for a snapshot that could not be taken.
int ReportCaptureError(const unwind::PtraceSnapshot& snap) {
  const pid_t pid = snap.pid;
  switch (snap.error) {
    case unwind::PtraceError::kNoSuchProcess:
      std::fprintf(stderr, "hangwatch snapshot: no process with pid %d\n", pid);
      break;
    case unwind::PtraceError::kPermission:
      std::fprintf(stderr,
                   "hangwatch snapshot: not allowed to trace process %d (%s): it belongs to "
                   "another user, or ptrace is restricted (see "
                   "/proc/sys/kernel/yama/ptrace_scope); run as its user or with "
                   "CAP_SYS_PTRACE\n",
                   pid, std::strerror(snap.error_errno));
      break;
    case unwind::PtraceError::kAlreadyTraced:
      std::fprintf(stderr,
                   "hangwatch snapshot: process %d is already being traced by process %d "
                   "(a debugger?); only one tracer is allowed\n",
                   pid, snap.tracer_pid);
      break;
    case unwind::PtraceError::kZombie:
      std::fprintf(stderr,
                   "hangwatch snapshot: process %d is a zombie: it has exited and waits for its "
                   "parent to reap it; there are no stacks to show\n",
                   pid);
      break;
    case unwind::PtraceError::kExited:
      std::fprintf(stderr,
                   "hangwatch snapshot: process %d exited during the snapshot; nothing was "
                   "captured\n",
                   pid);
      break;
    case unwind::PtraceError::kIsSelf:
      std::fprintf(stderr, "hangwatch snapshot: pid %d is hangwatch itself\n", pid);
      break;
    case unwind::PtraceError::kCancelled:
      std::fprintf(stderr, "hangwatch snapshot: interrupted; process %d was released\n", pid);
      break;
    case unwind::PtraceError::kSystem:
    case unwind::PtraceError::kOk:
      std::fprintf(stderr, "hangwatch snapshot: cannot snapshot process %d: %s\n", pid,
                   std::strerror(snap.error_errno));
      break;
  }
  return kExitUsage;
}

const char* StateName(char s) {
  switch (s) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "uninterruptible";
    case 'T':
      return "stopped";
    case 't':
      return "tracing stop";
    case 'Z':
      return "zombie";
    case 'X':
      return "dead";
    case 'I':
      return "idle";
    case 'P':
      return "parked";
    default:
      return "unknown";
  }
}

// "0x" and lowercase hex digits, no leading zeros (printf's "0x%" PRIx64), into `buf` (18
// bytes); returns the text. By hand: ~1000 of them per snapshot, and vfprintf was a
// visible share of the output's time.
std::string_view HexTo(uint64_t v, char* buf) {
  char* end = buf + 18;
  char* p = end;
  do {
    *--p = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  return std::string_view(p, static_cast<size_t>(end - p));
}

std::string Hex(uint64_t v) {
  char buf[18];
  return std::string(HexTo(v, buf));
}

std::string_view BaseNameView(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Appends `s` padded with spaces to `width` (printf's %-Ns when `left`, else %Ns).
void AppendPadded(std::string* out, std::string_view s, size_t width, bool left) {
  if (!left && s.size() < width) out->append(width - s.size(), ' ');
  out->append(s);
  if (left && s.size() < width) out->append(width - s.size(), ' ');
}

// One symbolized frame (inlined frames of an address are separate entries, innermost first).
// The strings point into the symbol indexes (Symbols below keeps them alive).
struct OutFrame {
  uint64_t addr = 0;
  const symbols::Module* module = nullptr;
  uint64_t offset = 0;
  std::string_view symbol;
  std::string_view file;
  int line = 0;
  bool inlined = false;     // inlined into the next entry (same address)
  const char* method = "";  // how the unwinder found it: pc, fp, cfi, lr
};

struct OutThread {
  const unwind::PtraceThread* thread = nullptr;
  UnwoundStack stack;
  std::vector<OutFrame> frames;
};

// The symbolizer and its answers, which the output's frames point into.
struct Symbols {
  std::unique_ptr<symbols::OfflineSymbolizer> symbolizer;
  std::vector<std::vector<symbols::SymbolizedAddress>> answers;  // per module with lookups
};

// Symbolizes every frame address, one batch per module (each address looked up once).
void Symbolize(const symbols::ProcessModules& modules, const Options& o,
               std::vector<OutThread>* threads, std::vector<std::string>* notes, Symbols* kept) {
  const symbols::ModuleMap& map = *modules.map;
  const symbols::Module* first_module = map.modules().data();
  // Every frame once: (module index, lookup address), in frame order.
  struct Lookup {
    size_t module = 0;
    uint64_t addr = 0;
  };
  std::vector<Lookup> lookups;
  std::vector<symbols::ModuleAddress> where;
  for (const OutThread& t : *threads) {
    for (size_t i = 0; i < t.stack.frames.size(); ++i) {
      symbols::ModuleAddress m = map.Find(t.stack.frames[i]);
      where.push_back(m);
      if (m.module == nullptr) continue;
      // Return addresses point after the call: look up the call instruction (offset - 1).
      lookups.push_back({static_cast<size_t>(m.module - first_module),
                         i == 0 || m.offset == 0 ? m.offset : m.offset - 1});
    }
  }
  std::vector<Lookup> wanted = lookups;
  std::sort(wanted.begin(), wanted.end(), [](const Lookup& x, const Lookup& y) {
    return x.module != y.module ? x.module < y.module : x.addr < y.addr;
  });
  wanted.erase(std::unique(wanted.begin(), wanted.end(),
                           [](const Lookup& x, const Lookup& y) {
                             return x.module == y.module && x.addr == y.addr;
                           }),
               wanted.end());
  // wanted[k] is answered by answers[batch_of[k]][index_in_batch[k]] (none when no symbols).
  std::vector<const symbols::SymbolizedAddress*> answer_of(wanted.size(), nullptr);
  if (o.symbols) {
    symbols::OfflineSymbolizerOptions options;
    // A whole index per module, cached by build-id: the first snapshot pays for reading the
    // DWARF once, later ones (the usual "is it still stuck there?") map the cached index.
    if (o.index) options.cold_limit = 0;
    kept->symbolizer = std::make_unique<symbols::OfflineSymbolizer>(options);
    kept->answers.reserve(map.modules().size());
    for (size_t begin = 0, end = 0; begin < wanted.size(); begin = end) {
      const size_t index = wanted[begin].module;
      for (end = begin; end < wanted.size() && wanted[end].module == index;) ++end;
      const std::string& path = modules.open_paths[index];
      if (path.empty()) continue;
      const std::string& build_id = map.modules()[index].build_id;
      std::vector<uint64_t> addrs;
      addrs.reserve(end - begin);
      for (size_t k = begin; k < end; ++k) addrs.push_back(wanted[k].addr);
      std::vector<symbols::SymbolizedAddress>& out = kept->answers.emplace_back();
      // By build-id when indexing: a warm cache answers without opening the module or looking
      // for its debug file; a cold one falls back to the file (which then gets indexed).
      absl::Status status = o.index && !build_id.empty()
                                ? kept->symbolizer->SymbolizeBuildId(build_id, path, addrs, &out)
                                : kept->symbolizer->SymbolizeFile(path, addrs, &out);
      if (!status.ok()) {
        notes->push_back(map.modules()[index].path + ": no symbols (" +
                         std::string(status.message()) + ")");
        continue;
      }
      for (size_t k = begin; k < end && k - begin < out.size(); ++k) {
        answer_of[k] = &out[k - begin];
      }
    }
    for (const std::string& w : kept->symbolizer->warnings()) notes->push_back(w);
  }
  size_t at = 0;     // into where
  size_t found = 0;  // into lookups
  for (OutThread& t : *threads) {
    t.frames.reserve(t.stack.frames.size());
    for (size_t i = 0; i < t.stack.frames.size(); ++i) {
      OutFrame f;
      f.addr = t.stack.frames[i];
      if (i < t.stack.methods.size()) f.method = t.stack.methods[i];
      f.offset = f.addr;
      const symbols::ModuleAddress m = where[at++];
      const symbols::SymbolizedAddress* answer = nullptr;
      if (m.module != nullptr) {
        f.module = m.module;
        f.offset = m.offset;
        const Lookup& l = lookups[found++];
        auto it =
            std::lower_bound(wanted.begin(), wanted.end(), l, [](const Lookup& x, const Lookup& y) {
              return x.module != y.module ? x.module < y.module : x.addr < y.addr;
            });
        answer = answer_of[static_cast<size_t>(it - wanted.begin())];
      }
      if (answer == nullptr || answer->frames.empty()) {
        t.frames.push_back(f);
        continue;
      }
      for (size_t e = 0; e < answer->frames.size(); ++e) {
        const symbols::SourceFrame& sf = answer->frames[e];
        OutFrame g = f;
        g.symbol = sf.function;
        if (!sf.file.empty() && sf.line > 0) {
          g.file = sf.file;
          g.line = static_cast<int>(sf.line);
        }
        g.inlined = e + 1 < answer->frames.size();
        t.frames.push_back(g);
      }
    }
  }
}

std::string ReadExe(pid_t pid) {
  char path[64];
  char buf[4096];
  std::snprintf(path, sizeof(path), "/proc/%d/exe", pid);
  ssize_t n = readlink(path, buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string ThreadNote(const unwind::PtraceThread& t) {
  char buf[256];
  switch (t.status) {
    case unwind::PtraceThreadStatus::kVanished:
      std::snprintf(buf, sizeof(buf), "thread %d exited during the snapshot (skipped)", t.tid);
      break;
    case unwind::PtraceThreadStatus::kZombie:
      std::snprintf(buf, sizeof(buf), "thread %d has exited (zombie, skipped)", t.tid);
      break;
    case unwind::PtraceThreadStatus::kNotStopped:
      std::snprintf(buf, sizeof(buf),
                    "thread %d did not stop in time (state %c: uninterruptible sleep?); its "
                    "stack was read from /proc without stopping it%s",
                    t.tid, t.state, t.regs.sp == 0 ? " but /proc had nothing" : "");
      break;
    case unwind::PtraceThreadStatus::kFailed:
      std::snprintf(buf, sizeof(buf), "thread %d could not be read: %s (skipped)", t.tid,
                    std::strerror(t.error_errno));
      break;
    case unwind::PtraceThreadStatus::kCaptured:
      return "";
  }
  return buf;
}

void PrintText(const Options& o, const unwind::PtraceSnapshot& snap, const std::string& exe,
               const std::vector<OutThread>& threads, const std::vector<std::string>& notes,
               uint64_t total_ns) {
  // Nothing was written to stdout yet: a buffer that holds a typical snapshot means one
  // write(2) instead of one per 4 KiB.
  static char buffer[1 << 16];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
  std::printf("process %d %s: %zu threads\n", snap.pid, exe.empty() ? "?" : exe.c_str(),
              threads.size());
  if (o.stop_all) {
    std::printf(
        "stopped for %.3f ms (all threads stopped %.3f ms after the first interrupt); "
        "snapshot total %.3f ms\n",
        Ms(snap.stopped_ns), Ms(snap.stop_latency_ns), Ms(total_ns));
  } else {
    std::printf(
        "threads stopped one at a time, each for at most %.3f ms, over %.3f ms; "
        "snapshot total %.3f ms\n",
        Ms(snap.max_thread_pause_ns), Ms(snap.stopped_ns), Ms(total_ns));
  }
  for (const OutThread& ot : threads) {
    const unwind::PtraceThread& t = *ot.thread;
    std::printf("\nthread %d \"%s\" %c (%s) cpu %.3f ms", t.tid, t.name.c_str(), t.state,
                StateName(t.state), Ms(t.cpu_ns));
    if (t.regs.pc != 0) {
      std::printf("  pc %s sp %s fp %s", Hex(t.regs.pc).c_str(), Hex(t.regs.sp).c_str(),
                  Hex(t.regs.fp).c_str());
#if defined(__aarch64__)
      std::printf(" lr %s", Hex(t.regs.lr).c_str());
#endif
    }
    if (t.status != unwind::PtraceThreadStatus::kCaptured) {
      std::printf("  [%s]", unwind::PtraceThreadStatusName(t.status));
    }
    std::printf("  unwind %s%s\n", SnapshotUnwindMethodName(ot.stack.method),
                ot.stack.truncated ? " (truncated)" : "");
    // One fwrite per frame line (what four printf calls printed): hundreds of lines per
    // snapshot, and formatting them was a measurable share of the whole command.
    size_t n = 0;
    std::string line;
    for (size_t i = 0; i < ot.frames.size(); ++i) {
      const OutFrame& f = ot.frames[i];
      line.assign("  #");
      AppendPadded(&line, std::to_string(n), 3, /*left=*/true);
      line += ' ';
      char hex[18];
      AppendPadded(&line, HexTo(f.addr, hex), 18, /*left=*/false);
      line += "  ";
      line += f.symbol.empty() || f.symbol == "??" ? std::string_view("??") : f.symbol;
      if (!f.file.empty()) {
        line += "  ";
        line += f.file;
        line += ':';
        line += std::to_string(f.line);
      }
      if (f.inlined) {
        line += "  (inlined)";
      } else if (f.module != nullptr) {
        line += "  (";
        line += BaseNameView(f.module->path);
        line += '+';
        line += HexTo(f.offset, hex);
        line += ')';
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
      if (!f.inlined) ++n;
    }
  }
  std::fflush(stdout);  // the stacks before the notes, also on a terminal
  for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
}

void PrintJson(const Options& o, const unwind::PtraceSnapshot& snap, const std::string& exe,
               const symbols::ProcessModules& modules, const std::vector<OutThread>& threads,
               const std::vector<std::string>& notes, uint64_t total_ns) {
  using Json = nlohmann::ordered_json;
  Json root;
  root["type"] = "snapshot";
  root["format_version"] = 1;
  root["pid"] = snap.pid;
  root["process"] = exe;
  root["unix_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  root["stopped_us"] = snap.stopped_ns / 1000;
  root["stop_latency_us"] = snap.stop_latency_ns / 1000;
  root["max_thread_pause_us"] = snap.max_thread_pause_ns / 1000;
  root["stop"] = o.stop_all ? "all" : "per_thread";
  root["total_us"] = total_ns / 1000;
  Json jthreads = Json::array();
  std::vector<bool> used(modules.map->modules().size(), false);
  for (const OutThread& ot : threads) {
    const unwind::PtraceThread& t = *ot.thread;
    Json jt;
    jt["tid"] = t.tid;
    jt["name"] = t.name;
    jt["state"] = std::string(1, t.state);
    jt["status"] = unwind::PtraceThreadStatusName(t.status);
    jt["cpu_us"] = t.cpu_ns / 1000;
    jt["paused_us"] = t.paused_ns / 1000;
    jt["registers"] = {{"pc", Hex(t.regs.pc)}, {"sp", Hex(t.regs.sp)}, {"fp", Hex(t.regs.fp)}};
#if defined(__aarch64__)
    jt["registers"]["lr"] = Hex(t.regs.lr);
#endif
    jt["unwind"] = SnapshotUnwindMethodName(ot.stack.method);
    jt["truncated"] = ot.stack.truncated;
    Json jframes = Json::array();
    for (const OutFrame& f : ot.frames) {
      Json jf;
      jf["addr"] = Hex(f.addr);
      jf["module"] = f.module != nullptr ? f.module->path : "";
      jf["build_id"] = f.module != nullptr ? f.module->build_id : "";
      jf["offset"] = Hex(f.offset);
      if (!f.symbol.empty() && f.symbol != "??") jf["symbol"] = std::string(f.symbol);
      if (!f.file.empty()) {
        jf["file"] = std::string(f.file);
        jf["line"] = f.line;
      }
      if (f.inlined) jf["inlined"] = true;
      if (f.method[0] != '\0') jf["method"] = f.method;
      if (f.module != nullptr)
        used[static_cast<size_t>(f.module - modules.map->modules().data())] = true;
      jframes.push_back(std::move(jf));
    }
    jt["frames"] = std::move(jframes);
    jthreads.push_back(std::move(jt));
  }
  root["threads"] = std::move(jthreads);
  Json jmodules = Json::array();
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) continue;
    const symbols::Module& m = modules.map->modules()[i];
    jmodules.push_back({{"path", m.path}, {"base", Hex(m.load_bias)}, {"build_id", m.build_id}});
  }
  root["modules"] = std::move(jmodules);
  root["notes"] = notes;
  std::string text = root.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::printf("%s\n", text.c_str());
}

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t NowNs() { return ClockNs(CLOCK_MONOTONIC); }

// Minor page faults of this process so far.
uint64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_minflt);
}

// --timings: CPU (this process, kernel time included), wall time and minor page faults per
// phase. The first phase, "start-up", is what was spent before RunSnapshot: exec, static
// initializers (and, measured from fork, the parent's share of the fork); its wall time is not
// known here.
class PhaseTimer {
 public:
  PhaseTimer() : cpu_(ClockNs(CLOCK_PROCESS_CPUTIME_ID)), wall_(NowNs()), faults_(MinorFaults()) {
    phases_.push_back({"start-up", cpu_, 0, faults_});
  }
  void End(const char* name) {
    const uint64_t cpu = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
    const uint64_t wall = NowNs();
    const uint64_t faults = MinorFaults();
    phases_.push_back({name, cpu - cpu_, wall - wall_, faults - faults_});
    cpu_ = cpu;
    wall_ = wall;
    faults_ = faults;
  }
  // "timings (ms cpu/wall, page faults): start-up 0.512/-/50 modules 0.100/0.101/12 ..."
  void Print() const {
    std::string line = "timings (ms cpu/wall/page faults):";
    uint64_t cpu = 0;
    char buf[128];
    for (const Phase& p : phases_) {
      cpu += p.cpu_ns;
      if (p.wall_ns == 0) {
        std::snprintf(buf, sizeof(buf), " %s %.3f/-/%" PRIu64, p.name, Ms(p.cpu_ns), p.faults);
      } else {
        std::snprintf(buf, sizeof(buf), " %s %.3f/%.3f/%" PRIu64, p.name, Ms(p.cpu_ns),
                      Ms(p.wall_ns), p.faults);
      }
      line += buf;
    }
    std::snprintf(buf, sizeof(buf), " total-cpu %.3f (exit not included)\n", Ms(cpu));
    line += buf;
    std::fputs(line.c_str(), stderr);
  }

 private:
  struct Phase {
    const char* name;
    uint64_t cpu_ns;
    uint64_t wall_ns;
    uint64_t faults;
  };
  uint64_t cpu_;
  uint64_t wall_;
  uint64_t faults_;
  std::vector<Phase> phases_;
};

// The snapshot itself; exits the process when it succeeds (see the end).
int Snapshot(const Options& o, PhaseTimer& timer) {
  const uint64_t start = NowNs();

  // Modules first: opening files takes milliseconds and must not lengthen the stop.
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(o.pid);
  timer.End("modules");

  unwind::PtraceCaptureOptions capture_options;
  capture_options.stack_bytes = o.stack_kb * 1024;
  capture_options.stop_timeout_ms = o.stop_timeout_ms;
  capture_options.stop_all = o.stop_all;
  unwind::PtraceSnapshot snap = unwind::CapturePtraceSnapshot(o.pid, capture_options);
  timer.End("capture");
  if (snap.error != unwind::PtraceError::kOk) return ReportCaptureError(snap);
  if (!modules.ok()) {
    // Maps unreadable although ptrace worked: keep going without modules.
    modules = symbols::ProcessModules{
        std::make_shared<const symbols::ModuleMap>(std::vector<symbols::Module>{}),
        {},
        {std::string(modules.status().message())},
        {}};
  }
  std::string exe = ReadExe(o.pid);

  std::vector<std::string> notes;
  for (const std::string& w : modules->warnings) notes.push_back(w);
  std::vector<OutThread> threads;
  SnapshotUnwinder unwinder(snap, o.max_frames, o.cfi, std::move(modules->maps_text));
  unwinder.Prepare();
  timer.End("cfi-setup");
  for (const unwind::PtraceThread& t : snap.threads) {
    std::string note = ThreadNote(t);
    if (!note.empty()) notes.push_back(note);
    if (t.status != unwind::PtraceThreadStatus::kCaptured &&
        t.status != unwind::PtraceThreadStatus::kNotStopped) {
      continue;
    }
    OutThread ot;
    ot.thread = &t;
    ot.stack = unwinder.Unwind(t);
    threads.push_back(std::move(ot));
  }
  if (o.cfi && !unwinder.cfi_error().empty()) {
    notes.push_back("DWARF CFI unavailable (" + unwinder.cfi_error() + "): frame pointers only");
  }
  if (snap.omitted > 0) {
    notes.push_back(std::to_string(snap.omitted) + " threads over the limit were not captured");
  }
  timer.End("unwind");
  Symbols kept;  // outlives the output, whose frames point into it
  Symbolize(*modules, o, &threads, &notes, &kept);
  unwind::ReleaseLateStoppers();
  timer.End("symbols");

  const uint64_t total_ns = NowNs() - start;
  if (o.json) {
    PrintJson(o, snap, exe, *modules, threads, notes, total_ns);
    for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  } else {
    PrintText(o, snap, exe, threads, notes, total_ns);
  }
  // A full disk or a closed pipe loses the output: say so and fail.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "hangwatch snapshot: writing the output failed: %s\n",
                 std::strerror(errno));
    return 2;
  }
  timer.End("output");
  if (o.timings) timer.Print();
    // Then straight to the kernel: every thread of the target is released and the output is
    // out, and freeing the stack copies, the index mappings and libdwfl's state one by one
    // (~0.1 ms) would only repeat the kernel's teardown of the address space. Not under the
    // sanitizers (gcc's and clang's spellings), whose leak check runs at exit. (stdout was
    // flushed above; stderr is not buffered.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HANGWATCH_SNAPSHOT_SANITIZED 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(HANGWATCH_SNAPSHOT_SANITIZED)
  _exit(0);
#endif
  return 0;
}

int RunSnapshot(int argc, char** argv) {
  Options o;
  if (int status = ParseArgs(argc, argv, &o); status >= 0) return status;
  PhaseTimer timer;
  return Snapshot(o, timer);
}

const CommandRegistration kRegistration({"snapshot",
                                         "every thread of a running process, symbolized "
                                         "(like stackshot / eu-stack)",
                                         RunSnapshot});

}  // namespace
}  // namespace hangwatch::tools
