#include "python/capture_hook.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "python/capture_chain.h"
#include "unwind/self_memory.h"

namespace hangwatch::python {
namespace {

// A data stack chunk bigger than this is not one (a wrong offset or garbage): no copy.
constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;
constexpr size_t kMaxTstateSpan = 512;
// _PyStackChunk (3.11, 3.12): previous, size (bytes, header included), top, data.
constexpr size_t kChunkSizeOffset = 8;
// Bytes past the last capture's top read with the next one (deeper calls since).
constexpr size_t kChunkSlack = 2048;

}  // namespace

size_t DecodeCaptureWords(const uint64_t* words, size_t n, PythonFrame* out, size_t capacity,
                          ChainEnd* end) {
  *end = ChainEnd::kComplete;
  if (n == 0 || (words[0] >> 48) != kCaptureMagic) return 0;
  const size_t count = std::min<size_t>({words[0] & 0xffffffffu, (n - 1) / 2, capacity});
  const auto e = static_cast<uint8_t>((words[0] >> 32) & 0xff);
  *end = e <= static_cast<uint8_t>(ChainEnd::kNoEntry) ? static_cast<ChainEnd>(e)
                                                       : ChainEnd::kUnreadable;
  for (size_t i = 0; i < count; ++i) {
    out[i].frame = 0;
    out[i].code = words[1 + 2 * i];
    const uint64_t w = words[2 + 2 * i];
    out[i].instr = static_cast<int64_t>(w >> 1) - 1;
    out[i].entry = (w & 1) != 0;
  }
  return count;
}

PythonCaptureHook::PythonCaptureHook(const PythonLayout& layout, size_t max_frames,
                                     size_t copy_bytes)
    : layout_(layout),
      copy_(self_, copy_bytes),
      max_frames_(max_frames),
      frames_(new PythonFrame[max_frames > 0 ? max_frames : 1]) {}

void PythonCaptureHook::Watch(pid_t tid, uint64_t tstate) {
  tid_.store(0, std::memory_order_relaxed);
  tstate_.store(tstate, std::memory_order_release);
  tid_.store(tstate != 0 ? tid : 0, std::memory_order_release);
}

// The innermost frame; on 3.11+ also loads the data stack copy when the chunk holds it.
uint64_t PythonCaptureHook::InnermostFrame(uint64_t tstate, const unwind::MemoryView& stack) {
  copy_.Drop();
  uint64_t frame = 0;
  if (layout_.tstate_frame != kNoField) {  // 3.10
    return self_.ReadWord(tstate + layout_.tstate_frame, &frame) ? frame : 0;
  }
  const bool has_stack =
      layout_.tstate_datastack_chunk != kNoField && layout_.tstate_datastack_top != kNoField;
  // The thread state's fields needed, and the last capture's chunk, in one read.
  uint32_t lo = layout_.tstate_cframe;
  uint32_t hi = layout_.tstate_cframe + 8;
  if (has_stack) {
    lo = std::min({lo, layout_.tstate_datastack_chunk, layout_.tstate_datastack_top});
    hi = std::max({hi, layout_.tstate_datastack_chunk + 8, layout_.tstate_datastack_top + 8});
  }
  if (hi - lo > kMaxTstateSpan) return 0;
  unsigned char ts[kMaxTstateSpan];
  const size_t span = hi - lo;
  const size_t cached = has_stack && chunk_ != 0 ? chunk_bytes_ : 0;
  iovec local[2] = {{ts, span}, {copy_.storage(), cached}};
  iovec remote[2] = {{reinterpret_cast<void*>(static_cast<uintptr_t>(tstate + lo)), span},
                     {reinterpret_cast<void*>(static_cast<uintptr_t>(chunk_)), cached}};
  const ssize_t got = unwind::ReadSelfV(local, cached > 0 ? 2 : 1, remote, cached > 0 ? 2 : 1);
  if (got < static_cast<ssize_t>(span)) return 0;
  uint64_t cframe = 0;
  std::memcpy(&cframe, ts + (layout_.tstate_cframe - lo), 8);
  if (cframe == 0) return 0;
  // The C frame is a local of the eval loop: in the stack copy, unless the C stack is deep.
  uintptr_t word = 0;
  if (stack.ReadWord(cframe + layout_.cframe_current_frame, &word)) {
    frame = word;
  } else if (!self_.ReadWord(cframe + layout_.cframe_current_frame, &frame)) {
    return 0;
  }
  if (!has_stack || frame == 0) return frame;
  uint64_t chunk = 0;
  uint64_t top = 0;
  std::memcpy(&chunk, ts + (layout_.tstate_datastack_chunk - lo), 8);
  std::memcpy(&top, ts + (layout_.tstate_datastack_top - lo), 8);
  // Only a chunk that holds the innermost frame below its top is copied: anything else (a
  // generator's frame, a wrong offset) is read frame by frame.
  if (chunk == 0 || top <= chunk || top - chunk > kMaxChunkBytes || frame < chunk ||
      frame + layout_.frame_size > top) {
    return frame;
  }
  if (cached > 0 && chunk == chunk_ && static_cast<size_t>(got) == span + cached &&
      top - chunk <= cached) {
    copy_.Adopt(chunk, cached);  // read with the thread state above
    return frame;
  }
  const uint64_t start = top - chunk > copy_.capacity() ? top - copy_.capacity() : chunk;
  if (frame >= start && copy_.Load(start, top - start) && start == chunk) {
    // Next time: this chunk whole (its size is in its header), up to the copy's capacity.
    uint64_t size = 0;
    std::memcpy(&size, copy_.storage() + kChunkSizeOffset, 8);
    chunk_ = chunk;
    // Its used part and some room to grow: every page copied is one more page the kernel pins.
    chunk_bytes_ = size >= top - chunk && size <= kMaxChunkBytes
                       ? std::min<size_t>({size, top - chunk + kChunkSlack, copy_.capacity()})
                       : 0;
    if (chunk_bytes_ == 0) chunk_ = 0;
  } else {
    chunk_ = 0;
  }
  return frame;
}

size_t PythonCaptureHook::Read(pid_t tid, const unwind::MemoryView& stack, uint64_t* out,
                               size_t capacity) {
  if (tid == 0 || tid != tid_.load(std::memory_order_acquire) || capacity < CaptureWords(1)) {
    return 0;
  }
  const uint64_t tstate = tstate_.load(std::memory_order_acquire);
  if (tstate == 0 || busy_.exchange(true, std::memory_order_acquire)) return 0;
  const uint64_t innermost = InnermostFrame(tstate, stack);
  last_used_copy_.store(copy_.copy_size() != 0, std::memory_order_relaxed);
  ChainEnd end = ChainEnd::kComplete;
  size_t n = 0;
  if (innermost != 0) {
    const size_t room = std::min(max_frames_, (capacity - 1) / 2);
    n = ReadCaptureChain(copy_, layout_, innermost, frames_.get(), room, &end);
  }
  out[0] = kCaptureMagic << 48 | uint64_t{static_cast<uint8_t>(end)} << 32 | n;
  for (size_t i = 0; i < n; ++i) {
    const PythonFrame& f = frames_[i];
    out[1 + 2 * i] = f.code;
    out[2 + 2 * i] = static_cast<uint64_t>(f.instr + 1) << 1 | (f.entry ? 1 : 0);
  }
  busy_.store(false, std::memory_order_release);
  return CaptureWords(n);
}

}  // namespace hangwatch::python
