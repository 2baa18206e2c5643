#include "ruby/capture_hook.h"

#include <limits.h>

#include <algorithm>
#include <cstring>

#include "unwind/self_memory.h"

namespace hangwatch::ruby {
namespace {

// Frames above the last capture's innermost read with the next one (deeper calls since).
constexpr uint64_t kSlackFrames = 32;
// The flags words of every frame are read as one range up to this size.
constexpr uint64_t kEpSpanBytes = 64 * 1024;
// Bytes past the highest flags word read with the next capture (deeper calls since).
constexpr uint64_t kEpSlackBytes = 2048;

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
  local_.reset(new iovec[max_frames_ + 1]);  // the VM stack range, then a word each
  remote_.reset(new iovec[max_frames_ + 1]);
  frame_of_.reset(new uint32_t[max_frames_]);
  span_.reset(new unsigned char[kEpSpanBytes + kEpSlackBytes]);
}

void RubyCaptureHook::Watch(pid_t tid, uint64_t thread) {
  tid_.store(0, std::memory_order_relaxed);
  thread_.store(thread, std::memory_order_release);
  tid_.store(thread != 0 ? tid : 0, std::memory_order_release);
}

size_t RubyCaptureHook::LoadFrames(uint64_t thread, FramesEnd* end) {
  const uint64_t size = layout_.cfp_size;
  // The context pointer, the last context's stack fields and the last copy's range, at once;
  // with them the VM stack range that held the last capture's flags words and the flags words
  // it found outside the VM stack (environments that escaped to the heap).
  uint64_t ec = 0;
  uint64_t header[3] = {0, 0, 0};  // vm_stack, vm_stack_size, cfp (control_frames.cc)
  const size_t cached =
      ec_ != 0 && copy_from_ != 0 && stack_end_ > copy_from_
          ? static_cast<size_t>(std::min<uint64_t>(stack_end_ - copy_from_, copy_bytes_))
          : 0;
  const size_t span_cached = cached > 0 ? ep_len_ : 0;
  const size_t heap_cached = cached > 0 ? heap_count_ : 0;
  iovec local[4 + kHeapFlags];
  iovec remote[4 + kHeapFlags];
  auto put = [&](size_t i, void* to, uint64_t from, size_t n) {
    local[i] = iovec{to, n};
    remote[i] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(from)), n};
  };
  put(0, &ec, thread + layout_.thread_ec, 8);
  put(1, header, ec_, sizeof(header));
  put(2, copy_.get(), copy_from_, cached);
  put(3, span_.get(), ep_lo_, span_cached);
  for (size_t k = 0; k < heap_cached; ++k) put(4 + k, &heap_flags_[k], heap_eps_[k], 8);
  const size_t count = ec_ == 0 ? 1 : cached == 0 ? 2 : 4 + heap_cached;
  const ssize_t got = unwind::ReadSelfV(local, count, remote, count);
  const ssize_t before_span = static_cast<ssize_t>(8 + sizeof(header) + cached);
  span_valid_ = span_cached > 0 && got >= before_span + static_cast<ssize_t>(span_cached);
  heap_valid_ = 0;
  if (heap_cached > 0 && got > before_span + static_cast<ssize_t>(span_cached)) {
    heap_valid_ = std::min<size_t>(
        heap_cached,
        static_cast<size_t>(got - before_span - static_cast<ssize_t>(span_cached)) / 8);
  }
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
  if (same_ec && stack_end == stack_end_ && cached > 0 && got >= before_span && cfp >= copy_from_ &&
      cfp < copy_from_ + cached && cached - (cfp - copy_from_) >= want) {
    // The copy read above holds the innermost frames: move them to its start.
    const size_t skip = static_cast<size_t>(cfp - copy_from_);
    std::memmove(copy_.get(), copy_.get() + skip, static_cast<size_t>(want));
    frames = static_cast<size_t>(want / size);
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
  if (ec != ec_ || stack != stack_) {
    ep_len_ = 0;
    heap_count_ = 0;
    span_valid_ = false;
    heap_valid_ = 0;
  }
  ec_ = ec;
  stack_ = stack;
  stack_end_ = stack_end;
  const uint64_t slack = kSlackFrames * size;
  copy_from_ = cfp - stack >= slack ? cfp - slack : stack;
  return frames;
}

