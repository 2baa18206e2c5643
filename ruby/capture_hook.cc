#include "ruby/capture_hook.h"

#include <limits.h>

#include <algorithm>
#include <cstring>

#include "unwind/self_memory.h"

namespace hangwatch::ruby {
namespace {

// Frames above the last capture's innermost read with the next one (deeper calls since).
constexpr uint64_t kSlackFrames = 32;

}  // namespace

size_t DecodeCaptureWords(const uint64_t* words, size_t n, RubyFrame* out, size_t capacity,
                          FramesEnd* end) {
  *end = FramesEnd::kComplete;
  if (n == 0 || (words[0] >> 48) != kCaptureMagic) return 0;
  const size_t count = std::min<size_t>({words[0] & 0xffffffffu, (n - 1) / 2, capacity});
  const auto e = static_cast<uint8_t>((words[0] >> 32) & 0xff);
  *end = e <= static_cast<uint8_t>(FramesEnd::kBadStack) ? static_cast<FramesEnd>(e)
                                                         : FramesEnd::kUnreadable;
  for (size_t i = 0; i < count; ++i) {
    out[i].iseq = words[1 + 2 * i];
    out[i].pc = words[2 + 2 * i] & ~uint64_t{1};
    out[i].finish = (words[2 + 2 * i] & 1) != 0;
  }
  return count;
}

RubyCaptureHook::RubyCaptureHook(const RubyLayout& layout, size_t max_frames, size_t copy_bytes)
    : layout_(layout),
      max_frames_(std::clamp<size_t>(max_frames, 1, IOV_MAX)),
      copy_bytes_(std::max<size_t>(copy_bytes / std::max<uint32_t>(layout.cfp_size, 1), 1) *
                  std::max<uint32_t>(layout.cfp_size, 1)),
      copy_(new unsigned char[copy_bytes_]) {
  const size_t frames = copy_bytes_ / std::max<uint32_t>(layout.cfp_size, 1);
  iseqs_.reset(new uint64_t[frames]);
  pcs_.reset(new uint64_t[frames]);
  eps_.reset(new uint64_t[frames]);
  flags_.reset(new uint64_t[max_frames_]);
  local_.reset(new iovec[max_frames_]);
  remote_.reset(new iovec[max_frames_]);
  frame_of_.reset(new uint32_t[max_frames_]);
}

void RubyCaptureHook::Watch(pid_t tid, uint64_t thread) {
  tid_.store(0, std::memory_order_relaxed);
  thread_.store(thread, std::memory_order_release);
  tid_.store(thread != 0 ? tid : 0, std::memory_order_release);
}

size_t RubyCaptureHook::LoadFrames(uint64_t thread, FramesEnd* end) {
  const uint64_t size = layout_.cfp_size;
  // The context pointer, the last context's stack fields and the last copy's range, at once.
  uint64_t ec = 0;
  uint64_t header[3] = {0, 0, 0};  // vm_stack, vm_stack_size, cfp (control_frames.cc)
  const size_t cached =
      ec_ != 0 && copy_from_ != 0 && stack_end_ > copy_from_
          ? static_cast<size_t>(std::min<uint64_t>(stack_end_ - copy_from_, copy_bytes_))
          : 0;
  iovec local[3] = {{&ec, 8}, {header, sizeof(header)}, {copy_.get(), cached}};
  iovec remote[3] = {
      {reinterpret_cast<void*>(static_cast<uintptr_t>(thread + layout_.thread_ec)), 8},
      {reinterpret_cast<void*>(static_cast<uintptr_t>(ec_)), sizeof(header)},
      {reinterpret_cast<void*>(static_cast<uintptr_t>(copy_from_)), cached}};
  const size_t count = ec_ != 0 ? (cached > 0 ? 3 : 2) : 1;
  const ssize_t got = unwind::ReadSelfV(local, count, remote, count);
  if (got < 8 || ec == 0) {
    *end = FramesEnd::kUnreadable;
    return 0;
  }
  const bool same_ec = ec == ec_ && got >= static_cast<ssize_t>(8 + sizeof(header));
  if (!same_ec && !unwind::ReadSelf(static_cast<uintptr_t>(ec), header, sizeof(header))) {
    *end = FramesEnd::kUnreadable;
    ec_ = 0;
    return 0;
  }
  const uint64_t stack = header[0], values = header[1], cfp = header[2];
  if (stack == 0 || values == 0 || values > kMaxVmStackValues) {
    *end = FramesEnd::kBadStack;
    ec_ = 0;
    return 0;
  }
  const uint64_t stack_end = stack + values * 8;
  if (cfp < stack || cfp > stack_end || (stack_end - cfp) % size != 0) {
    *end = FramesEnd::kBadStack;
    ec_ = 0;
    return 0;
  }
  const uint64_t used = stack_end - cfp;
  const uint64_t want = std::min<uint64_t>(used, copy_bytes_);
  last_used_copy_.store(false, std::memory_order_relaxed);
  size_t frames = 0;
  if (same_ec && stack_end == stack_end_ && cached > 0 &&
      got == static_cast<ssize_t>(8 + sizeof(header) + cached) && cfp >= copy_from_ &&
      cfp < copy_from_ + cached) {
    // The copy read above holds the innermost frames: move them to its start.
    const size_t skip = static_cast<size_t>(cfp - copy_from_);
    const size_t have = std::min<size_t>(cached - skip, static_cast<size_t>(want));
    std::memmove(copy_.get(), copy_.get() + skip, have);
    frames = have / size;
    last_used_copy_.store(true, std::memory_order_relaxed);
  } else if (want > 0) {
    if (!unwind::ReadSelf(static_cast<uintptr_t>(cfp), copy_.get(), static_cast<size_t>(want))) {
      *end = FramesEnd::kUnreadable;
      ec_ = 0;
      return 0;
    }
    frames = static_cast<size_t>(want / size);
  }
  if (frames * size < used) *end = FramesEnd::kFull;
  // Next time: from a few frames above this innermost one, to as far as the copy reaches.
  ec_ = ec;
  stack_end_ = stack_end;
  const uint64_t slack = kSlackFrames * size;
  copy_from_ = cfp - stack >= slack ? cfp - slack : stack;
  return frames;
}

// The Ruby frames among the copy's `frames` control frames: their flags read at once.
size_t RubyCaptureHook::Record(size_t frames, size_t room, FramesEnd* end) {
  ControlFrameFields(layout_, copy_.get(), frames, iseqs_.get(), pcs_.get(), eps_.get());
  size_t asked = 0;
  for (size_t i = 0; i < frames; ++i) {
    if (eps_[i] == 0) continue;
    if (asked == room) {  // more frames than room: cut here
      if (*end == FramesEnd::kComplete) *end = FramesEnd::kFull;
      break;
    }
    local_[asked] = iovec{&flags_[asked], 8};
    remote_[asked] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(eps_[i])), 8};
    frame_of_[asked++] = static_cast<uint32_t>(i);
  }
  if (asked == 0) return 0;
  const ssize_t got = unwind::ReadSelfV(local_.get(), asked, remote_.get(), asked);
  // The kernel stops at the first range it cannot read: the frames before it are recorded.
  const size_t readable = got > 0 ? static_cast<size_t>(got) / 8 : 0;
  if (readable < asked) *end = FramesEnd::kUnreadable;
  size_t n = 0;
  for (size_t k = 0; k < readable; ++k) {
    if ((flags_[k] & kFrameFlagCFrame) != 0) continue;
    iseqs_[n] = iseqs_[frame_of_[k]];
    pcs_[n] = pcs_[frame_of_[k]] | ((flags_[k] & kFrameFlagFinish) != 0 ? 1 : 0);
    ++n;
  }
  return n;
}

size_t RubyCaptureHook::Read(pid_t tid, const unwind::MemoryView& /*stack*/, uint64_t* out,
                             size_t capacity) {
  if (tid == 0 || tid != tid_.load(std::memory_order_acquire) || capacity < CaptureWords(1)) {
    return 0;
  }
  const uint64_t thread = thread_.load(std::memory_order_acquire);
  if (thread == 0 || busy_.exchange(true, std::memory_order_acquire)) return 0;
  FramesEnd end = FramesEnd::kComplete;
  const size_t frames = LoadFrames(thread, &end);
  const size_t room = std::min(max_frames_, (capacity - 1) / 2);
  const size_t n = frames > 0 ? Record(frames, room, &end) : 0;
  out[0] = kCaptureMagic << 48 | uint64_t{static_cast<uint8_t>(end)} << 32 | n;
  for (size_t i = 0; i < n; ++i) {
    out[1 + 2 * i] = iseqs_[i];
    out[2 + 2 * i] = pcs_[i];
  }
  busy_.store(false, std::memory_order_release);
  return CaptureWords(n);
}

}  // namespace hangwatch::ruby
