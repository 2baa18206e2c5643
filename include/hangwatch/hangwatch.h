// hangwatch: an in-process monitor of the main thread's run loop.
//
//   hangwatch::Config config;                 // threshold 250 ms, sample every 25 ms
//   config.json_path = state_dir + "/hangs.jsonl";  // the app's own directory, not /tmp
//   if (auto status = hangwatch::Start(config); !status.ok()) { ... status.message() ... }
//   while (running) {
//     WaitForEvents();                         // idle: never a hang, however long
//     hangwatch::WorkScope pass;               // BeginWork() ... EndWork()
//     HandleEvents();                          // longer than the threshold: a hang
//   }
//   hangwatch::Stop();
//
// A watchdog thread looks at the run loop every check interval. A pass that has been running
// longer than `early_sampling_fraction * threshold` is sampled (registers, frames, CPU time,
// scheduler state) every sample interval; if it ends below the threshold the samples are
// dropped, if it crosses the threshold it is a hang and all samples are kept, so the report
// names the culprit even when it finished before the threshold. When the pass ends the hang is
// closed, deduplicated, classified (busy / blocked / mixed), kept in a fixed ring and handed to
// the sinks: spdlog, a JSON Lines file (docs/report-format.md), callbacks.
//
// Time during which the process was stopped (SIGSTOP, a debugger) or the machine suspended is
// not counted; while a debugger is attached nothing is reported unless asked for.
#ifndef HANGWATCH_HANGWATCH_H_
#define HANGWATCH_HANGWATCH_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hangwatch/export.h"
#include "hangwatch/hang_record.h"
#include "hangwatch/internal/pass_timer.h"
#include "hangwatch/pass_histogram.h"
#include "hangwatch/threads.h"
#include "hangwatch/work.h"

namespace spdlog {
class logger;  // only needed by callers that pass their own logger
}

namespace hangwatch {

using HangCallback = std::function<void(const HangRecord&)>;

// LagRecord (hangwatch/pass_histogram.h): one interval's run-loop pass durations.
using LagCallback = std::function<void(const LagRecord&)>;

struct Config {
  // A run-loop pass longer than this is a hang.
  std::chrono::milliseconds threshold{250};
  // How often a slow pass is sampled. 0: threshold / 10 (at least 1 ms).
  std::chrono::milliseconds sample_interval{0};
  // Sampling starts once a pass has run this fraction of the threshold (0 < f <= 1); samples of
  // a pass that ends below the threshold are dropped.
  double early_sampling_fraction = 0.5;
  // How often the watchdog looks at the run loop when nothing is slow. 0: threshold / 5 (but
  // at least the sample interval). A pass's start is known to within one check interval; a
  // reported duration is within one check interval plus one sample interval of the truth.
  std::chrono::milliseconds check_interval{0};

  // Per-capture and per-hang bounds. All memory is allocated by Start() and never grows.
  size_t max_frames = 64;               // frames kept per sample
  size_t stack_copy_bytes = 32 * 1024;  // stack copied per capture, unwound with CFI (0: FP only)
  size_t max_unique_stacks = 64;        // unique stacks kept per hang; more are counted as dropped
  size_t max_timeline = 1024;           // timeline entries kept per hang
  size_t ring_capacity = 16;            // recent hangs kept (oldest overwritten)
  std::chrono::milliseconds capture_timeout{20};
  int signal = 0;  // real-time signal for sampling; 0 picks a free one

  // ---- sinks ----
  // spdlog: one WARN line per hang followed by the dominant stack. nullptr: a logger named
  // "hangwatch" writing to stderr (created on first use, or taken from spdlog's registry).
  std::shared_ptr<spdlog::logger> logger;
  bool log_hangs = true;
  // With log_hangs and time_every_pass: one INFO line per lag record too ("lag over 60.0 s:
  // ..."). The preload shim turns it off unless HANGWATCH_LOG_LAG=1.
  bool log_lag = true;
  // JSON Lines file (docs/report-format.md); empty: none. Mode 0600; when a line would make
  // the file larger than json_max_bytes, it is renamed to PATH.1 first. Never opened through a
  // symbolic link, nor when it is a FIFO or a device: Start() fails. A line the file system
  // takes only in part (full disk) is taken back: no torn line is left.
  std::string json_path;
  uint64_t json_max_bytes = 16u << 20;
  // Called on the watchdog thread for every hang (in addition to AddHangCallback()'s).
  HangCallback on_hang;

