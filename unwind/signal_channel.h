// SignalChannel: the request / acknowledge protocol between a sampling thread and a target
// thread interrupted by a real-time signal (Linux). Internal to unwind/.
//
// SignalSampler is built on it, and so are the benchmark's peer handlers, so that they differ
// from hangwatch only in what runs inside the handler. One channel exists per process at a
// time: it owns one signal and the process-wide state the handler reads.
//
// Protocol, in one 32-bit atomic word (sequence number | phase | waiter bit):
//   sampler: IDLE -> REQUESTED (publish target tid, then tgkill)
//   handler: REQUESTED -> CLAIMED (CAS; only for this tid, si_code SI_TKILL, si_pid == ours)
//            runs the body, CLAIMED -> DONE, wakes the sampler if it sleeps on the futex
//   sampler: DONE -> IDLE after reading the body's output.
//   timeout: REQUESTED -> IDLE (CAS). A signal that arrives later finds no request and does
//            nothing. A CLAIMED request cannot be taken back: it is waited for (bounded), and
//            while it is still in flight further requests report kBusy.
#ifndef HANGWATCH_UNWIND_SIGNAL_CHANNEL_H_
#define HANGWATCH_UNWIND_SIGNAL_CHANNEL_H_

#include <signal.h>
#include <sys/types.h>
#include <ucontext.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace hangwatch::unwind::internal {

// Runs inside the target's signal handler once the request has been claimed. Must be
// async-signal-safe, allocation-free and bounded. errno is saved around it.
using SignalBody = void (*)(void* arg, const ucontext_t* context);

class SignalChannel {
 public:
  enum class Outcome : uint8_t {
    kDone,             // the body ran for this request; its output may be read until Release()
    kThreadExited,     // tgkill said ESRCH, or the thread is a zombie
    kSignalBlocked,    // no answer, and the thread has the signal in SigBlk
    kTimedOut,         // no answer within the timeout
    kBusy,             // an earlier request was claimed and is still running
    kError,            // tgkill failed otherwise (errno in error_number())
    kHandlerReplaced,  // the application changed the signal's disposition: nothing is sent
  };

  // Installs the handler for `signal` (0: the highest free real-time signal). Fails, with a
  // one-line reason in *error, if the signal has a handler already (never clobbered), is not a
  // real-time signal, if none is free, or if another channel exists in this process.
  static std::unique_ptr<SignalChannel> Create(int signal, SignalBody body, void* arg,
                                               std::string* error);
  // Waits (bounded) for a claimed request to finish, discards pending instances of the
  // signal, and restores the previous disposition, unless the application has replaced ours
  // meanwhile: then its own disposition stays.
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int signal() const { return signal_; }

  // The steps of one request, so that callers can do work in between (SignalSampler reads the
  // scheduler state before the signal is sent, and CPU time while the target answers).
  // Prepare(): kDone when a new request may be sent, else kBusy.
  Outcome Prepare();
  // Publishes a request for `tid` and sends the signal. First checks that the handler is still
  // ours (one sigaction() call): an application that reset the signal to SIG_DFL would be
  // killed by it, one that installed its own handler would receive signals it never asked for.
  // Once the handler is found replaced, nothing is ever sent again (kHandlerReplaced).
  Outcome Send(pid_t tid);
  // Waits until `deadline` (CLOCK_MONOTONIC ns) for the body to finish; abandons on timeout.
  Outcome Wait(uint64_t deadline_ns, uint64_t claimed_grace_ns);
  // Ends a kDone request: the body's output may be overwritten from now on.
  void Release();

  // Prepare + Send + Wait. On kDone, call Release() after reading the output.
  Outcome Request(pid_t tid, std::chrono::nanoseconds timeout);

  int error_number() const { return error_number_; }
  // True once Send() found the handler replaced.
  bool handler_replaced() const { return handler_replaced_; }
  // True while a claimed request is still running in some thread (its body may still write).
  static bool CaptureInFlight();
  // Process-wide counters since start: signals the handler ignored (not ours, or stale) and
  // requests it answered.
  static uint64_t SignalsIgnored();
  static uint64_t RequestsAnswered();
  // In the child of fork(): the channel object of the parent (if any) belongs to an agent the
  // child abandons, and its state may say a request is in flight for a thread that does not
  // exist here. Restores the signal's previous disposition and frees the process-wide state so
  // that a new channel can be created. The parent's object must never be destroyed afterwards.
  // Async-signal-safe (sigaction and atomic stores only): call it from a pthread_atfork child
  // handler.
  static void ForgetAfterFork();
  // How long Wait() spins before it sleeps on the futex.
  void set_spin_ns(uint64_t ns) { spin_ns_ = ns; }

 private:
  explicit SignalChannel(int signal) : signal_(signal) {}
  Outcome Diagnose();  // after a timeout: exited? blocked? or just slow

  int signal_;
  pid_t tid_ = 0;
  int error_number_ = 0;
  uint64_t spin_ns_ = 5'000;
  bool blocked_tid_known_ = false;  // tid_ blocked the signal at the last request
  bool handler_replaced_ = false;
  struct sigaction old_action_ {};  // restored by the destructor
};

// Monotonic clock in ns (vDSO; async-signal-safe).
uint64_t MonotonicNowNs();

// True when the thread's SigBlk mask in /proc/self/task/TID/status has `signal`; false when
// not or unknown.
bool ThreadBlocksSignal(pid_t tid, int signal);

}  // namespace hangwatch::unwind::internal

#endif  // HANGWATCH_UNWIND_SIGNAL_CHANNEL_H_
