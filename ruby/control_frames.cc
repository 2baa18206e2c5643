#include "ruby/control_frames.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace hangwatch::ruby {
namespace {

// Control frames read per Read (on the reader's stack: 64 x 64 bytes).
constexpr size_t kFramesPerRead = 64;
constexpr size_t kMaxFrameBytes = 128;  // a cfp_size beyond this is no layout of ours

uint64_t Word(const unsigned char* p, uint32_t offset) {
  uint64_t w = 0;
  std::memcpy(&w, p + offset, sizeof(w));
  return w;
}

}  // namespace

const char* FramesEndName(FramesEnd end) {
  switch (end) {
    case FramesEnd::kComplete:
      return "complete";
    case FramesEnd::kFull:
      return "frame limit";
    case FramesEnd::kUnreadable:
      return "unreadable memory";
    case FramesEnd::kBadStack:
      return "not a VM stack";
  }
  return "?";
}

void ControlFrameFields(const RubyLayout& layout, const unsigned char* bytes, size_t count,
                        uint64_t* iseqs, uint64_t* pcs, uint64_t* eps) {
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* f = bytes + i * layout.cfp_size;
    iseqs[i] = Word(f, layout.cfp_iseq);
    pcs[i] = Word(f, layout.cfp_pc);
    eps[i] = iseqs[i] != 0 && pcs[i] != 0 ? Word(f, layout.cfp_ep) : 0;
  }
}

VmReader::VmReader(const python::MemoryReader& memory, const RubyLayout& layout,
                   const VmAddresses& addresses)
    : memory_(memory), layout_(layout), addresses_(addresses) {}

uint64_t VmReader::Vm() const {
  uint64_t vm = 0;
  return memory_.ReadWord(addresses_.vm_ptr, &vm) ? vm : 0;
}

bool VmReader::IsIseq(uint64_t addr) const {
  uint64_t flags = 0;
  return addr != 0 && memory_.ReadWord(addr, &flags) && IsIseqFlags(flags);
}

std::string VmReader::CheckLayout(bool* not_yet) const {
  if (not_yet != nullptr) *not_yet = false;
  const uint64_t vm = Vm();
  uint64_t main_thread = 0, main_ractor = 0;
  if (vm == 0 || !memory_.ReadWord(vm + layout_.vm_main_thread, &main_thread) ||
      !memory_.ReadWord(vm + layout_.vm_main_ractor, &main_ractor) || main_thread == 0 ||
      main_ractor == 0) {
    if (not_yet != nullptr) *not_yet = true;
    return "the VM is not running (yet)";
  }
  uint64_t th_vm = 0, th_ractor = 0, ec = 0, ec_thread = 0;
  if (!memory_.ReadWord(main_thread + layout_.thread_vm, &th_vm) || th_vm != vm) {
    return "the main thread does not point back to the VM";
  }
  if (!memory_.ReadWord(main_thread + layout_.thread_ractor, &th_ractor) ||
      th_ractor != main_ractor) {
    return "the main thread is not in the main ractor";
  }
  if (!memory_.ReadWord(main_thread + layout_.thread_ec, &ec) || ec == 0 ||
      !memory_.ReadWord(ec + layout_.ec_thread, &ec_thread) || ec_thread != main_thread) {
    return "the main thread's execution context does not point back to it";
  }
  // The main thread must be in its ractor's list, a ring back to its head of threads.cnt nodes
  // (read again when a thread came or went meanwhile: the VM runs while it is checked).
  const uint64_t head = main_ractor + layout_.ractor_threads_head;
  uint32_t count = 0;
  size_t walked = 0;
  bool listed = false;
  bool ring = false;
  for (int attempt = 0; attempt < 3 && !ring; ++attempt) {
    uint64_t node = 0;
    if (!memory_.Read(main_ractor + layout_.ractor_threads_count, &count, sizeof(count)) ||
        !memory_.ReadWord(head, &node)) {
      return "the main ractor's thread list is unreadable";
    }
    listed = false;
    for (walked = 0; walked <= kMaxThreads && node != 0 && node != head; ++walked) {
      listed |= node - layout_.thread_lt_node == main_thread;
      if (!memory_.ReadWord(node, &node)) break;
    }
    ring = node == head && walked == count;
  }
  if (!ring) {
    return "the main ractor's thread list is no ring of its " + std::to_string(count) + " threads";
  }
  if (!listed) return "the main thread is not in the main ractor's thread list";
  // Its VM stack, and the innermost Ruby frame's instruction sequence.
  RubyFrame frame;
  FramesEnd end = FramesEnd::kComplete;
  const size_t n = ReadFrames(ec, &frame, 1, &end);
  if (end == FramesEnd::kBadStack) return "the main thread's VM stack is not one";
  if (n == 1 && !IsIseq(frame.iseq)) {
    return "the main thread's innermost Ruby frame holds no instruction sequence";
  }
  return "";
}