// The Ruby frames among the copy's `frames` control frames, by their flags words: those in the
// VM stack as one range (environments that did not escape are there, below the control
// frames), the others (escaped to the heap) one each; what the first read brought is not read
// again. At most one more system call.
size_t RubyCaptureHook::Record(size_t frames, size_t room, FramesEnd* end) {
  ControlFrameFields(layout_, copy_.get(), frames, iseqs_.get(), pcs_.get(), eps_.get());
  size_t asked = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < frames; ++i) {
    if (eps_[i] == 0) continue;
    if (asked == room) {  // more frames than room: cut here
      if (*end == FramesEnd::kComplete) *end = FramesEnd::kFull;
      break;
    }
    if (eps_[i] >= stack_ && eps_[i] + 8 <= stack_end_) {
      lo = std::min(lo, eps_[i]);
      hi = std::max(hi, eps_[i] + 8);
    }
    frame_of_[asked++] = static_cast<uint32_t>(i);
  }
  if (asked == 0) return 0;
  // What the first read did not bring: the VM stack range, and flags words outside it.
  const bool span_hit = hi == 0 || (span_valid_ && lo >= ep_lo_ && hi <= ep_lo_ + ep_len_);
  bool span_too_big = hi != 0 && hi - lo > kEpSpanBytes;
  size_t more = 0;  // iovecs of the second read
  size_t heap_seen = 0;
  uint64_t heap_next[kHeapFlags];  // the heap words of this capture, for the next one
  if (!span_hit && !span_too_big) {
    ep_lo_ = lo;
    ep_len_ = static_cast<size_t>(std::min(hi + kEpSlackBytes, stack_end_) - lo);
    local_[more] = iovec{span_.get(), ep_len_};
    remote_[more++] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(lo)), ep_len_};
  }
  for (size_t k = 0; k < asked; ++k) {
    const uint64_t ep = eps_[frame_of_[k]];
    const bool in_stack = ep >= stack_ && ep + 8 <= stack_end_;
    if (in_stack && !span_too_big) continue;
    // Outside the VM stack (or in a range too big to copy): one word each.
    size_t c = 0;
    while (c < heap_valid_ && heap_eps_[c] != ep) ++c;
    if (c < heap_valid_) {
      flags_[k] = heap_flags_[c];
    } else {
      local_[more] = iovec{&flags_[k], 8};
      remote_[more++] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(ep)), 8};
    }
    if (heap_seen < kHeapFlags) heap_next[heap_seen++] = ep;
  }
  std::copy_n(heap_next, heap_seen, heap_eps_);
  heap_count_ = span_too_big ? 0 : heap_seen;
  last_one_read_.store(more == 0 && last_used_copy_.load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
  size_t readable_iovecs = 0;
  if (more > 0) {
    const ssize_t got = unwind::ReadSelfV(local_.get(), more, remote_.get(), more);
    // The kernel stops at the first range it cannot read.
    ssize_t left = got > 0 ? got : 0;
    while (readable_iovecs < more &&
           left >= static_cast<ssize_t>(local_[readable_iovecs].iov_len)) {
      left -= static_cast<ssize_t>(local_[readable_iovecs].iov_len);
      ++readable_iovecs;
    }
    if (!span_hit && !span_too_big) {
      span_valid_ = readable_iovecs > 0;
      if (!span_valid_) ep_len_ = 0;
    }
  }
  const bool span_ok = hi == 0 || span_too_big || span_valid_;
  // Each frame in order; the first whose word was not read ends the chain.
  size_t n = 0;
  size_t next_iovec = !span_hit && !span_too_big ? 1 : 0;
  for (size_t k = 0; k < asked; ++k) {
    const uint64_t ep = eps_[frame_of_[k]];
    const bool in_stack = ep >= stack_ && ep + 8 <= stack_end_;
    if (in_stack && !span_too_big) {
      if (!span_ok) {
        *end = FramesEnd::kUnreadable;
        break;
      }
      std::memcpy(&flags_[k], span_.get() + (ep - ep_lo_), 8);
    } else if (next_iovec < more && local_[next_iovec].iov_base == &flags_[k]) {
      if (next_iovec++ >= readable_iovecs) {
        *end = FramesEnd::kUnreadable;
        break;
      }
    }
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
