// PythonStacks: the watched thread's Python frames in every sample of a hang, in place of the
// interpreter's eval-loop frames. Linux; made by MakePlatformSampler when the
// process runs CPython (it exports `_PyRuntime`) and HANGWATCH_PYTHON is not "0".
//
// Split between the capture and the watchdog:
//  - capture (python/capture_hook.h, installed as the process's unwind::CaptureHook): the
//    chain's code object addresses and instructions, read from this process's own memory
//    (unwind/self_memory.h), nothing checked or named;
//  - watchdog (Merge): each code object checked (one read: its type is PyCode_Type) and
//    identified (its co_filename and name objects and first line), the frames placed in the
//    native stack (python/frame_placement.h) as words of hang/model/runtime_frame_word.h (a chain
//    read only in part, python::ChainEnd other than kComplete or a frame that is no code object,
//    tagged kPythonPartialTag on its outermost frame read: Stack::partial), and each new word
//    named (function, file, line: python/code_resolver.h) while the code object is alive, into
//    a cache of at most kMaxNames words (names cut at 256 bytes, files at 512: 3 MiB at the
//    very worst, a few hundred KiB for usual names): beyond it a frame stays unnamed, the
//    memory never grows. A word whose code object's identity changed (the address reused by another
//    code object) is named again.
// The hook is installed once the layout check passed and the watched thread's thread state is
// found, both retried at later samples while the interpreter is not yet initialized (the
// preload shim starts the agent before Python does); the thread state is looked for again
// after every 8 captures in a row without a Python frame. A failed check turns Python frames off
// with one note. Until then, and in a process without CPython, captures cost nothing more.
#ifndef HANGWATCH_AGENT_SAMPLERS_PYTHON_STACKS_H_
#define HANGWATCH_AGENT_SAMPLERS_PYTHON_STACKS_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "agent/samplers/runtime_frames.h"
#include "hang/model/runtime_names.h"
#include "python/capture_hook.h"
#include "python/frame_chain.h"
#include "python/frame_placement.h"
#include "python/interpreter_locator.h"
#include "python/python_layout.h"
#include "python/self_memory_reader.h"

namespace hangwatch::agent {

class PythonStacks final : public RuntimeFrames, public RuntimeNames {
 public:
  static constexpr size_t kMaxNames = 4096;

  // nullptr when this process runs no CPython, when HANGWATCH_PYTHON=0, or when its version
  // has no layout (then *note says why). `max_frames`: frames kept per sample.
  static std::unique_ptr<PythonStacks> Create(size_t max_frames, std::string* note);
  ~PythonStacks() override;

  void Watch(const unwind::ThreadInfo& thread) override;
  void set_note(std::function<void(const std::string&)> note) override { note_ = std::move(note); }
  void BeforeCapture() override;
  size_t Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) override;
  const RuntimeNames* names() const override { return this; }
  bool Find(uintptr_t word, RuntimeFrameName* out) const override;

  // The words a capture buffer needs for the hook (python/capture_hook.h).
  size_t extra_words() const { return python::CaptureWords(max_frames_); }
  bool active() const { return state_ == State::kActive; }

 private:
  enum class State { kUnchecked, kActive, kOff };
  PythonStacks(const python::InterpreterAddresses& addresses, const python::PythonLayout& layout,
               size_t max_frames);
  void TryActivate();
  // The code objects of frames_[0..count), read in one unwind::ReadSelfV (an iovec each): how
  // many lead the chain as code objects; their identities into identities_.
  size_t CheckCodes(size_t count);
  void Name(uintptr_t word, const python::PythonFrame& frame, uint64_t identity);

  python::InterpreterAddresses addresses_;
  python::PythonLayout layout_;
  python::SelfMemoryReader self_;
  python::FrameChainReader chain_;
  size_t max_frames_;
  std::function<void(const std::string&)> note_;
  State state_ = State::kUnchecked;
  unwind::ThreadInfo target_;
  uint64_t empty_captures_ = 0;                // in a row
  python::PythonCaptureHook* hook_ = nullptr;  // the process's, made once (never freed)
  // Scratch of Merge, allocated once.
  std::unique_ptr<python::PythonFrame[]> frames_;
  std::unique_ptr<uint64_t[]> identities_;
  std::unique_ptr<unsigned char[]> headers_;  // max_frames code object headers
  std::unique_ptr<iovec[]> local_, remote_;
  std::unique_ptr<python::NativeMark[]> marks_;
  std::unique_ptr<python::PlacedFrame[]> placed_;
  std::unique_ptr<uintptr_t[]> merged_;
  std::unique_ptr<uint8_t[]> merged_tags_;
  // Names by word; Materialize may read from another thread (RecentHangs).
  mutable std::mutex mu_;
  struct Named {
    RuntimeFrameName name;
    uint64_t identity = 0;
  };
  std::unordered_map<uintptr_t, Named> names_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_PYTHON_STACKS_H_
