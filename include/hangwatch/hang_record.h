// HangRecord: everything the agent knows about one hang, as handed to callbacks, returned by
// RecentHangs() and written (field for field) to the JSON Lines report (docs/report-format.md).
//
// Plain values, no dependency beyond the standard library: a consumer can keep, copy and
// serialize records without touching the agent.
#ifndef HANGWATCH_HANG_RECORD_H_
#define HANGWATCH_HANG_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangwatch/export.h"

namespace hangwatch {

// What the main thread was doing during the hang, from its CPU time and scheduler states.
enum class HangClass : uint8_t {
  kUnknown = 0,  // no CPU figure (e.g. a fatal hang without samples)
  kBusy,         // a computation: on CPU >= 70 % of the time, or runnable in >= 80 % of samples
  kBlocked,      // waiting: CPU <= 30 % and runnable in <= 20 % of samples (a lock, I/O, a sleep)
  kMixed,        // in between
};
// "busy", "blocked", "mixed", "unknown".
HANGWATCH_EXPORT const char* HangClassName(HangClass c);

// When in the process's life the hang's pass ran. A pass that ends because the process exits
// (exit() or _exit() called on the watched thread while the pass runs: the program's own
// shutdown work) is kShutdown; the pass already under way when the agent started, before the
// loop's first wait, is kStartup; every other one kRun. `hangwatch gate` and
// `hangwatch run --fail-on-hang` judge run- and start-up-phase hangs, shutdown ones only with
// --judge-shutdown.
enum class HangPhase : uint8_t {
  kRun = 0,
  kStartup,
  kShutdown,
};
// "run", "startup", "shutdown".
constexpr const char* HangPhaseName(HangPhase p) {
  switch (p) {
    case HangPhase::kStartup:
      return "startup";
    case HangPhase::kShutdown:
      return "shutdown";
    case HangPhase::kRun:
      break;
  }
  return "run";
}

// How the unwinder found a frame. The names are those of `hangwatch snapshot --json`.
enum class FrameMethod : uint8_t {
  kUnknown = 0,       // not recorded
  kPc,                // frames[0]: the interrupted (or blocked) instruction
  kFramePointer,      // from a frame record (the fast path)
  kCfi,               // from DWARF call-frame information (code without frame pointers)
  kLinkRegister,      // arm64: x30 at frame 0, for a pc without call-frame information
  kFramePointerScan,  // from a frame record found by scanning the stack: a heuristic, used
                      // for a blocked thread read through /proc, whose frame pointer is unknown
};
// "unknown", "pc", "fp", "cfi", "lr", "fp-scan".
constexpr const char* FrameMethodName(FrameMethod m) {
  switch (m) {
    case FrameMethod::kPc:
      return "pc";
    case FrameMethod::kFramePointer:
      return "fp";
    case FrameMethod::kCfi:
      return "cfi";
    case FrameMethod::kLinkRegister:
      return "lr";
    case FrameMethod::kFramePointerScan:
      return "fp-scan";
    case FrameMethod::kUnknown:
      break;
  }
  return "unknown";
}

// How a sample was taken.
enum class SampleMethod : uint8_t {
  kUnknown = 0,
  kSignal,  // the thread was interrupted by the agent's signal (it was running)
  kProc,    // read through /proc without interrupting it (it was asleep in the kernel)
  kMach,    // suspended with thread_suspend (Apple platforms)
};
// "unknown", "signal", "proc", "mach".
constexpr const char* SampleMethodName(SampleMethod m) {
  switch (m) {
    case SampleMethod::kSignal:
      return "signal";
    case SampleMethod::kProc:
      return "proc";
    case SampleMethod::kMach:
      return "mach";
    case SampleMethod::kUnknown:
      break;
  }
  return "unknown";
}

// What ran in a frame: machine code, or a function an interpreter ran (a Python function of
// CPython's eval loop, a Ruby method of the Ruby VM, a JavaScript function of V8): an
// interpreter's frames stand in place of (Python, Ruby) or beside (JavaScript, whose frames are
// machine frames of V8's) the native frames that ran them. A Java frame is the JVM's own
// account of the thread (its thread dump), below the native frames where their walk ended.
// JSON: a frame's "kind".
enum class FrameLanguage : uint8_t {
  kNative = 0,
  kPython,
  kJs,
  kRuby,
  kJava,
};

// "native", "python", "js", "ruby", "java": the JSON "kind" of a frame or culprit.
inline const char* FrameLanguageName(FrameLanguage l) {
  switch (l) {
    case FrameLanguage::kJava:
      return "java";
    case FrameLanguage::kPython:
      return "python";
    case FrameLanguage::kJs:
      return "js";
    case FrameLanguage::kRuby:
      return "ruby";
    case FrameLanguage::kNative:
      break;
  }
  return "native";
}

// The language a "kind" names ("" is native); false when it names none.
inline bool ParseFrameLanguage(std::string_view kind, FrameLanguage* out) {
  for (FrameLanguage l : {FrameLanguage::kNative, FrameLanguage::kPython, FrameLanguage::kJs,
                          FrameLanguage::kRuby, FrameLanguage::kJava}) {
    if (kind == FrameLanguageName(l)) {
      *out = l;
      return true;
    }
  }
  if (!kind.empty()) return false;
  *out = FrameLanguage::kNative;
  return true;
}

// A function an interpreter ran, named by the runtime (not machine code with a module offset).
inline bool IsInterpreted(FrameLanguage l) { return l != FrameLanguage::kNative; }

struct Frame {
  uint64_t addr = 0;     // runtime address in the reporting process
  std::string module;    // path of the module holding addr; empty when unknown
  std::string build_id;  // lowercase hex GNU build-id; empty when absent/unknown
  uint64_t offset = 0;   // ELF virtual address inside the module (addr when unknown)
  std::string symbol;    // demangled function name; empty when unknown
  std::string file;      // source file; empty when unknown
  int line = 0;          // source line; 0 when unknown
  FrameMethod method = FrameMethod::kUnknown;
  // ELF virtual address inside the module where the frame's function starts (its symbol, else
  // its CFI FDE, else the nearest symbol below: docs/report-format.md); 0 when unknown. What
  // identifies a frame that has no name.
  uint64_t function_start = 0;
  // Interpreted (IsInterpreted): `addr` is the runtime's object for the function (CPython's code
  // object, a Ruby iseq, a V8 SharedFunctionInfo); `module`, `build_id` are empty and `offset`
  // is the instruction's position in it; `symbol` is the function's name, `file` and `line` where
  // it is. JSON: "kind": "python" / "js" / "ruby" (docs/report-format.md). Java: `addr` and
  // `offset` are 0; `symbol` is the method ("Server.handle"), `file` and `line` where the JVM's
  // thread dump found the thread, once, after the hang opened ("kind": "java").
  // Last, so that aggregate initialisers of native frames stay as they were.
  FrameLanguage language = FrameLanguage::kNative;
  // `line` is the function's first line, not the one it was running (a runtime that could not
  // say which line ran). JSON: "line_is_definition": true (absent when false).
  bool line_is_definition = false;
};

// One unique stack of a hang: identical samples are stored once with a count.
struct Stack {
  int id = 0;                  // index in HangRecord::stacks; timeline entries refer to it
  uint32_t count = 0;          // samples with this stack
  uint32_t first_seen_ms = 0;  // since the pass began (estimated, stopped time excluded)
  uint32_t last_seen_ms = 0;
  uint64_t cpu_us = 0;        // main-thread CPU time attributed to this stack
  std::vector<Frame> frames;  // innermost first; frames[0] is the interrupted instruction
  // A runtime's chain of frames (Python's) was read only in part: frames outer than the last
  // one read are missing. JSON: "partial": true (absent when false).
  bool partial = false;
};

// Why the main thread waited (or did not run): the `cause` of a hang and of its samples
// (docs/report-format.md, "cause").
enum class CauseKind : uint8_t {
  kNone = 0,   // not known: a busy sample, or a wait nothing could be said about
  kCpu,        // it computed
  kStarved,    // runnable, but waited for a CPU
  kThrottled,  // its cgroup's CPU quota was used up
  kPressure,   // the machine was short of CPU, memory or I/O
  kLock,       // a futex: a mutex, rwlock, condition variable or semaphore
  kDeadlock,   // a chain of lock owners that comes back to a thread already in it
  kIo,         // a file or a block device
  kFault,      // major page faults
  kIpc,        // a socket or a pipe
  kChild,      // a child process (wait4 / waitid)
  kSleep,      // nanosleep, clock_nanosleep, poll / select without descriptors
  kOther,      // another system call
};
// "", "cpu", "starved", "throttled", "pressure", "lock", "deadlock", "io", "fault", "ipc",
// "child", "sleep", "other".
constexpr const char* CauseKindName(CauseKind k) {
  switch (k) {
    case CauseKind::kCpu:
      return "cpu";
    case CauseKind::kStarved:
      return "starved";
    case CauseKind::kThrottled:
      return "throttled";
    case CauseKind::kPressure:
      return "pressure";
    case CauseKind::kLock:
      return "lock";
    case CauseKind::kDeadlock:
      return "deadlock";
    case CauseKind::kIo:
      return "io";
    case CauseKind::kFault:
      return "fault";
    case CauseKind::kIpc:
      return "ipc";
    case CauseKind::kChild:
      return "child";
    case CauseKind::kSleep:
      return "sleep";
    case CauseKind::kOther:
      return "other";
    case CauseKind::kNone:
      break;
  }
  return "";
}

// One sampling attempt.
struct TimelineEntry {
  uint32_t t_ms = 0;    // since the pass began (estimated), stopped time excluded
  int stack = -1;       // Stack::id, or -1 when the capture failed / the table was full
  uint32_t cpu_us = 0;  // main-thread CPU time since the previous sample
  char state = '?';     // scheduler state (R, S, D, T, ...) or '?'
  SampleMethod method = SampleMethod::kUnknown;  // kUnknown for a failed capture
  CauseKind cause = CauseKind::kNone;            // why this sample waited, when known
  int64_t cause_tid = 0;  // the thread it waited for (a lock's owner), 0 when none
};

struct ModuleInfo {
  std::string path;
  uint64_t base = 0;  // load bias: addr = base + offset
  std::string build_id;
};

// The frame a user would name as the cause: among the functions of application frames (not the
// system's own libraries, such as libc, libstdc++, the dynamic loader or the vDSO, nor a language
// runtime's machinery, such as an interpreter's eval loop and call dispatch or Python's standard
// library) present in at least half of the hang's samples, the innermost (docs/report-format.md
// has the exact rule); when there is none, the innermost application frame of the dominant stack
// (when every frame is the system's or a runtime's, its innermost one). In a stack with Python
// frames, the innermost application Python function, not the C code it called. Empty (symbol
// and module "") when no stack.
struct Culprit {
  std::string symbol;   // demangled function name; empty when unknown
  std::string module;   // path of the module; empty for code outside any module (e.g. JIT)
  uint64_t offset = 0;  // Frame::offset of that frame (names it when the symbol is unknown)
  std::string file;     // source file; empty when unknown
  int line = 0;         // source line; 0 when unknown
  int frame = -1;       // index in the frames of stacks[stack], -1 when none
  int stack = 0;        // index of the stack that holds it: the dominant one (0) when it does
  // Interpreted: a Python, JavaScript or Ruby function (symbol its name, module empty, offset
  // the instruction's position); JSON: "kind": "python" / "js" / "ruby" in the culprit object.
  FrameLanguage language = FrameLanguage::kNative;
  // As Frame::line_is_definition. JSON: "line_is_definition": true (absent when false).
  bool line_is_definition = false;

