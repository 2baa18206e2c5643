#include "unwind/signal_sampler.h"

#include <signal.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "unwind/capture_hook.h"
#include "unwind/frame_walker.h"
#include "unwind/internal/task_file.h"
#include "unwind/signal_channel.h"

namespace hangwatch::unwind {

using internal::SignalChannel;

struct SignalSampler::HandlerState {
  HandlerState(size_t max_frames, size_t max_stack_bytes, size_t max_extra_words)
      : storage(max_frames, max_stack_bytes, max_extra_words) {}
  // Set by Capture() before each request is published; read by the handler after claiming it.
  StackBounds bounds;
  pid_t tid = 0;
  // Written only by the handler of a claimed request; read by Capture() once it is done.
  CaptureBuffer storage;
};

namespace {

#if defined(__x86_64__)
// The System V x86_64 ABI lets leaf functions use 128 bytes below rsp without moving it.
constexpr uintptr_t kRedZone = 128;
#else
constexpr uintptr_t kRedZone = 0;
#endif

Registers RegistersFromContext(const ucontext_t* context) {
  Registers regs;
#if defined(__x86_64__)
  const greg_t* gregs = context->uc_mcontext.gregs;
  regs.pc = static_cast<uintptr_t>(gregs[REG_RIP]);
  regs.sp = static_cast<uintptr_t>(gregs[REG_RSP]);
  regs.fp = static_cast<uintptr_t>(gregs[REG_RBP]);
#elif defined(__aarch64__)
  regs.pc = static_cast<uintptr_t>(context->uc_mcontext.pc);
  regs.sp = static_cast<uintptr_t>(context->uc_mcontext.sp);
  regs.fp = static_cast<uintptr_t>(context->uc_mcontext.regs[29]);
  regs.lr = static_cast<uintptr_t>(context->uc_mcontext.regs[30]);
#else
#error "SignalSampler supports Linux x86_64 and aarch64"
#endif
  return regs;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HANGWATCH_UNWIND_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HANGWATCH_UNWIND_SANITIZED 1
#endif
#endif

// Copies [src, src + size) of the interrupted thread's own stack. Under ASan the stack carries
// poisoned redzones around locals, so the copy must neither be instrumented nor go through the
// intercepted memcpy: byte by byte through a volatile pointer, which the compiler cannot turn
// back into a memcpy call. Otherwise the fastest copy there is.
__attribute__((no_sanitize("address", "thread", "hwaddress"))) void CopyStack(unsigned char* dst,
                                                                              uintptr_t src,
                                                                              size_t size) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an address taken from the target's registers.
  const auto* from = reinterpret_cast<const volatile unsigned char*>(src);
#if defined(HANGWATCH_UNWIND_SANITIZED)
  for (size_t i = 0; i < size; ++i) {
    dst[i] = from[i];
  }
#else
  __builtin_memcpy(dst, const_cast<const unsigned char*>(from), size);
#endif
}

// The body of the signal handler, on the target thread, for a claimed request.
void CaptureBody(void* arg, const ucontext_t* context) {
  const uint64_t start = internal::MonotonicNowNs();
  auto* state = static_cast<SignalSampler::HandlerState*>(arg);
  CaptureBuffer& out = state->storage;
  out.Reset();
  out.timestamp_ns = start;
  if (context == nullptr) {
    out.pause_ns = internal::MonotonicNowNs() - start;
    return;
  }
  const Registers regs = RegistersFromContext(context);
  out.regs = regs;
  const StackBounds bounds = state->bounds;

  // The live stack from sp to the thread's first frame: everything the walk may follow. If sp
  // is elsewhere (an alternate signal stack, a coroutine), only the pc is recorded.
  MemoryView live;
  if (regs.sp >= bounds.lo && regs.sp < bounds.hi) {
    live.base = regs.sp;
    live.size = bounds.hi - regs.sp;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the live stack, read in place.
    live.data = reinterpret_cast<const unsigned char*>(regs.sp);
  }
  const WalkResult walk = WalkFramePointers(live, regs, out.frame_storage(), out.max_frames());
  out.num_frames = walk.num_frames;
  out.frames_truncated = walk.truncated;

  if (live.size != 0) {
    uintptr_t lo = regs.sp;
    if (regs.sp - bounds.lo >= kRedZone) {
      lo = regs.sp - kRedZone;
    }
    const size_t size = std::min<size_t>(bounds.hi - lo, out.max_stack_bytes());
    CopyStack(out.stack_storage(), lo, size);
    out.stack_base = lo;
    out.stack_size = size;
  }
  // Last: a runtime's own state (the Python frames), read while the thread is still stopped.
  if (CaptureHook* hook = CurrentCaptureHook(); hook != nullptr && out.max_extra_words() > 0) {
    out.num_extra =
        hook->Read(state->tid, out.stack_view(), out.extra_storage(), out.max_extra_words());
  }
  out.pause_ns = internal::MonotonicNowNs() - start;
}

CaptureStatus StatusOf(SignalChannel::Outcome outcome) {
  switch (outcome) {
    case SignalChannel::Outcome::kDone:
      return CaptureStatus::kOk;
    case SignalChannel::Outcome::kThreadExited:
      return CaptureStatus::kThreadExited;
    case SignalChannel::Outcome::kSignalBlocked:
      return CaptureStatus::kSignalBlocked;
    case SignalChannel::Outcome::kTimedOut:
      return CaptureStatus::kTimedOut;
    case SignalChannel::Outcome::kBusy:
      return CaptureStatus::kBusy;
    case SignalChannel::Outcome::kError:
      return CaptureStatus::kError;
    case SignalChannel::Outcome::kHandlerReplaced:
      return CaptureStatus::kSignalTaken;
  }
  return CaptureStatus::kError;
}

}  // namespace

SignalSampler::SignalSampler(const SignalSamplerOptions& options)
    : options_(options),
      state_(std::make_unique<HandlerState>(std::max<size_t>(options.max_frames, 1),
                                            options.max_stack_bytes, options.max_extra_words)),
      state_files_(std::make_unique<internal::SchedStateFiles>()) {}

std::unique_ptr<SignalSampler> SignalSampler::Create(const SignalSamplerOptions& options,
                                                     std::string* error) {
  std::unique_ptr<SignalSampler> sampler(new SignalSampler(options));
  sampler->channel_ =
      SignalChannel::Create(options.signal, &CaptureBody, sampler->state_.get(), error);
  if (sampler->channel_ == nullptr) {
    return nullptr;
  }
  sampler->signal_ = sampler->channel_->signal();
  sampler->channel_->set_spin_ns(static_cast<uint64_t>(std::max<int64_t>(options.spin.count(), 0)));
  return sampler;
}

SignalSampler::~SignalSampler() {
  channel_.reset();
  if (SignalChannel::CaptureInFlight()) {
    // A thread stopped in the middle of the handler may still write into the storage: leaking
    // it is the only safe choice.
    (void)state_.release();
  }
}

SignalSampler::Stats SignalSampler::stats() {
  return Stats{SignalChannel::SignalsIgnored(), SignalChannel::RequestsAnswered()};
}

void SignalSampler::ForgetAfterFork() { SignalChannel::ForgetAfterFork(); }

CaptureStatus SignalSampler::Capture(const ThreadInfo& target, CaptureBuffer* out) {
  if (channel_ == nullptr) {
    return CaptureStatus::kNotStarted;
  }
  if (out == nullptr || target.tid <= 0) {
    return CaptureStatus::kError;
  }
  const uint64_t deadline =
      internal::MonotonicNowNs() + static_cast<uint64_t>(options_.timeout.count());
  SignalChannel::Outcome outcome = channel_->Prepare();
  if (outcome != SignalChannel::Outcome::kDone) {
    return StatusOf(outcome);
  }

  // Before the signal: once it is sent, a sleeping target is woken up and reads as running.
  const char sched_state =
      options_.read_sched_state ? internal::ReadSchedState(target.tid, state_files_.get()) : '?';
  // An exited main thread stays a zombie while the process lives: no signal would be handled.
  if (sched_state == 'Z' || sched_state == 'X') {
    return CaptureStatus::kThreadExited;
  }
  state_->bounds = target.stack;
  state_->tid = target.tid;
  outcome = channel_->Send(target.tid);
  if (outcome != SignalChannel::Outcome::kDone) {
    last_errno_ = channel_->error_number();
    return StatusOf(outcome);
  }
  // While the target answers: its CPU time (a syscall for another thread's clock).
  timespec cpu{};
  const bool have_cpu = clock_gettime(target.cpu_clock, &cpu) == 0;
  outcome = channel_->Wait(deadline, static_cast<uint64_t>(options_.timeout.count()));
  if (outcome != SignalChannel::Outcome::kDone) {
    return StatusOf(outcome);
  }

  const CaptureBuffer& in = state_->storage;
  out->Reset();
  out->regs = in.regs;
  out->num_frames = std::min(in.num_frames, out->max_frames());
  out->frames_truncated = in.frames_truncated || out->num_frames < in.num_frames;
  std::memcpy(out->frame_storage(), in.frames(), out->num_frames * sizeof(uintptr_t));
  out->stack_base = in.stack_base;
  out->stack_size = std::min(in.stack_size, out->max_stack_bytes());
  std::memcpy(out->stack_storage(), state_->storage.stack_view().data, out->stack_size);
  out->num_extra = std::min(in.num_extra, out->max_extra_words());
  if (out->num_extra > 0) {
    std::memcpy(out->extra_storage(), in.extra(), out->num_extra * sizeof(uint64_t));
  }
  out->timestamp_ns = in.timestamp_ns;
  out->pause_ns = in.pause_ns;
  out->sched_state = sched_state;
  out->cpu_time_ns = have_cpu ? static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000u +
                                    static_cast<uint64_t>(cpu.tv_nsec)
                              : 0;
  out->method = SampleMethod::kSignal;
  channel_->Release();
  return CaptureStatus::kOk;
}

}  // namespace hangwatch::unwind
