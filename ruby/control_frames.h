// VmReader: a Ruby thread's control frames, read from the VM's own structures through a
// MemoryReader: ruby_current_vm_ptr -> the VM -> its main ractor's list of threads (matched to
// a kernel tid by rb_thread_t.tid) -> the thread's execution context (rb_execution_context_t;
// the running fiber's) -> its control frames, from ec->cfp (the innermost) to the end of the VM
// stack (vm_stack + vm_stack_size), 64 bytes each. A frame is a Ruby frame when it has an
// instruction sequence and a pc and its environment's flags (ep[0]) do not mark it a C frame
// (a C method's, a C block's, the dummy frames at the bottom); the flags also tell where a
// native call of the VM (rb_vm_exec) began (VM_FRAME_FLAG_FINISH), which places the frames in
// a native stack (python/frame_placement.h).
//
// Each frame gives its instruction sequence (iseq) and pc; names and lines come later
// (iseq_resolver.h). Reading allocates nothing and is bounded (frames walked, threads listed),
// so it runs while the target is stopped. Threads of other ractors than the main one are not
// found (Ractor is experimental in 3.1).
#ifndef HANGWATCH_RUBY_CONTROL_FRAMES_H_
#define HANGWATCH_RUBY_CONTROL_FRAMES_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "python/memory_reader.h"
#include "ruby/ruby_layout.h"
#include "ruby/vm_locator.h"

namespace hangwatch::ruby {

struct RubyFrame {
  uint64_t iseq = 0;    // rb_iseq_t *
  uint64_t pc = 0;      // the next instruction (cfp->pc)
  bool finish = false;  // the outermost frame of one native call of rb_vm_exec
};

enum class FramesEnd : uint8_t {
  kComplete,    // the bottom of the VM stack was reached
  kFull,        // the caller's buffer was full (or the walk's bound reached)
  kUnreadable,  // memory that cannot be read
  kBadStack,    // the execution context's stack fields are not a VM stack
};
const char* FramesEndName(FramesEnd end);

// Bounds of every walk over the VM's lists and stacks.
inline constexpr size_t kMaxThreads = 4096;
inline constexpr uint64_t kMaxVmStackValues = uint64_t{1} << 28;

// Which control frames of `bytes` (count frames of layout.cfp_size, innermost first) may be
// Ruby frames: iseq and pc set. Their ep (where the flags are) go to eps[i], 0 for the others.
void ControlFrameFields(const RubyLayout& layout, const unsigned char* bytes, size_t count,
                        uint64_t* iseqs, uint64_t* pcs, uint64_t* eps);

class VmReader {
 public:
  // `memory` and `layout` must outlive the reader.
  VmReader(const python::MemoryReader& memory, const RubyLayout& layout,
           const VmAddresses& addresses);

  // Tests the layout against the live VM: the VM's main thread points back to the VM and to
  // its main ractor, its execution context to it, the main ractor's thread list is a ring of
  // threads.cnt nodes that holds it, its VM stack is one (bounded, cfp inside and on a frame
  // boundary), and its innermost Ruby frame's iseq is an instruction sequence. "" when all hold (or
  // the VM is not running yet: then *not_yet is set), else one line saying which check failed.
  std::string CheckLayout(bool* not_yet = nullptr) const;

  // The rb_thread_t of kernel thread `tid`, else of the thread whose pthread_t is
  // `pthread_self` (0: unknown): in a forked child, Ruby 3.1 keeps the forking thread's
  // rb_thread_t with the parent's tid in it, where its pthread_t is still the same. 0 when none.
  uint64_t FindThread(pid_t tid, uint64_t pthread_self = 0) const;
  // The thread's execution context (its running fiber's); 0 when unreadable.
  uint64_t ExecutionContext(uint64_t thread) const;

  // The Ruby frames of execution context `ec`, innermost first, into out[0..capacity).
  size_t ReadFrames(uint64_t ec, RubyFrame* out, size_t capacity, FramesEnd* end) const;

  // Whether `addr` is an instruction sequence (its flags say imemo_iseq).
  bool IsIseq(uint64_t addr) const;

 private:
  uint64_t Vm() const;

  const python::MemoryReader& memory_;
  const RubyLayout& layout_;
  VmAddresses addresses_;
};

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_CONTROL_FRAMES_H_
