// `hangwatch snapshot`'s output: the unwound frames symbolized into OutFrames, printed as text
// or JSON.
#include "tools/snapshot/snapshot_output.h"
#include "tools/common/terminal_text.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include "nlohmann/json.hpp"
#include "report/frame_classifier.h"

namespace hangwatch::tools {
namespace {

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

// Appends `s` padded with spaces to `width` (printf's %-Ns when `left`, else %Ns).
void AppendPadded(std::string* out, std::string_view s, size_t width, bool left) {
  if (!left && s.size() < width) out->append(width - s.size(), ' ');
  out->append(s);
  if (left && s.size() < width) out->append(width - s.size(), ' ');
}

}  // namespace

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Symbolizes every frame address, one batch per module (each address looked up once). The
// output's frames point into `batch`'s answers.
void SymbolizeSnapshot(const symbols::ProcessModules& modules, bool symbolize,
                       std::vector<OutThread>* threads, std::vector<std::string>* notes,
                       symbols::BatchSymbolizer* batch) {
  const symbols::ModuleMap& map = *modules.map;
  const symbols::Module* first_module = map.modules().data();
  // Module ids are the map's indexes: batches run in the map's order.
  for (size_t i = 0; i < map.modules().size(); ++i) {
    batch->AddModule(map.modules()[i].build_id, modules.open_paths[i]);
  }
  std::vector<symbols::ModuleAddress> where;
  for (const OutThread& t : *threads) {
    for (size_t i = 0; i < t.stack.frames.size(); ++i) {
      symbols::ModuleAddress m = map.Find(t.stack.frames[i]);
      where.push_back(m);
      if (m.module != nullptr) {
        batch->AddFrame(static_cast<size_t>(m.module - first_module), m.offset, i);
      }
    }
  }
  if (symbolize) {
    batch->Run(nullptr, [&](size_t module, const absl::Status& status) {
      notes->push_back(map.modules()[module].path + ": no symbols (" +
                       std::string(status.message()) + ")");
    });
    for (const std::string& w : batch->warnings()) notes->push_back(w);
  }
  size_t at = 0;  // into where
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
        answer = batch->Answer(static_cast<size_t>(m.module - first_module), m.offset, i);
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

void PrintSnapshotText(bool stop_all, const unwind::PtraceSnapshot& snap, const std::string& exe,
                       const std::vector<RuntimeLine>& runtimes,
                       const std::vector<OutThread>& threads, const SnapshotWaits& waits,
                       const std::vector<std::string>& notes, uint64_t total_ns) {
  // Nothing was written to stdout yet: a buffer that holds a typical snapshot means one
  // write(2) instead of one per 4 KiB.
  static char buffer[1 << 16];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
  // Thread names, the executable's path, symbols and file names are the target's (another
  // user's process, when root takes the snapshot): escaped, as every text output is.
  std::printf("process %d %s: %zu threads\n", snap.pid,
              exe.empty() ? "?" : EscapeForTerminal(exe).c_str(), threads.size());
  if (stop_all) {
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
  for (const RuntimeLine& r : runtimes) {
    std::printf("%s: %s\n", EscapeForTerminal(r.name).c_str(), r.what);
  }
  for (const OutThread& ot : threads) {
    const unwind::PtraceThread& t = *ot.thread;
    std::printf("\nthread %d \"%s\" %c (%s) cpu %.3f ms", t.tid, EscapeForTerminal(t.name).c_str(),
                t.state, StateName(t.state), Ms(t.cpu_ns));
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
    if (const auto w = waits.threads.find(t.tid); w != waits.threads.end()) {
      const std::string wait = WaitLine(waits, w->second);
      if (!wait.empty()) std::printf("  %s\n", EscapeForTerminal(wait).c_str());
    }
    if (!ot.java_name.empty()) {
      std::printf("  Java thread \"%s\": %s\n", EscapeForTerminal(ot.java_name).c_str(),
                  EscapeForTerminal(ot.java_state).c_str());
    }
    // One fwrite per frame line (what four printf calls printed): hundreds of lines per
    // snapshot, and formatting them was a measurable share of the whole command.
    size_t n = 0;
    std::string line;
    for (size_t i = 0; i < ot.frames.size(); ++i) {
      const OutFrame& f = ot.frames[i];
      line.assign("  #");
      AppendPadded(&line, std::to_string(n), 3, /*left=*/true);
      line += ' ';
      if (f.kind != nullptr) {
        // "  #3   python  handle_request  /srv/app.py:42", as py-spy prints them.
        AppendPadded(&line, f.kind, 18, /*left=*/false);
        line += "  ";
        line += f.symbol;
        if (!f.file.empty()) {
          line += "  ";
          line += f.file;
          if (f.line > 0) {
            line += ':';
            line += std::to_string(f.line);
            // As the report's text: the line is where the function starts, not where it runs.
            if (f.line_is_definition) line += "  [the function's first line]";
          }
        }
        if (!IsTerminalSafe(line)) line = EscapeForTerminal(line);
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), stdout);
        ++n;
        continue;
      }
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
        line += report::ModuleFileName(f.module->path);
        line += '+';
        line += HexTo(f.offset, hex);
        line += ')';
      }
      if (!IsTerminalSafe(line)) line = EscapeForTerminal(line);
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
      if (!f.inlined) ++n;
    }
  }
  const std::vector<std::string> edges = WaitGraphLines(waits);
  if (!edges.empty()) {
    std::printf("\nwait-for graph (a thread -> the thread holding the lock it waits for):\n");
    for (const std::string& e : edges) std::printf("  %s\n", EscapeForTerminal(e).c_str());
  }
  for (const std::vector<pid_t>& cycle : waits.deadlocks) {
    std::printf("\nDEADLOCK: %s\n", EscapeForTerminal(DeadlockLine(waits, cycle)).c_str());
  }
  std::fflush(stdout);  // the stacks before the notes, also on a terminal
  for (const std::string& note : notes) {
    std::fprintf(stderr, "note: %s\n", EscapeForTerminal(note).c_str());
  }
}

