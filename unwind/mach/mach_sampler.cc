#include "unwind/mach/mach_sampler.h"

#if defined(__APPLE__)

#include <mach/mach.h>
#include <mach/mach_time.h>
#include <mach/thread_act.h>
#include <mach/thread_info.h>
#include <mach/vm_map.h>
#include <pthread.h>
#include <time.h>

#include "unwind/mach/run_state.h"
#include "unwind/mach/stack_range.h"
#include "unwind/pointer_auth.h"

namespace hangwatch::unwind::mach {

static_assert(kThStateRunning == TH_STATE_RUNNING && kThStateStopped == TH_STATE_STOPPED &&
                  kThStateWaiting == TH_STATE_WAITING &&
                  kThStateUninterruptible == TH_STATE_UNINTERRUPTIBLE &&
                  kThStateHalted == TH_STATE_HALTED && kThFlagsIdle == TH_FLAGS_IDLE,
              "run_state.h mirrors <mach/thread_info.h>");

namespace {

#if defined(__aarch64__)
using NativeThreadState = arm_thread_state64_t;
constexpr thread_state_flavor_t kStateFlavor = ARM_THREAD_STATE64;
constexpr mach_msg_type_number_t kStateCount = ARM_THREAD_STATE64_COUNT;

Registers RegistersFromState(const NativeThreadState& state) {
  Registers regs;
#if defined(HANGWATCH_HAVE_PTRAUTH)
  // arm64e: the kernel hands out pc and lr signed. Strip, never authenticate: a failed
  // authentication can fault on cores with FEAT_FPAC, and a wrong address only costs a frame.
  regs.pc = StripPointerAuth(reinterpret_cast<uintptr_t>(state.__opaque_pc));
  regs.lr = StripPointerAuth(reinterpret_cast<uintptr_t>(state.__opaque_lr));
  regs.fp = StripPointerAuth(reinterpret_cast<uintptr_t>(state.__opaque_fp));
  regs.sp = StripPointerAuth(reinterpret_cast<uintptr_t>(state.__opaque_sp));
#else
  regs.pc = __darwin_arm_thread_state64_get_pc(state);
  regs.lr = __darwin_arm_thread_state64_get_lr(state);
  regs.fp = __darwin_arm_thread_state64_get_fp(state);
  regs.sp = __darwin_arm_thread_state64_get_sp(state);
#endif
  return regs;
}
#elif defined(__x86_64__)
using NativeThreadState = x86_thread_state64_t;
constexpr thread_state_flavor_t kStateFlavor = x86_THREAD_STATE64;
constexpr mach_msg_type_number_t kStateCount = x86_THREAD_STATE64_COUNT;

Registers RegistersFromState(const NativeThreadState& state) {
  Registers regs;
  regs.pc = state.__rip;
  regs.sp = state.__rsp;
  regs.fp = state.__rbp;
  regs.lr = 0;  // no link register: the return address is on the stack
  return regs;
}
#else
#error "MachSampler supports arm64 and x86_64"
#endif

bool IsThreadGone(kern_return_t kr) {
  return kr == KERN_INVALID_ARGUMENT || kr == MACH_SEND_INVALID_DEST || kr == KERN_TERMINATED;
}

// Copies registers and the stack slice of the suspended thread. Runs between thread_suspend
// and thread_resume: Mach traps, arithmetic and commpage clock reads only. Never returns
// without the caller resuming the thread (it has no exits of its own beyond `return`).
CaptureStatus CopyWhileSuspended(thread_act_t port, const StackBounds& bounds, uint64_t start,
                                 uint64_t budget_ticks, CaptureBuffer* out) {
  NativeThreadState state{};
  mach_msg_type_number_t count = kStateCount;
  const kern_return_t kr =
      thread_get_state(port, kStateFlavor, reinterpret_cast<thread_state_t>(&state), &count);
  if (kr != KERN_SUCCESS) {
    return IsThreadGone(kr) ? CaptureStatus::kThreadExited : CaptureStatus::kError;
  }
  out->regs = RegistersFromState(state);
  if (mach_absolute_time() - start > budget_ticks) {
    return CaptureStatus::kTimedOut;  // keep the window short: registers only
  }

  const StackCopyRange range = StackRangeToCopy(out->regs.sp, bounds, out->max_stack_bytes());
  if (range.hi <= range.lo) return CaptureStatus::kOk;
  vm_size_t copied = 0;
  const auto dst = reinterpret_cast<vm_address_t>(out->stack_storage());
  kern_return_t read =
      vm_read_overwrite(mach_task_self(), range.lo, range.hi - range.lo, dst, &copied);
  if (read != KERN_SUCCESS) {
    // Part of the range is not mapped (sp outside any recorded stack): retry up to the end of
    // the page that holds sp, which is mapped if sp means anything.
    const uintptr_t page_end = (out->regs.sp | (vm_page_size - 1)) + 1;
    if (page_end > range.lo && page_end - range.lo < range.hi - range.lo) {
      read = vm_read_overwrite(mach_task_self(), range.lo, page_end - range.lo, dst, &copied);
    }
  }
  if (read == KERN_SUCCESS) {
    out->stack_base = range.lo;
    out->stack_size = copied;
  }
  return CaptureStatus::kOk;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::unique_ptr<MachSampler> MachSampler::Create(const MachSamplerOptions& options,
                                                 std::string* error) {
  mach_timebase_info_data_t timebase{};
  if (mach_timebase_info(&timebase) != KERN_SUCCESS || timebase.denom == 0) {
    if (error != nullptr) *error = "mach_timebase_info failed";
    return nullptr;
  }
  return std::unique_ptr<MachSampler>(new MachSampler(options, timebase.numer, timebase.denom));
}

MachSampler::MachSampler(const MachSamplerOptions& options, uint32_t numer, uint32_t denom)
    : options_(options), timebase_numer_(numer), timebase_denom_(denom) {}

uint64_t MachSampler::TicksToNs(uint64_t ticks) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * timebase_numer_ /
                               timebase_denom_);
}

uint64_t MachSampler::NsToTicks(uint64_t ns) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * timebase_denom_ /
                               timebase_numer_);
}

