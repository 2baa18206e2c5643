// `hangwatch snapshot PID [--json]`: every thread of another process — name, scheduler state,
// CPU time, the top frame's registers and its symbolized stack — like macOS's stackshot,
// eu-stack or gdb's `thread apply all bt`.
//
// The target is stopped only while registers and stack slices are copied
// (unwind/ptrace_capture.h); unwinding (tools/snapshot/snapshot_unwind.h: frame pointers, then
// DWARF CFI where the frame-pointer chain falls short) and symbolization
// (tools/snapshot/snapshot_output.h, symbols/batch_symbolizer.h) happen after every thread runs
// again. This file: the options, the phases in order and their timings.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "symbols/batch_symbolizer.h"
#include "symbols/module_map.h"
#include "symbols/process_modules.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/snapshot/snapshot_command.h"
#include "tools/snapshot/snapshot_output.h"
#include "tools/snapshot/snapshot_runtimes.h"
#include "tools/snapshot/snapshot_unwind.h"
#include "tools/snapshot/snapshot_waits.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch snapshot PID [--json] [--max-frames N] [--stack-kb N]\n"
    "                              [--stop-timeout-ms N] [--per-thread] [--no-cfi]\n"
    "                              [--no-symbols] [--no-index] [--no-python] [--no-ruby]\n"
    "                              [--no-java] [--no-js]\n"
    "                              [--java-timeout-ms N] [--timings]\n"
    "\n"
    "Prints every thread of process PID: thread id, name, scheduler state, CPU time, the top\n"
    "frame's registers (pc, sp, fp) and its stack, symbolized (function, file:line and inlined\n"
    "frames when debug information is available; module+offset always). Each thread asleep in\n"
    "a system call gets what it waits for (\"waiting for mutex 0x... held by thread N\n"
    "\"name\"\"); then the wait-for graph between threads, and every cycle in it is reported\n"
    "as a deadlock naming each of its threads.\n"
    "\n"
    "In a CPython process (3.10 to 3.13: python3.X or libpython3.X.so), each thread's\n"
    "Python frames (function, file:line) stand in its stack where the interpreter's eval\n"
    "loop ran them, between the native frames of C code, like `py-spy dump --native`.\n"
    "In a Ruby 3.1 process, each thread's Ruby frames (method, file:line) stand in its stack\n"
    "where the VM ran them (rb_vm_exec).\n"
    "In a node process (V8 with its postmortem metadata), each thread's JavaScript frames\n"
    "(function, script:line) stand in its stack where V8 ran them.\n"
    "\n"
    "In a HotSpot JVM, each Java thread's Java frames (method, file:line), from the thread\n"
    "dump the JVM gives through its attach mechanism (as jcmd and jstack ask it: SIGQUIT only\n"
    "to a JVM that handles it and has attach on; docs/java.md), stand where its native stack\n"
    "runs JVM code; Java threads blocked on monitors and java.util.concurrent locks join the\n"
    "wait-for graph, and Java-level deadlocks are reported as native ones.\n"
    "\n"
    "The process is stopped only while registers and a slice of each stack are copied\n"
    "(ptrace PTRACE_SEIZE/PTRACE_INTERRUPT, process_vm_readv); the stopped window is measured\n"
    "and printed. Unwinding and symbolization happen after it runs again. Ctrl-C never leaves\n"
    "it stopped.\n"
    "\n"
    "The target sees the stop as a SIGSTOP/SIGCONT: waits with a timeout (timed mutexes,\n"
    "condition variables and semaphores, sleeps, poll, select) resume and still end at their\n"
    "deadline, but epoll_wait/epoll_pwait, sigtimedwait, semop/semtimedop, io_getevents,\n"
    "io_uring_enter and socket calls with SO_RCVTIMEO/SO_SNDTIMEO return EINTR once (see\n"
    "docs/snapshot-format.md). What each thread waits in is read before the stop, so a timed\n"
    "wait the stop restarted (restart_syscall) is still named and its lock decoded.\n"
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
    "  --no-python          native frames only, also in a Python process\n"
    "  --no-java            do not ask a JVM for its thread dump: native frames only\n"
    "  --java-timeout-ms N  how long the JVM may take to answer (default 2000)\n"
    "  --no-ruby            native frames only, also in a Ruby process\n"
    "  --no-js              native frames only, also in a node process\n"
    "  --timings            after the output, one line on stderr: CPU and wall time of each\n"
    "                       phase of this command (start-up, modules, stop, unwind, symbols,\n"
    "                       java, output); a JVM's thread dump on a line of its own\n"
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
  bool python = true;
  bool java = true;
  int java_timeout_ms = 2000;
  bool ruby = true;
  bool js = true;
};