namespace {

// A thread's "wait" object (docs/snapshot-format.md); null when it runs.
nlohmann::ordered_json WaitJson(const SnapshotWaits& waits, const ThreadWait& t) {
  if (!t.in_syscall && t.runtime_lock.empty()) return nullptr;
  nlohmann::ordered_json j;
  j["syscall"] = t.call;
  j["summary"] = WaitLine(waits, t);
  if (t.restart != Restart::kNo) j["restarted"] = RestartName(t.restart);
  if (!t.runtime_lock.empty()) {
    // A Java lock: the object's address and the lock in words (snapshot_java.h).
    j["lock"] = {{"type", "runtime"}, {"addr", Hex(t.lock.addr)}, {"words", t.runtime_lock}};
    if (t.lock.owner != 0) j["owner"] = t.lock.owner;
  } else if (t.wait.wait == cause::SyscallWait::kFutex) {
    j["lock"] = {{"type", cause::LockTypeKey(t.lock.type)}, {"addr", Hex(t.lock.addr)}};
    if (t.lock.owner != 0) j["owner"] = t.lock.owner;
  }
  return j;
}

}  // namespace

void PrintSnapshotJson(bool stop_all, const unwind::PtraceSnapshot& snap, const std::string& exe,
                       const std::vector<RuntimeLine>& runtimes,
                       const symbols::ProcessModules& modules,
                       const std::vector<OutThread>& threads, const SnapshotWaits& waits,
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
  root["stop"] = stop_all ? "all" : "per_thread";
  root["total_us"] = total_ns / 1000;
  for (const RuntimeLine& r : runtimes) root[r.key] = r.name;
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
    if (!ot.java_name.empty()) jt["java"] = {{"name", ot.java_name}, {"state", ot.java_state}};
    jt["unwind"] = SnapshotUnwindMethodName(ot.stack.method);
    jt["truncated"] = ot.stack.truncated;
    Json jframes = Json::array();
    for (const OutFrame& f : ot.frames) {
      Json jf;
      if (f.kind != nullptr) {
        jf["kind"] = f.kind;
        if (f.addr != 0) jf["code"] = Hex(f.addr);  // none for Java frames
        jf["symbol"] = std::string(f.symbol);
        jf["file"] = std::string(f.file);
        jf["line"] = f.line;
        if (f.line_is_definition) jf["line_is_definition"] = true;
        jframes.push_back(std::move(jf));
        continue;
      }
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
    if (const auto w = waits.threads.find(t.tid); w != waits.threads.end()) {
      jt["wait"] = WaitJson(waits, w->second);
    }
    jthreads.push_back(std::move(jt));
  }
  root["threads"] = std::move(jthreads);
  Json jedges = Json::array();
  for (const auto& [tid, tw] : waits.threads) {
    if (tw.lock.owner == 0 || waits.threads.count(tw.lock.owner) == 0) continue;
    jedges.push_back({{"tid", tid}, {"owner", tw.lock.owner}, {"lock", Hex(tw.lock.addr)}});
  }
  root["wait_for"] = std::move(jedges);
  Json jdeadlocks = Json::array();
  for (const std::vector<pid_t>& cycle : waits.deadlocks) {
    jdeadlocks.push_back({{"threads", cycle}, {"summary", DeadlockLine(waits, cycle)}});
  }
  root["deadlocks"] = std::move(jdeadlocks);
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

}  // namespace hangwatch::tools