uint64_t VmReader::FindThread(pid_t tid, uint64_t pthread_self) const {
  const uint64_t vm = Vm();
  uint64_t ractor = 0;
  if (vm == 0 || tid <= 0 || !memory_.ReadWord(vm + layout_.vm_main_ractor, &ractor) ||
      ractor == 0) {
    return 0;
  }
  const uint64_t head = ractor + layout_.ractor_threads_head;
  uint64_t node = 0;
  uint64_t by_pthread = 0;
  if (!memory_.ReadWord(head, &node)) return 0;
  for (size_t i = 0; i < kMaxThreads && node != 0 && node != head; ++i) {
    const uint64_t thread = node - layout_.thread_lt_node;
    int32_t thread_tid = 0;
    uint64_t thread_pthread = 0;
    if (!memory_.Read(thread + layout_.thread_tid, &thread_tid, sizeof(thread_tid)) ||
        !memory_.ReadWord(thread + layout_.thread_pthread, &thread_pthread)) {
      break;
    }
    if (thread_tid == tid) return thread;
    if (pthread_self != 0 && thread_pthread == pthread_self && by_pthread == 0) {
      by_pthread = thread;
    }
    if (!memory_.ReadWord(node, &node)) break;
  }
  return by_pthread;
}

uint64_t VmReader::ExecutionContext(uint64_t thread) const {
  uint64_t ec = 0;
  return thread != 0 && memory_.ReadWord(thread + layout_.thread_ec, &ec) ? ec : 0;
}

size_t VmReader::ReadFrames(uint64_t ec, RubyFrame* out, size_t capacity, FramesEnd* end) const {
  *end = FramesEnd::kComplete;
  uint64_t header[3] = {0, 0, 0};  // vm_stack, vm_stack_size, cfp
  static_assert(sizeof(header) == 24);
  if (ec == 0 || layout_.ec_vm_stack != 0 || layout_.ec_vm_stack_size != 8 ||
      layout_.ec_cfp != 16 || !memory_.Read(ec, header, sizeof(header))) {
    *end = FramesEnd::kUnreadable;
    return 0;
  }
  const uint64_t stack = header[0], values = header[1], cfp = header[2];
  const uint64_t size = layout_.cfp_size;
  if (stack == 0 || values == 0 || values > kMaxVmStackValues || size == 0 ||
      size > kMaxFrameBytes) {
    *end = FramesEnd::kBadStack;
    return 0;
  }
  const uint64_t stack_end = stack + values * 8;
  if (cfp < stack || cfp > stack_end || (stack_end - cfp) % size != 0) {
    *end = FramesEnd::kBadStack;
    return 0;
  }
  const uint64_t total = (stack_end - cfp) / size;
  // C frames do not count towards `capacity`, but the walk is bounded all the same.
  const uint64_t walk = std::min<uint64_t>(total, 4 * static_cast<uint64_t>(capacity) + 64);
  unsigned char bytes[kFramesPerRead * kMaxFrameBytes];
  uint64_t iseqs[kFramesPerRead], pcs[kFramesPerRead], eps[kFramesPerRead];
  size_t n = 0;
  for (uint64_t first = 0; first < walk; first += kFramesPerRead) {
    const size_t count = static_cast<size_t>(std::min<uint64_t>(kFramesPerRead, walk - first));
    if (!memory_.Read(cfp + first * size, bytes, count * size)) {
      *end = FramesEnd::kUnreadable;
      return n;
    }
    ControlFrameFields(layout_, bytes, count, iseqs, pcs, eps);
    for (size_t i = 0; i < count; ++i) {
      if (eps[i] == 0) continue;
      uint64_t flags = 0;
      if (!memory_.ReadWord(eps[i], &flags)) {
        *end = FramesEnd::kUnreadable;
        return n;
      }
      if ((flags & kFrameFlagCFrame) != 0) continue;
      if (n == capacity) {
        *end = FramesEnd::kFull;
        return n;
      }
      out[n++] = RubyFrame{iseqs[i], pcs[i], (flags & kFrameFlagFinish) != 0};
    }
  }
  if (walk < total) *end = FramesEnd::kFull;
  return n;
}

}  // namespace hangwatch::ruby