// Returns the exit status when the command is done (--help, bad usage), else nullopt.
std::optional<int> ParseArgs(int argc, char** argv, Options* o) {
  bool have_pid = false;
  FlagParser flags("hangwatch snapshot");
  flags.Help({kUsage});
  flags.Switch({"--json"}, [o] { o->json = true; });
  flags.Switch({"--no-cfi"}, [o] { o->cfi = false; });
  flags.Switch({"--no-symbols"}, [o] { o->symbols = false; });
  flags.Switch({"--no-index"}, [o] { o->index = false; });
  flags.Switch({"--timings"}, [o] { o->timings = true; });
  flags.Switch({"--no-python"}, [o] { o->python = false; });
  flags.Switch({"--no-java"}, [o] { o->java = false; });
  flags.Switch({"--no-ruby"}, [o] { o->ruby = false; });
  flags.Switch({"--no-js"}, [o] { o->js = false; });
  flags.Switch({"--per-thread"}, [o] { o->stop_all = false; });
  for (auto [flag, max, out] : {std::tuple{"--max-frames", 65536, &o->max_frames},
                                std::tuple{"--stack-kb", 65536, &o->stack_kb}}) {
    const std::string wants =
        std::string(flag) + " needs a number from 1 to " + std::to_string(max);
    flags.Number({flag}, 1, max, out, wants);
    flags.MissingValue(wants);
  }
  flags.Number({"--stop-timeout-ms"}, 1, 600000, &o->stop_timeout_ms,
               "--stop-timeout-ms needs a number from 1 to 600000");
  flags.MissingValue("--stop-timeout-ms needs a number from 1 to 600000");
  flags.Number({"--java-timeout-ms"}, 1, 600000, &o->java_timeout_ms,
               "--java-timeout-ms needs a number from 1 to 600000");
  flags.MissingValue("--java-timeout-ms needs a number from 1 to 600000");
  flags.Positional([&](const std::string& a) -> std::string {
    if (have_pid) return "unexpected argument '" + a + "': one PID only";
    uint64_t pid = 0;
    if (!ParseWholeNumber(a, 1, 0x3fffffff, &pid)) return "'" + a + "' is not a process id";
    o->pid = static_cast<pid_t>(pid);
    have_pid = true;
    return "";
  });
  flags.LoneDashIsOption();
  flags.NoDoubleDash();
  flags.UnknownOption("unknown option '{}'");
  flags.FailSuffix(" (try hangwatch snapshot --help)");
  if (const std::optional<int> done = flags.Parse(argc, argv)) return done;
  if (!have_pid) return flags.Fail("missing PID");
  return std::nullopt;
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

std::string ReadExe(pid_t pid) {
  char path[64];
  char buf[4096];
  std::snprintf(path, sizeof(path), "/proc/%d/exe", pid);
  ssize_t n = readlink(path, buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

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
  // The language runtimes found before the stop (CPython's and Ruby's frame chains read
  // within it).
  std::vector<std::string> notes;
  RuntimeChoice choice{o.python, o.ruby, o.java, o.js, o.java_timeout_ms, o.max_frames};
  SnapshotRuntimes runtimes(o.pid, choice, [&timer](const char* phase) { timer.End(phase); });
  runtimes.Prepare(modules.ok() ? &*modules : nullptr, &capture_options, &notes);
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
  symbols::BatchSymbolizerOptions symbolizer_options;
  // A whole index per module, cached by build-id: the first snapshot pays for reading the
  // DWARF once, later ones (the usual "is it still stuck there?") map the cached index. By
  // build-id when indexing: a warm cache answers without opening the module or looking for
  // its debug file; a cold one falls back to the file (which then gets indexed).
  if (o.index) symbolizer_options.symbolizer.cold_limit = 0;
  symbolizer_options.by_build_id = o.index;
  symbols::BatchSymbolizer batch(std::move(symbolizer_options));  // outlives the output
  SymbolizeSnapshot(*modules, o.symbols, &threads, &notes, &batch);
  unwind::ReleaseLateStoppers();
  timer.End("symbols");
  runtimes.Merge(*modules, &threads, &notes);  // every thread runs again
  // After the stop: each thread back in the system call it sleeps in, told by what it slept in
  // before the stop where the stop restarted it.
  std::vector<WaitQuery> queries;
  for (const OutThread& ot : threads) {
    const unwind::PtraceThread& t = *ot.thread;
    queries.push_back({t.tid, t.name, t.state, t.syscall_before, t.syscall_nr});
  }
  SnapshotWaits waits = ReadSnapshotWaits(o.pid, queries);
  runtimes.AddWaits(&waits, &notes);
  timer.End("waits");

  const uint64_t total_ns = NowNs() - start;
  if (o.json) {
    PrintSnapshotJson(o.stop_all, snap, exe, runtimes.Lines(), *modules, threads, waits, notes,
                      total_ns);
    for (const std::string& note : notes) {
      std::fprintf(stderr, "note: %s\n", EscapeForTerminal(note).c_str());
    }
  } else {
    PrintSnapshotText(o.stop_all, snap, exe, runtimes.Lines(), threads, waits, notes, total_ns);
  }
  // A full disk or a closed pipe loses the output: say so and fail.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "hangwatch snapshot: writing the output failed: %s\n",
                 std::strerror(errno));
    return 2;
  }
  timer.End("output");
  if (o.timings) {
    timer.Print();
    runtimes.PrintTimings();
  }
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
  if (const std::optional<int> done = ParseArgs(argc, argv, &o)) return *done;
  PhaseTimer timer;
  return Snapshot(o, timer);
}

}  // namespace

const Command kSnapshotCommand = {"snapshot",
                                  "every thread of a running process, symbolized "
                                  "(like stackshot / eu-stack)",
                                  RunSnapshot};
}  // namespace hangwatch::tools