CaptureStatus MachSampler::Capture(const ThreadInfo& target, CaptureBuffer* out) {
  if (out == nullptr) return CaptureStatus::kError;
  out->Reset();
  out->method = SampleMethod::kMach;
  if (target.handle == pthread_t{}) {
    return CaptureStatus::kError;  // never registered
  }
  // Looked up before suspending: pthread_mach_thread_np may take libpthread's list lock.
  const thread_act_t port = pthread_mach_thread_np(target.handle);
  if (port == MACH_PORT_NULL) return CaptureStatus::kThreadExited;
  if (port == pthread_mach_thread_np(pthread_self())) return CaptureStatus::kError;
  const uint64_t budget = NsToTicks(static_cast<uint64_t>(options_.max_pause.count()));
  out->timestamp_ns = MonotonicNs();

  // ---- suspended window: nothing between these two calls may allocate, lock or log ----
  const uint64_t start = mach_absolute_time();
  const kern_return_t suspended = thread_suspend(port);
  if (suspended != KERN_SUCCESS) {
    return IsThreadGone(suspended) ? CaptureStatus::kThreadExited : CaptureStatus::kError;
  }
  const CaptureStatus status = CopyWhileSuspended(port, target.stack, start, budget, out);
  const kern_return_t resumed = thread_resume(port);
  out->pause_ns = TicksToNs(mach_absolute_time() - start);
  // ---- the target runs again ----

  if (resumed != KERN_SUCCESS) {
    // Only a thread that died while suspended refuses to resume.
    return CaptureStatus::kThreadExited;
  }
  if (status != CaptureStatus::kOk) return status;

  const WalkResult walk = WalkFramePointersStripped(out->stack_view(), out->regs,
                                                    out->frame_storage(), out->max_frames());
  out->num_frames = walk.num_frames;
  out->frames_truncated = walk.truncated;

  thread_basic_info_data_t info{};
  mach_msg_type_number_t info_count = THREAD_BASIC_INFO_COUNT;
  if (thread_info(port, THREAD_BASIC_INFO, reinterpret_cast<thread_info_t>(&info), &info_count) ==
      KERN_SUCCESS) {
    const auto to_ns = [](const time_value_t& t) {
      return static_cast<uint64_t>(t.seconds) * 1000000000u +
             static_cast<uint64_t>(t.microseconds) * 1000u;
    };
    out->cpu_time_ns = to_ns(info.user_time) + to_ns(info.system_time);
    out->sched_state = SchedStateFromRunState(info.run_state, info.flags);
  }
  return CaptureStatus::kOk;
}

bool IsMainThread() { return pthread_main_np() != 0; }

}  // namespace hangwatch::unwind::mach

#endif  // defined(__APPLE__)