  // Report hangs while a debugger is attached (TracerPid != 0). Off: breakpoints are not hangs.
  bool report_under_debugger = false;
  // ---- lag: every pass timed ----
  // Time every run-loop pass, not only the slow ones the watchdog sees: BeginWork()/EndWork()
  // read a clock (the CPU's constant-rate counter, else the vDSO's CLOCK_MONOTONIC) and count
  // the pass in a fixed-size histogram (hangwatch/pass_histogram.h). Costs about two clock
  // reads per pass; off, BeginWork()/EndWork() stay two relaxed stores. The preload shim
  // always turns it on.
  bool time_every_pass = false;
  // With time_every_pass: a {"type":"lag"} record (the interval's pass count, percentiles,
  // slow passes) goes to the sinks every lag_interval and at Stop(). 0: only at Stop().
  std::chrono::milliseconds lag_interval{60'000};

  // Deployment labels written on every record (app version, build, region, ...). Added to
  // those of HANGWATCH_LABELS="k=v,k=v" (a key in both: this one).
  std::map<std::string, std::string> labels;

  // File keeping the open hang and its samples (memory-mapped, updated at each sample), so a
  // hang that kills the process (SIGKILL, a system watchdog) is reported as fatal by the next
  // Start() with the same path. Empty: no such file. Created anew by Start() (a file already
  // there is read, then removed, never written into; a symbolic link, FIFO or device there
  // makes Start() fail) and removed by Stop().
  std::string open_hang_path;

  // ---- what a hang's pass was serving, and who felt it (hangwatch/context.h) ----
  // Each hang carries its pass's context: the ScopedLabel names, what began the pass (the wait's
  // ready descriptor, described: a socket and its peer, a timer, a pipe...; recorded by the
  // preload shim) and what an adapter dispatched (HangRecord::context). HANGWATCH_CONTEXT=0
  // turns it off.
  bool context = true;
  // Each hang looks at the display connection (X11, Wayland) without reading from it: input
  // waiting (HangRecord::input), and whether a person felt the hang (HangRecord::perceived:
  // input or a window manager's ping waited longer than perceived_after). HANGWATCH_INPUT=0
  // turns it off.
  bool input = true;
  std::chrono::milliseconds perceived_after{100};

  // ---- other threads (hangwatch/threads.h) ----
  // Threads watched besides the main one, at most. Fixed by the first Start() (or WatchThread())
  // of the process: the slots are never freed, so a thread's watch outlives Stop().
  size_t max_watched_threads = 64;
};

// The result of Start(): ok, or one line saying why not.
class HANGWATCH_EXPORT Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return message_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string message) : message_(std::move(message)) {
    if (message_.empty()) {
      message_ = "error";
    }
  }
  std::string message_;
};

// Starts the agent watching the CALLING thread (the main thread, role "main") and every thread
// that calls WatchThread() (hangwatch/threads.h). Fails when the agent is
// already running, the config is invalid, or no sampling signal can be installed. Reports a
// fatal hang left in config.open_hang_path by a previous run through the sinks.
HANGWATCH_EXPORT Status Start(const Config& config);
// Stops the watchdog (joining it), closes any hang whose pass has already ended, restores the
// sampling signal's previous disposition. Callable from any thread; no-op when not running.
// Start() may be called again afterwards.
HANGWATCH_EXPORT void Stop();
HANGWATCH_EXPORT bool IsRunning();

// The recent hangs (the ring), newest first, symbolized. Valid after Stop() until the next
// Start().
HANGWATCH_EXPORT std::vector<HangRecord> RecentHangs();

// Callbacks run on the watchdog thread, once per hang, after the hang is in the ring. They
// stay registered across Stop()/Start(). Returns an id for RemoveHangCallback().
HANGWATCH_EXPORT int AddHangCallback(HangCallback callback);
HANGWATCH_EXPORT bool RemoveHangCallback(int id);

// Callbacks run on the watchdog thread once per lag record (Config::time_every_pass, every
// Config::lag_interval and at Stop()), as the report's sinks get it. Same rules as the hang
// callbacks: registered across Stop()/Start(); an id for RemoveLagCallback().
HANGWATCH_EXPORT int AddLagCallback(LagCallback callback);
HANGWATCH_EXPORT bool RemoveLagCallback(int id);

// Logs every hang of the ring (oldest first) to `logger` (nullptr: the configured or default
// logger), in the same form as the live report.
HANGWATCH_EXPORT void DumpRecentHangs(spdlog::logger* logger = nullptr);

// Counters since the last Start().
struct Stats {
  // Run-loop pass durations as measured by the watchdog (it sees a pass only if it is still
  // running at one of its checks). Bucket 0: < 1 ms; bucket i in 1..kBuckets-2:
  // [2^(i-1), 2^i) ms; the last bucket: >= 2^(kBuckets-2) ms (about 4.4 minutes).
  static constexpr int kBuckets = 20;
  static uint64_t BucketLowerBoundMs(int i) { return i == 0 ? 0 : uint64_t{1} << (i - 1); }
  uint64_t pass_duration_ms_buckets[kBuckets] = {};
  uint64_t passes_seen = 0;       // passes begun (exact, from the pass counter)
  uint64_t passes_timed = 0;      // passes the watchdog saw running, i.e. in the histogram
  uint64_t hangs = 0;             // hangs closed and reported
  uint64_t hangs_suppressed = 0;  // hangs not reported because a debugger was attached
  uint64_t fatal_hangs = 0;       // fatal hangs read back from the open-hang file
  // Hand-overs of a hang (or lag record) to a sink that failed for want of memory.
  uint64_t hangs_unreported = 0;
  uint64_t samples = 0;  // captures that succeeded
  uint64_t failed_captures = 0;
  uint64_t early_samples_dropped = 0;  // samples of slow passes that ended below the threshold
  uint64_t stopped_ms = 0;             // time the watchdog saw the process stopped / suspended
  // Threads watched through WatchThread() / TaskScope now, and those that asked and were not
  // (every slot taken) since Start().
  uint64_t threads_watched = 0;
  uint64_t threads_not_watched = 0;
  // With Config::time_every_pass: every pass since Start(), timed exactly (lag.passes == 0
  // otherwise). The lag records of the sinks hold the same figures per interval.
  LagFigures lag;
};

// Every pass this process timed (Config::time_every_pass), across Stop() and Start(); empty
// when none was. Copy it before and after a stretch of work and take `after.Since(before)` for
// that stretch.
HANGWATCH_EXPORT PassHistogram PassDurations();
HANGWATCH_EXPORT Stats GetStats();

// One JSON Lines record (no trailing newline) exactly as the agent writes it.
HANGWATCH_EXPORT std::string ToJsonLine(const HangRecord& record);

}  // namespace hangwatch

#endif  // HANGWATCH_HANGWATCH_H_