  bool empty() const { return frame < 0; }
};

// A lock as a cause names it.
struct CauseLock {
  std::string type;   // "mutex", "recursive_mutex", ..., "rwlock", "condition_variable",
                      // "semaphore", "unknown" (docs/report-format.md)
  uint64_t addr = 0;  // its address in the process
  bool empty() const { return type.empty(); }
};

// A thread of the same process on the other side of a wait: a lock's owner, a link of a chain
// of owners, a thread of a deadlock cycle. Its stack was captured in the same sample.
struct CauseThread {
  int64_t tid = 0;
  std::string name;     // its thread name (comm)
  char state = '?';     // scheduler state when read
  std::string syscall;  // the system call it sleeps in ("fsync(fd 3)"), "" when running/unknown
  CauseLock wants;      // the lock it waits for; empty when none
  CauseLock holds;      // the lock of the chain it holds; empty when not known
  std::vector<Frame> frames;  // innermost first, as Stack::frames
  Culprit culprit;            // from frames, as a hang's
};

// A process on the other side of a wait: a child, a pipe's or a socket's peer.
struct CauseProcess {
  int64_t pid = 0;
  std::string name;
  char state = '?';
};

// Why the hang waited (docs/report-format.md, "cause"). Only the fields of its kind are set.
struct Cause {
  CauseKind kind = CauseKind::kNone;
  std::string summary;  // one line for humans
  std::string syscall;  // the main thread's system call, formatted ("futex(0x55b7..., WAIT)")
  // lock, deadlock
  CauseLock lock;                  // the lock the main thread waits for
  bool has_owner = false;          // owner is set (a lock with an owner)
  CauseThread owner;               // the lock's owner (chain[0])
  std::vector<CauseThread> chain;  // the owner, then the owner of the lock it waits for, ...
  bool chain_truncated = false;    // the chain went on past 4 threads
  std::vector<CauseThread> cycle;  // deadlock: every thread of the cycle (the main thread too
                                   // when it is in it)
  // child
  CauseProcess child;
  // sleep
  uint64_t sleep_ms = 0;       // the time asked for, 0 when unknown
  bool sleep_forever = false;  // pause(), poll with no timeout
  // io, fault, ipc
  std::string path;   // the file (io), the socket's path (ipc)
  std::string wchan;  // the kernel function the thread sleeps in
  // io: the thread's kernel stack, innermost first ("request_wait_answer <- ..."); "" when
  // /proc/self/task/TID/stack cannot be read (it needs root).
  std::string kernel_stack;
  uint64_t major_faults = 0;
  std::string mapping;  // fault: the mapping the faults fell in
  std::vector<int> fds;
  std::vector<CauseProcess> peers;  // ipc: the processes at the other end
  std::string local_address;        // ipc, TCP/UDP: "127.0.0.1:5432"
  std::string remote_address;
  // starved, throttled, pressure
  uint64_t run_delay_ms = 0;       // time spent waiting for a CPU during the hang
  uint32_t runnable_threads = 0;   // other threads of the process runnable meanwhile
  uint64_t throttled_ms = 0;       // cgroup throttled_usec delta
  uint64_t nr_throttled = 0;       // cgroup nr_throttled delta
  std::string pressure_resource;   // "cpu", "memory", "io"
  double pressure_some_avg10 = 0;  // /proc/pressure/<resource> "some avg10" (percent)
  double pressure_full_avg10 = 0;

