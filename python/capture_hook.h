// PythonCaptureHook: the watched thread's Python frames, recorded inside each capture of it
// (unwind/capture_hook.h: in the signal handler, or on the /proc path while it sleeps).
//
// What it records per frame is the code object's address, the instruction and the `entry`
// mark (python/capture_chain.h): nothing is checked or named here; the watchdog decodes the
// words (DecodeCaptureWords), checks each code object and names it.
//
// Cost (3.11+): one read (process_vm_readv) of the thread state's few fields together with the data
// stack chunk the last capture found (up to `copy_bytes` of it, into storage allocated here);
// the C frame's current frame from the capture's stack copy (it is a local of the eval loop);
// then the walk served from the chunk's copy. A chunk that changed costs one more read (of its
// used part, the innermost end), a current frame outside the stack copy one more, a frame
// outside the chunk (a generator's or a coroutine's, which live in their objects, or one in an
// older chunk) one each. 3.10's frames are heap objects: one read per frame.
// Every read is unwind::ReadSelfV (process_vm_readv on this process, or pread of
// /proc/self/mem where that call is refused): a bad pointer fails the read, never faults. No
// allocation, no lock (a busy flag: a second capture while one runs records nothing), so it may run
// in a signal handler.
#ifndef HANGWATCH_PYTHON_CAPTURE_HOOK_H_
#define HANGWATCH_PYTHON_CAPTURE_HOOK_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "python/copy_reader.h"
#include "python/frame_chain.h"
#include "python/python_layout.h"
#include "python/self_memory_reader.h"
#include "unwind/capture_hook.h"

namespace hangwatch::python {

// The words of one capture: a header (magic, frame count, how the chain ended), then two words
// per frame: the code object's address, and (instr + 1) << 1 | entry.
inline constexpr uint64_t kCaptureMagic = 0x5059;  // "PY"
inline constexpr size_t CaptureWords(size_t frames) { return 1 + 2 * frames; }

// Decodes `words[0..n)` into out[0..capacity) (frame addresses are 0); returns how many
// frames, 0 when the words are not a Python capture.
size_t DecodeCaptureWords(const uint64_t* words, size_t n, PythonFrame* out, size_t capacity,
                          ChainEnd* end);

class PythonCaptureHook final : public unwind::CaptureHook {
 public:
  // `layout` is copied. `max_frames`: frames recorded at most per capture; `copy_bytes`: the
  // data stack copy's size. Allocates both here.
  PythonCaptureHook(const PythonLayout& layout, size_t max_frames, size_t copy_bytes);

  // The thread to record (its kernel tid and its thread state's address); 0, 0: none.
  void Watch(pid_t tid, uint64_t tstate);
  pid_t watched_tid() const { return tid_.load(std::memory_order_relaxed); }

  size_t Read(pid_t tid, const unwind::MemoryView& stack, uint64_t* out, size_t capacity) override;

  // Whether the last capture read its frames from the data stack copy (for tests).
  bool last_used_copy() const { return last_used_copy_.load(std::memory_order_relaxed); }

 private:
  uint64_t InnermostFrame(uint64_t tstate, const unwind::MemoryView& stack);

  // This process's memory (a forked child reads its own, never its parent's: unwind/self_memory.h).
  const PythonLayout layout_;
  SelfMemoryReader self_;
  CopyReader copy_;
  size_t max_frames_;
  std::unique_ptr<PythonFrame[]> frames_;
  std::atomic<pid_t> tid_{0};
  std::atomic<uint64_t> tstate_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> last_used_copy_{false};
  // The data stack chunk of the last capture and how much of it is copied: read again in the
  // same system call as the thread state, so that a capture costs two reads, not three.
  uint64_t chunk_ = 0;
  size_t chunk_bytes_ = 0;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_CAPTURE_HOOK_H_
