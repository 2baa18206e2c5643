// MakeSystemWatchdogEnv for Apple platforms (the Linux one, over /proc, is
// agent/core/watchdog_env.cc).
//
// Clocks: CLOCK_UPTIME_RAW stops while the machine sleeps, CLOCK_MONOTONIC_RAW does not; their
// difference is the sleep time, as CLOCK_MONOTONIC / CLOCK_BOOTTIME are on Linux. Per-thread CPU
// time and run state come from thread_info(THREAD_BASIC_INFO) on the thread's Mach port; a
// debugger is P_TRACED in sysctl(KERN_PROC_PID). There is no per-thread scheduler-delay counter,
// so OwnSchedStat reports "unavailable" and the stop detection falls back to its clocks alone.
#if defined(__APPLE__)

#include <mach/mach.h>
#include <pthread.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <memory>

#include "agent/core/watchdog_env.h"
#include "unwind/mach/run_state.h"

namespace hangwatch::agent {
namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool BasicInfo(const unwind::ThreadInfo& thread, thread_basic_info_data_t* out) {
  const mach_port_t port = pthread_mach_thread_np(thread.handle);
  if (port == MACH_PORT_NULL) return false;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  return thread_info(port, THREAD_BASIC_INFO, reinterpret_cast<thread_info_t>(out), &count) ==
         KERN_SUCCESS;
}

class MachEnv final : public WatchdogEnv {
 public:
  uint64_t MonotonicNs() override { return ClockNs(CLOCK_UPTIME_RAW); }
  uint64_t BoottimeNs() override { return ClockNs(CLOCK_MONOTONIC_RAW); }
  int64_t UnixMs() override { return static_cast<int64_t>(ClockNs(CLOCK_REALTIME) / 1'000'000u); }
  bool ThreadCpuNs(const unwind::ThreadInfo& thread, uint64_t* out) override {
    thread_basic_info_data_t info{};
    if (!BasicInfo(thread, &info)) return false;
    const auto ns = [](time_value_t t) {
      return static_cast<uint64_t>(t.seconds) * 1'000'000'000u +
             static_cast<uint64_t>(t.microseconds) * 1'000u;
    };
    *out = ns(info.user_time) + ns(info.system_time);
    return true;
  }
  bool ThreadName(const unwind::ThreadInfo& thread, char out[16]) override {
    return pthread_getname_np(thread.handle, out, 16) == 0 && out[0] != '\0';
  }
  char SchedState(const unwind::ThreadInfo& thread) override {
    thread_basic_info_data_t info{};
    if (!BasicInfo(thread, &info)) return '?';
    return unwind::mach::SchedStateFromRunState(info.run_state, info.flags);
  }
  bool DebuggerAttached() override { return ReadTracerPid() != 0; }
  bool OwnSchedStat(uint64_t* /*cpu_ns*/, uint64_t* /*run_delay_ns*/) override { return false; }
};

}  // namespace

char ReadSchedState(pid_t /*tid*/) {
  // A Mach thread is named by its port, not its id; callers with a ThreadInfo use SchedState().
  return '?';
}

long ReadTracerPid() {
  kinfo_proc info{};
  size_t size = sizeof(info);
  int mib[] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()};
  if (sysctl(mib, 4, &info, &size, nullptr, 0) != 0 || size == 0) return 0;
  // Darwin does not name the tracer; any nonzero value means "traced".
  return (info.kp_proc.p_flag & P_TRACED) != 0 ? 1 : 0;
}

std::unique_ptr<WatchdogEnv> MakeSystemWatchdogEnv() { return std::make_unique<MachEnv>(); }

void NameWatchdogThread() { pthread_setname_np("hangwatch"); }  // Darwin names the caller only

}  // namespace hangwatch::agent

#endif  // defined(__APPLE__)
