// libhangwatch_preload_agent.so: the preload shim's agent side, loaded by the loader
// (libhangwatch_preload.so, agent_loader.cc) when the main thread first waits for events. It
// reads the HANGWATCH_* settings (preload_config.h), reports a slow start-up, starts the agent
// (hangwatch::Start, linked in statically), and serves the loader's calls through the table of
// agent_entry.h, its one exported symbol. Everything else is hidden (preload_agent.map), so
// nothing of the agent clashes with a program that links libhangwatch itself.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "agent/context/context_probe.h"
#include "agent/core/exit_flush.h"
#include "agent/core/labels.h"
#include "agent/sinks/jsonl_sink.h"
#include "agent/threads/agent_thread.h"
#include "hang/files/kept_files.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch/threads.h"
#include "integrations/preload/agent_entry.h"
#include "integrations/preload/agent_stderr_logger.h"
#include "integrations/preload/glib_sources.h"
#include "integrations/preload/open_hang_path.h"
#include "integrations/preload/preload_config.h"
#include "report/report_record.h"
#include "unwind/proc_files.h"

namespace hangwatch::preload {
namespace {

const HangwatchPreloadServices* g_services = nullptr;
PreloadConfig* g_config = nullptr;  // leaked on purpose: used until exit
// Hangs name what GLib dispatched (glib_sources.h): not with HANGWATCH_CONTEXT=0. Set by Arm().
bool g_glib_sources = false;

// This process's open-hang file, removed by an _exit() once the watchdog has written the hang
// (exit() has Stop() remove it). Fixed storage: read in _exit(), maybe in a signal handler.
char g_open_hang_path[4096];
dev_t g_open_hang_dev = 0;
ino_t g_open_hang_ino = 0;

void PrintLine(const std::string& line) { g_services->print_line(line.c_str()); }

void NoteOpenHangFile(const std::string& path) {
  struct stat st {};
  g_open_hang_path[0] = '\0';
  if (path.empty() || path.size() >= sizeof g_open_hang_path || lstat(path.c_str(), &st) != 0) {
    return;
  }
  memcpy(g_open_hang_path, path.c_str(), path.size() + 1);
  g_open_hang_dev = st.st_dev;
  g_open_hang_ino = st.st_ino;
}

// Async-signal-safe: lstat and unlink. Only while the name is still our file.
void RemoveOpenHangFile() {
  struct stat st {};
  if (g_open_hang_path[0] != '\0' && lstat(g_open_hang_path, &st) == 0 &&
      st.st_dev == g_open_hang_dev && st.st_ino == g_open_hang_ino) {
    unlink(g_open_hang_path);
  }
}

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string ExePath() {
  char buf[4096];
  const ssize_t n = unwind::ReadExePath(buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// One {"type":"startup_stall"} record (docs/report-format.md), written to the report file by
// the agent's JSON Lines sink, as the agent's hangs will be: the report codec's encoding, one
// write per line, rotation and torn-line recovery.
// `startup_ms`: from load to the first wait; `since_load_ms`: from load to now.
void ReportStartupStall(uint64_t startup_ms, uint64_t since_load_ms) {
  const auto& c = *g_config;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  if (c.log) {
    char line[256];
    snprintf(line, sizeof line,
             "hangwatch: start-up stall: the main thread first waited for events %llu ms after "
             "start (start-up threshold %u ms)",
             static_cast<unsigned long long>(startup_ms), c.startup_ms);
    g_services->print_line(line);
  }
  if (c.report_path.empty()) return;
  report::StartupStall stall;
  stall.pid = getpid();
  stall.process = ExePath();
  stall.start_unix_ms = now_ms - static_cast<int64_t>(since_load_ms);
  stall.duration_ms = startup_ms;
  stall.threshold_ms = c.startup_ms;
  // The agent's file settings: the same size limit as the hangs written to this file later.
  agent::JsonlSink sink(c.report_path, Config{}.json_max_bytes);
  std::string error;
  agent::SinkErrors errors;
  // Failures are not reported: the stderr line above is the live report, and the agent,
  // started next with the same path, says so if the file cannot be written.
  if (sink.Open(&error)) sink.OnStartupStall(stall, &errors);
}

void Prepare() {
  if (g_config != nullptr) return;
  std::vector<std::string> warnings;
  g_config = new PreloadConfig(
      g_services->secure != 0
          ? SecureExecutionConfig()
          : ReadPreloadConfig([](const char* name) { return g_services->setting(name); },
                              &warnings));
  for (const auto& w : warnings) PrintLine("hangwatch preload: " + w);
  // Records the report file did not take reach `hangwatch run` through the launch log.
  agent::SetUnwrittenRecordObserver(g_services->launch_log_unwritten);
}

void SettingsFiles(const char** report_path, const char** open_hang_dir) {
  *report_path = g_config != nullptr ? g_config->report_path.c_str() : "";
  *open_hang_dir = g_config != nullptr ? g_config->open_hang_dir.c_str() : "";
}

// This process's open-hang file, "" for none: none configured, or out of reach since the
// process changed user (OpenHangFileOutOfReach, shim_state.h; said on stderr).
std::string OpenHangPath(const std::string& dir) {
  char path[4096];
  if (dir.empty() || !FormatOpenHangPath(dir.c_str(), getpid(), path, sizeof path)) return "";
  // A worker forked after its parent changed user cannot create its own (privilege_drop.cc):
  // watched without one rather than not at all.
  if (g_services->open_hang_file_out_of_reach(path) != 0) {
    PrintLine(std::string("hangwatch preload: no open-hang file: this process changed user and "
                          "cannot create ") +
              path + "; a hang that kills it is not reported");
    return "";
  }
  return path;
}

// The main thread reached its event loop: arm the agent. Runs once per process.
void Arm(uint64_t load_ns, uint64_t first_wait_ns, HangwatchPreloadArmed* out) {
  Prepare();
  const auto& c = *g_config;
  const uint64_t startup_ms = (first_wait_ns - load_ns) / 1000000u;
  if (c.startup_stall && startup_ms > c.startup_ms) {
    ReportStartupStall(startup_ms, (MonotonicNs() - load_ns) / 1000000u);
  }

  Config config;
  config.threshold = std::chrono::milliseconds(c.threshold_ms);
  config.sample_interval = std::chrono::milliseconds(c.sample_ms);
  if (c.max_frames != 0) config.max_frames = c.max_frames;
  config.json_path = c.report_path;
  config.log_hangs = c.log && g_services->stderr_usable() != 0;
  if (config.log_hangs) config.logger = GuardedStderrLogger(g_services->stderr_usable);
  config.log_lag = c.log_lag;
  // The shim is on every wait already: timing each pass costs two counter reads.
  config.time_every_pass = c.time_passes;
  config.lag_interval = std::chrono::milliseconds(c.lag_interval_ms);
  config.open_hang_path = OpenHangPath(c.open_hang_dir);
  // The agent reads HANGWATCH_LABELS from the environment; a program that replaced its
  // environment (nginx's workers) has them only as they were at load.
  if (agent::LabelsVariable() == nullptr) {
    if (const char* labels = g_services->setting("HANGWATCH_LABELS")) {
      std::string error;
      if (!agent::ParseLabels(labels, &config.labels, &error)) {
        PrintLine("hangwatch preload: HANGWATCH_LABELS: " + error);
      }
    }
  }
  // A GLib loaded already is wrapped now, before the loop's first pass. One loaded later
  // (Python's `import gi`, a plug-in) is looked for again on the watchdog thread at each hang
  // until found (and when another loop thread is watched): never on the loop's own path (a wait,
  // a wake-up), and a program without GLib pays one read of /proc/self/maps per hang (no
  // dlopen() from the watchdog before GLib is mapped: glib_sources.h). The hang that
  // finds it is not named (its dispatch began unwrapped); those after it are.
  g_glib_sources = agent::ContextOptionsFor(true, false, 0).context;
  if (g_glib_sources && !WrapGLibSourcesIfLoaded()) {
    config.on_hang = [](const HangRecord&) {
      if (GLibIsMapped()) WrapGLibSourcesIfLoaded();
    };
  }
  const Status status = Start(config);
  out->inherit = c.inherit ? 1 : 0;
  out->armed = status.ok() ? 1 : 0;
  out->other_threads = c.threads.WatchesOtherThreads() ? 1 : 0;
  if (status.ok()) {
    NoteOpenHangFile(config.open_hang_path);
  } else {
    snprintf(out->why, sizeof out->why, "%s", status.message().c_str());
  }
}

void AboutToWaitEntry() { AboutToWait(); }
void WokeUpEntry() { WokeUp(); }
// WokeUp(), then what the wait returned, stamped with the pass it began
// (hangwatch/internal/pass_context.h): cleared stamp, words, stamp.
void WokeUpFromEntry(uint64_t trigger, uint64_t data, uint64_t events) {
  WokeUp();
  std::atomic<uint64_t>* state = internal::t_run_loop_state;
  if (state == nullptr || trigger == 0) return;
  internal::PassContext& c = internal::ContextOf(state);
  c.trigger_pass.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  c.trigger.store(trigger, std::memory_order_relaxed);
  c.trigger_data.store(data, std::memory_order_relaxed);
  c.trigger_events.store(events, std::memory_order_relaxed);
  c.trigger_pass.store(internal::RunLoopState(*state), std::memory_order_release);
}

// The watch of a thread the loader found runs a loop (thread_waits.h), destroyed when the thread
// exits: the agent lets its slot go then.
thread_local ThreadWatch t_loop_thread_watch;

// The calling thread runs a loop: watch it when HANGWATCH_THREADS selects its name, with that
// name as its role (agent_entry.h: watch_thread).
int WatchThreadEntry() {
  char name[16] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  if (g_config == nullptr || !g_config->threads.Selects(name) || agent::IsAgentThread()) {
    return HANGWATCH_THREAD_NOT_SELECTED;
  }
  if (!IsRunning()) return HANGWATCH_THREAD_NOT_SELECTED;  // stopped at exit meanwhile
  if (g_glib_sources) WrapGLibSourcesIfLoaded();
  t_loop_thread_watch = WatchThread(name[0] != '\0' ? name : "thread");
  // Not watched while the agent runs: every slot is taken (GetStats().threads_not_watched
  // counts it too).
  return t_loop_thread_watch.watching() ? HANGWATCH_THREAD_WATCHED : HANGWATCH_THREAD_LEFT_OUT;
}

// From _exit()/_Exit(), any thread, maybe a signal handler: atomic loads and stores, a futex
// wake and a bounded nanosleep poll (agent/core/exit_flush.h), lstat and unlink.
// FlushBeforeExit() ends the pass under way when it runs on the watched thread (a shutdown-phase
// pass, counted in the last interval): `on_main_thread` is the loader's view of the same fact.
void BeforeExit(int /*on_main_thread*/) {
  // The watchdog wrote the hang open now, if any: the open-hang file says nothing any more (a
  // prefork server's exited workers would otherwise leave one each in the run directory).
  if (agent::FlushBeforeExit()) RemoveOpenHangFile();
}

void StopAtExit() { agent::StopAtProcessExit(); }

const HangwatchPreloadAgent kEntries = {
    HANGWATCH_PRELOAD_ABI, Prepare,          SettingsFiles, Arm,        AboutToWaitEntry,
    WokeUpEntry,           WatchThreadEntry, BeforeExit,    StopAtExit, WokeUpFromEntry,
};

}  // namespace
}  // namespace hangwatch::preload

extern "C" __attribute__((visibility("default"))) const HangwatchPreloadAgent*
hangwatch_preload_agent_init(const HangwatchPreloadServices* services) {
  if (services == nullptr || services->abi != HANGWATCH_PRELOAD_ABI ||
      services->print_line == nullptr || services->stderr_usable == nullptr ||
      services->launch_log_unwritten == nullptr || services->dup_kept_file == nullptr ||
      services->open_hang_file_out_of_reach == nullptr || services->setting == nullptr) {
    return nullptr;
  }
  hangwatch::preload::g_services = services;
  // One table of kept descriptors per process: the loader's, filled before the program changed
  // user (hang/files/kept_files.h). This library's own copy stays empty.
  hangwatch::agent::SetKeptFileSource(services->dup_kept_file);
  return &hangwatch::preload::kEntries;
}
