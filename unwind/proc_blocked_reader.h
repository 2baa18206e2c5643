// Reading a thread of this process that is blocked in the kernel, without interrupting it.
//
// A signal makes nanosleep, epoll_wait, poll and select return EINTR even under SA_RESTART, so
// a thread sleeping in the kernel is read through /proc instead: where it sleeps (syscall:
// number, arguments, sp and pc; "running" for a thread that is not asleep), its state (stat), and a
// copy of its stack made with ReadSelfV (unwind/self_memory.h: fails cleanly, instead of faulting,
// if the stack went away). The copy is trusted only if the thread provably did not run meanwhile:
// its schedstat (time on CPU and number of times it was scheduled) and its syscall line are read
// before and after, and must be unchanged. Otherwise the caller falls back to the signal.
//
// The frame pointer is not known this way (/proc gives pc and sp only) and the pc is in a libc
// syscall wrapper without a frame record: such captures are unwound with CFI
// (symbols/cfi_unwinder.h). frames()[0] is the pc, num_frames is 1.
//
// Not async-signal-safe (it reads files); runs on the sampling thread. Linux only.
#ifndef HANGWATCH_UNWIND_PROC_BLOCKED_READER_H_
#define HANGWATCH_UNWIND_PROC_BLOCKED_READER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "unwind/thread_capture.h"

namespace hangwatch::unwind {
namespace internal {
struct ProcTaskFiles;
}  // namespace internal

enum class ProcReadStatus : uint8_t {
  kOk = 0,
  kNotBlocked,    // the thread is running (or runnable): interrupt it instead
  kInconsistent,  // it ran while being read: the copy may be torn
  kError,         // /proc unreadable, thread gone, process_vm_readv refused, ...
};
const char* ProcReadStatusName(ProcReadStatus s);

// One read of a blocked thread into `out` (method = SampleMethod::kProc, pause_ns = 0, sched_state
// from stat). Returns kOk only with a consistent copy.
ProcReadStatus ReadBlockedThread(const ThreadInfo& target, CaptureBuffer* out);

// The agent's sampler: threads in S or D are read through /proc; anything else, and any read
// that fails or is inconsistent, goes to `fallback` (the SignalSampler).
// Its /proc files stay open between samples of the same thread (unwind/internal/task_file.h).
class ProcFirstSampler final : public ThreadSampler {
 public:
  explicit ProcFirstSampler(ThreadSampler* fallback);
  ~ProcFirstSampler() override;
  CaptureStatus Capture(const ThreadInfo& target, CaptureBuffer* out) override;

  // True when `target` is the thread of this sampler's last consistent /proc read and has not
  // run since (same scheduling counters, same syscall line: two reads of files kept open): its
  // stack is the one that read copied. False when unsure (another thread read since, a file
  // unreadable).
  bool UnchangedSinceLastRead(const ThreadInfo& target);

  struct Stats {
    uint64_t proc_reads = 0;    // samples taken through /proc
    uint64_t not_blocked = 0;   // interrupted because the thread was running
    uint64_t inconsistent = 0;  // /proc read abandoned: the thread ran meanwhile
    uint64_t errors = 0;        // /proc read failed
  };
  Stats stats() const;

 private:
  ThreadSampler* fallback_;
  std::unique_ptr<internal::ProcTaskFiles> files_;
  std::atomic<bool> files_in_use_{false};
  std::atomic<uint64_t> proc_reads_{0}, not_blocked_{0}, inconsistent_{0}, errors_{0};
};

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_PROC_BLOCKED_READER_H_