  bool empty() const { return kind == CauseKind::kNone; }
};

// What began the pass: the event its loop's wait returned (Context::trigger), described by the
// watchdog when the pass became slow (docs/context.md lists the kinds).
struct Trigger {
  // One of a fixed set: "socket" (data on a connected socket), "listen" (a listening socket: a
  // new connection), "pipe", "timer", "eventfd", "signal" (a signalfd, or the wait was
  // interrupted), "inotify", "display" (the X11 or Wayland connection), "file", "timeout"
  // (nothing was ready: the wait's own time-out, a timer the loop computed), "other".
  std::string kind;
  // What the watchdog saw more precisely: "tcp", "udp", "unix" (a socket), "fifo" (a pipe),
  // "timerfd", "signalfd", "interrupted" (a signal), "device", "pidfd", "epoll", "anon",
  // "gone" (the descriptor was closed or reused before it could be described: kind "other").
  // Empty when the kind says it all (report/trigger_kind.h).
  std::string detail;
  int fd = -1;          // the ready descriptor; -1 for timeout and signal
  uint32_t ready = 0;   // how many the wait returned ready
  std::string peer;     // a socket's other end ("127.0.0.1:5555", "/run/app.sock"), a file's path
  int64_t pid = 0;      // the process at the other end, when it is on this machine; 0 if not
  std::string process;  // its name
  uint64_t timeout_ms = 0;  // timeout: what the wait asked for
};

// What the pass was serving (docs/context.md). Each part is present when known.
struct Context {
  std::string label;                    // the innermost hangwatch::ScopedLabel
  std::vector<std::string> label_path;  // every label, outermost first (label is the last)
  uint32_t label_depth = 0;             // labels on the stack (more than label_path keeps)
  bool has_trigger = false;
  Trigger trigger;
  std::string source;    // what an adapter dispatched (a GLib source's name, a Qt event...)
  std::string callback;  // the source's callback, symbolized ("on_tick"), else "module+0xoffset"
  bool empty() const {
    return label_path.empty() && !has_trigger && source.empty() && callback.empty();
  }
};

// Whether input waited during the hang, read on the display connection without consuming it
// (docs/context.md). known false: no display connection (JSON: "input" absent, read as null).
struct Input {
  bool known = false;
  bool pending = false;             // input events (or a ping) were waiting
  uint32_t events = 0;              // input events waiting at the hang's last look
  bool events_lower_bound = false;  // part of the bytes could not be parsed: at least `events`
  bool oldest_known = false;        // the events' server times could be compared
  uint64_t oldest_ms = 0;           // how long the oldest had waited by then
  std::vector<std::string> kinds;   // "key", "button", "motion", "touch", "ping", "other"
  bool ping = false;                // a window manager's _NET_WM_PING waited
  uint64_t ping_ms = 0;             // how long it had waited
};

struct HangRecord {
  int64_t pid = 0;
  int64_t tid = 0;  // the thread that hung
  // Which thread that was (hangwatch/threads.h): its own name (comm, at most 15 bytes) and the
  // role it was watched under ("main" for the thread that called Start(); empty in records of
  // agents that watched only it, read as "main").
  std::string thread_name;
  std::string thread_role;
  std::string process;       // main executable path
  std::string process_name;  // how users name the process: argv[0]'s file name, else comm
  std::string host;          // the machine's host name
  // Deployment labels (app version, build, region, ...): Config::labels, HANGWATCH_LABELS.
  std::map<std::string, std::string> labels;
  uint64_t hang_id = 0;       // sequence number within this process run
  int64_t start_unix_ms = 0;  // wall clock when the watchdog first saw the pass running
  // The pass's duration as the watched thread measured it when passes are timed
  // (Config::time_every_pass, always under the preload shim), else the watchdog's estimate;
  // stopped / suspended time excluded either way.
  uint64_t duration_ms = 0;
  uint64_t cpu_ms = 0;
  uint32_t cpu_percent = 0;  // 0..100
  HangClass hang_class = HangClass::kUnknown;
  uint64_t stopped_ms = 0;  // time excluded from duration_ms
  uint32_t threshold_ms = 0;
  uint32_t sample_interval_ms = 0;
  uint32_t samples = 0;  // successful captures
  uint32_t failed_samples = 0;
  uint32_t dropped_stacks = 0;  // samples whose stack did not fit in the stack table
  bool fatal = false;           // still open when the process died
  HangPhase phase = HangPhase::kRun;
  std::string fingerprint;  // 16 hex digits, stable across runs of the same build
  // 16 hex digits over the function names of the top in-app frames of the dominant stack:
  // stable across builds (and machines) of the same code. Empty when no stack.
  std::string signature;
  Culprit culprit;            // from the dominant stack
  int dominant_stack = -1;    // index in stacks, -1 when none
  std::vector<Stack> stacks;  // sorted by count, descending
  std::vector<TimelineEntry> timeline;
  bool timeline_truncated = false;
  std::vector<ModuleInfo> modules;  // modules referenced by the frames
  Cause cause;                      // why it waited; empty when not known
  // hangwatch's own cost: the main thread's total pause for captures during the hang (the sum
  // of the samples' pause times; a sample read through /proc pauses nothing).
  uint64_t monitor_pause_us = 0;
  // What the pass was serving; whether a person was kept waiting (docs/context.md).
  Context context;
  Input input;
  // Input (or a window manager's ping) waited longer than Config::perceived_ms during the hang:
  // true; a display connection was read and nothing waited: false; unknown (no display, or the
  // toolkit may have read the events into its own queue first): nullopt.
  std::optional<bool> perceived;
  bool not_responding = false;  // a ping waited longer than the desktop's timeout (5 s)
  // How long past its due time the work the pass dispatched began (a timer that ran late: a
  // GLib timeout source, docs/context.md); -1 when not known.
  int64_t queued_ms = -1;

  const Stack* dominant() const {
    return dominant_stack >= 0 && static_cast<size_t>(dominant_stack) < stacks.size()
               ? &stacks[static_cast<size_t>(dominant_stack)]
               : nullptr;
  }
};

}  // namespace hangwatch

#endif  // HANGWATCH_HANG_RECORD_H_
