// RubyStacks: the watched thread's Ruby frames in every sample of a hang, in place of the VM's
// rb_vm_exec frames. Linux; made by MakePlatformSampler when the process runs a Ruby VM (it
// exports `ruby_current_vm_ptr`), it is no Python process, and HANGWATCH_RUBY is not "0".
//
// Split between the capture and the watchdog, as python_stacks.h:
//  - capture (ruby/capture_hook.h, installed as the process's unwind::CaptureHook): each Ruby
//    frame's iseq address, pc and FINISH mark, read from this process's own memory
//    (unwind/self_memory.h), nothing checked or named;
//  - watchdog (Merge): each iseq checked and identified (one read of its header and body, an
//    iovec each: imemo_iseq, its body, label and path objects, first line), its pc turned into
//    an instruction position, the frames placed in the native stack (python/frame_placement.h,
//    FINISH as the group mark) as words of hang/model/runtime_frame_word.h with Ruby's tag (a
//    walk cut short, or an iseq that is not one, tags its outermost frame partial:
//    Stack::partial), and each new word named (label, path, line: ruby/iseq_resolver.h) while
//    the iseq is alive, into a cache of at most kMaxNames words (labels cut at 256 bytes,
//    paths at 512): beyond it a frame stays unnamed, the memory never grows. A word whose iseq's
//    identity changed (the address reused by another iseq) is named again.
// The hook is installed once the layout check passed and the watched thread is found in the
// VM's thread list, both retried at later samples while the VM is not yet running (the preload
// shim starts the agent before Ruby does); the thread is looked for again after every 8
// captures in a row without a Ruby frame. A failed check turns Ruby frames off with one note.
#ifndef HANGWATCH_AGENT_SAMPLERS_RUBY_STACKS_H_
#define HANGWATCH_AGENT_SAMPLERS_RUBY_STACKS_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "agent/samplers/runtime_frames.h"
#include "hang/model/runtime_names.h"
#include "python/frame_chain.h"
#include "python/frame_placement.h"
#include "python/self_memory_reader.h"
#include "ruby/capture_hook.h"
#include "ruby/control_frames.h"
#include "ruby/ruby_layout.h"
#include "ruby/vm_locator.h"

namespace hangwatch::agent {

class RubyStacks final : public RuntimeFrames, public RuntimeNames {
 public:
  static constexpr size_t kMaxNames = 4096;

  // nullptr when this process runs no Ruby VM, when HANGWATCH_RUBY=0, or when its version has
  // no layout (then *notes gets why). `max_frames`: frames kept per sample.
  static std::unique_ptr<RubyStacks> Create(size_t max_frames, std::vector<std::string>* notes);
  ~RubyStacks() override;

  void Watch(const unwind::ThreadInfo& thread) override;
  void set_note(std::function<void(const std::string&)> note) override { note_ = std::move(note); }
  void BeforeCapture() override;
  size_t Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) override;
  const RuntimeNames* names() const override { return this; }
  bool Find(uintptr_t word, RuntimeFrameName* out) const override;

  // The words a capture buffer needs for the hook (ruby/capture_hook.h).
  size_t extra_words() const { return ruby::CaptureWords(max_frames_); }
  bool active() const { return state_ == State::kActive; }

 private:
  enum class State { kUnchecked, kActive, kOff };
  RubyStacks(const ruby::VmAddresses& addresses, const ruby::RubyLayout& layout, size_t max_frames);
  void TryActivate();
  uint64_t FindTarget() const;  // the watched thread's rb_thread_t
  // The iseqs of frames_[0..count) checked in one unwind::ReadSelfV; how many lead the chain as
  // iseqs. Fills positions_ (from each frame's pc) and identities_.
  size_t CheckIseqs(size_t count);
  void Name(uintptr_t word, const ruby::RubyFrame& frame, uint64_t identity);

  ruby::VmAddresses addresses_;
  ruby::RubyLayout layout_;
  python::SelfMemoryReader self_;
  ruby::VmReader reader_;
  size_t max_frames_;
  std::function<void(const std::string&)> note_;
  State state_ = State::kUnchecked;
  unwind::ThreadInfo target_;
  uint64_t empty_captures_ = 0;            // in a row
  ruby::RubyCaptureHook* hook_ = nullptr;  // the process's, made once (never freed)
  // Scratch of Merge, allocated once.
  std::unique_ptr<ruby::RubyFrame[]> frames_;
  std::unique_ptr<int64_t[]> positions_;
  std::unique_ptr<uint64_t[]> identities_;
  std::unique_ptr<bool[]> placeholders_;
  std::unique_ptr<unsigned char[]> headers_;  // max_frames iseq headers and bodies
  std::unique_ptr<iovec[]> local_, remote_;
  std::unique_ptr<python::PythonFrame[]> groups_;
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

#endif  // HANGWATCH_AGENT_SAMPLERS_RUBY_STACKS_H_
