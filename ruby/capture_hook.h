// RubyCaptureHook: the watched thread's Ruby frames, recorded inside each capture of it
// (unwind/capture_hook.h: in the signal handler, or on the /proc path while it sleeps).
//
// Per Ruby frame it records the instruction sequence's address, the pc and the FINISH mark
// (control_frames.h); nothing is checked or named here: the watchdog decodes the words
// (DecodeCaptureWords), checks each iseq and names it (agent/samplers/ruby_stacks.h).
//
// Cost: one read (process_vm_readv on this process) of the thread's execution context pointer,
// the context's stack fields and the control frames the last capture found (the innermost
// end of the VM stack, up to `copy_bytes`, into storage allocated here: control frames sit
// at the end of the VM stack, so the outer ones do not move); when the context changed (a
// fiber switch) or the stack grew past that copy, one or two reads more; then one read of
// every Ruby frame's flags word (ep[0]): the range from the lowest to the highest when it is
// at most 64 KiB (environments live in the VM stack unless they escaped to the heap), else an
// iovec each. That range too is read again with the next capture's first read: a thread whose
// stack did not change (a hang) costs one system call per capture.
// Every read is unwind::ReadSelfV: a bad pointer fails the read, never faults. No allocation,
// no lock (a busy flag: a second capture while one runs records nothing): it may run in a
// signal handler.
#ifndef HANGWATCH_RUBY_CAPTURE_HOOK_H_
#define HANGWATCH_RUBY_CAPTURE_HOOK_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ruby/control_frames.h"
#include "ruby/ruby_layout.h"
#include "unwind/capture_hook.h"

namespace hangwatch::ruby {

// The words of one capture: a header (magic, frame count, how the walk ended), then two words
// per frame: the iseq's address, and the pc with bit 0 the FINISH mark (pcs are 8-aligned).
inline constexpr uint64_t kCaptureMagic = 0x5242;  // "RB"
inline constexpr size_t CaptureWords(size_t frames) { return 1 + 2 * frames; }

// Decodes `words[0..n)` into out[0..capacity); returns how many frames, 0 when the words are
// not a Ruby capture.
size_t DecodeCaptureWords(const uint64_t* words, size_t n, RubyFrame* out, size_t capacity,
                          FramesEnd* end);

class RubyCaptureHook final : public unwind::CaptureHook {
 public:
  // `layout` is copied. `max_frames`: Ruby frames recorded at most per capture; `copy_bytes`:
  // the control frames' copy. Allocates both here.
  RubyCaptureHook(const RubyLayout& layout, size_t max_frames, size_t copy_bytes);

  // The thread to record (its kernel tid and its rb_thread_t); 0, 0: none.
  void Watch(pid_t tid, uint64_t thread);
  pid_t watched_tid() const { return tid_.load(std::memory_order_relaxed); }

  size_t Read(pid_t tid, const unwind::MemoryView& stack, uint64_t* out, size_t capacity) override;

  // Whether the last capture found its control frames in the copy read with the context (for
  // tests and the benchmark).
  bool last_used_copy() const { return last_used_copy_.load(std::memory_order_relaxed); }
  // Whether the last capture read everything (context, control frames, flags) in one call.
  bool last_one_read() const { return last_one_read_.load(std::memory_order_relaxed); }

 private:
  // The control frames from the innermost, into copy_: how many were copied (0: none).
  size_t LoadFrames(uint64_t thread, FramesEnd* end);
  size_t Record(size_t frames, size_t room, FramesEnd* end);

  const RubyLayout layout_;
  size_t max_frames_;
  size_t copy_bytes_;
  std::unique_ptr<unsigned char[]> copy_;
  std::unique_ptr<uint64_t[]> iseqs_, pcs_, eps_, flags_;
  std::unique_ptr<iovec[]> local_, remote_;
  std::unique_ptr<uint32_t[]> frame_of_;   // which control frame each flags read is for
  std::unique_ptr<unsigned char[]> span_;  // the range holding every frame's flags
  std::atomic<pid_t> tid_{0};
  std::atomic<uint64_t> thread_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> last_used_copy_{false};
  std::atomic<bool> last_one_read_{false};
  // What the last capture found: the context, its stack's end, and where its copy began.
  uint64_t ec_ = 0;
  uint64_t stack_ = 0;
  uint64_t stack_end_ = 0;
  uint64_t copy_from_ = 0;
  // The range read for the flags words, read again with the next capture's first read.
  uint64_t ep_lo_ = 0;
  size_t ep_len_ = 0;
  bool span_valid_ = false;  // span_ holds [ep_lo_, ep_lo_ + ep_len_) of this capture
  // Flags words outside the VM stack (escaped environments: the top-level binding's, a block
  // kept as a proc), the last capture's first kHeapFlags of them, read again with the next
  // capture's first read; heap_valid_ of them read this time.
  static constexpr size_t kHeapFlags = 8;
  uint64_t heap_eps_[kHeapFlags] = {};
  uint64_t heap_flags_[kHeapFlags] = {};
  size_t heap_count_ = 0;
  size_t heap_valid_ = 0;
};

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_CAPTURE_HOOK_H_
