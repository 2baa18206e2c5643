#include "integrations/preload/shim_stderr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "integrations/preload/stderr_policy.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace hangwatch::preload {
namespace {

// The file allowed at the last decision (dev 0 and ino 0: none). Read by any thread.
std::atomic<bool> g_allowed{false};
std::atomic<uint64_t> g_dev{0};
std::atomic<uint64_t> g_ino{0};

StderrFile DescribeStderr() {
  StderrFile f;
  struct stat st {};
  if (fstat(2, &st) != 0) return f;
  f.open = true;
  f.mode = st.st_mode;
  f.is_terminal = isatty(2) == 1;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  return f;
}

// Forwards to spdlog's stderr sink while descriptor 2 is still the allowed file.
class GuardedSink final : public spdlog::sinks::sink {
 public:
  GuardedSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}
  void log(const spdlog::details::log_msg& msg) override {
    if (StderrUsable()) inner_->log(msg);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> inner_;
};

}  // namespace

void DecideStderr(bool allowed) {
  const StderrFile f = DescribeStderr();
  const char* handed_over[] = {secure_getenv("HANGWATCH_STDERR"), secure_getenv("JOURNAL_STREAM")};
  const bool ok = allowed && MayPrintOn(f, handed_over, 2);
  g_dev.store(static_cast<uint64_t>(f.dev), std::memory_order_relaxed);
  g_ino.store(static_cast<uint64_t>(f.ino), std::memory_order_relaxed);
  g_allowed.store(ok, std::memory_order_release);
}

bool StderrUsable() {
  if (!g_allowed.load(std::memory_order_acquire)) return false;
  struct stat st {};
  return fstat(2, &st) == 0 &&
         static_cast<uint64_t>(st.st_dev) == g_dev.load(std::memory_order_relaxed) &&
         static_cast<uint64_t>(st.st_ino) == g_ino.load(std::memory_order_relaxed);
}

void ShimPrint(const char* format, ...) {
  if (!StderrUsable()) return;
  va_list args;
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
}

std::shared_ptr<spdlog::logger> GuardedStderrLogger() {
  // Leaked on purpose: the agent may log from Stop() at exit, after static destructors ran.
  static auto* logger = new std::shared_ptr<spdlog::logger>(
      std::make_shared<spdlog::logger>("hangwatch", std::make_shared<GuardedSink>()));
  return *logger;
}

}  // namespace hangwatch::preload
