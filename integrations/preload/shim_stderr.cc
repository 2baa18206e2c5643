#include "integrations/preload/shim_stderr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>

#include "integrations/preload/load_environment.h"
#include "integrations/preload/stderr_policy.h"

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

}  // namespace

void DecideStderr(bool allowed) {
  const StderrFile f = DescribeStderr();
  const char* handed_over[] = {ShimSetting("HANGWATCH_STDERR"), ShimSetting("JOURNAL_STREAM")};
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

}  // namespace hangwatch::preload
