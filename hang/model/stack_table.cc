#include "hang/model/stack_table.h"

#include <algorithm>
#include <cstring>

namespace hangwatch::agent {
namespace {

size_t SlotCount(size_t max_stacks) {
  size_t n = 8;
  while (n < 2 * max_stacks) {
    n <<= 1;
  }
  return n;
}

// Final avalanche (the murmur3 finalizer): every input bit reaches every output bit.
inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

}  // namespace

StackTable::StackTable(size_t max_stacks, size_t max_frames)
    : max_stacks_(std::max<size_t>(max_stacks, 1)),
      max_frames_(std::max<size_t>(max_frames, 1)),
      slot_mask_(SlotCount(max_stacks_) - 1),
      entries_(new Entry[max_stacks_]),
      slots_(new uint32_t[slot_mask_ + 1]()),
      pool_(new uintptr_t[max_stacks_ * max_frames_]()),
      tag_pool_(new uint8_t[max_stacks_ * max_frames_]()) {}

uint64_t StackTable::Hash(const uintptr_t* frames, size_t n, uintptr_t leaf_key) {
  // Four independent multiply lanes, so the CPU overlaps their multiplications (a single chain
  // costs a multiply latency per frame, ~2x slower at 64 frames); avalanched at the end.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t lane[4] = {0x243f6a8885a308d3ull ^ n, 0x13198a2e03707344ull ^ leaf_key,
                      0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
  size_t i = 1;
  for (; i + 4 <= n; i += 4) {
    for (size_t k = 0; k < 4; ++k) {
      lane[k] = (lane[k] ^ frames[i + k]) * kMul;
    }
  }
  for (size_t k = 0; i < n; ++i, ++k) {
    lane[k] = (lane[k] ^ frames[i]) * kMul;
  }
  return Avalanche(lane[0] ^ Avalanche(lane[1]) ^ (lane[2] * 31) ^ Avalanche(lane[3] + lane[2]));
}

bool StackTable::KeyEquals(const Entry& e, uint32_t id, const uintptr_t* frames, size_t n,
                           uintptr_t leaf_key) const {
  if (e.num_frames != n || e.leaf_key != leaf_key) {
    return false;
  }
  if (n <= 1) {
    return true;
  }
  return std::memcmp(this->frames(id) + 1, frames + 1, (n - 1) * sizeof(uintptr_t)) == 0;
}

uint32_t StackTable::Insert(const uintptr_t* frames, size_t n, uintptr_t leaf_key, uint32_t t_ms,
                            uint64_t cpu_us, const uint8_t* tags) {
  n = std::min(n, max_frames_);
  const uint64_t h = Hash(frames, n, leaf_key);
  for (size_t slot = h & slot_mask_;; slot = (slot + 1) & slot_mask_) {
    const uint32_t v = slots_[slot];
    if (v == 0) {
      if (size_ == max_stacks_) {
        return kFull;
      }
      const auto id = static_cast<uint32_t>(size_++);
      Entry& e = entries_[id];
      e = Entry{h, leaf_key, static_cast<uint32_t>(n), 1, t_ms, t_ms, cpu_us};
      if (n > 0) {
        std::memcpy(pool_.get() + size_t{id} * max_frames_, frames, n * sizeof(uintptr_t));
        uint8_t* tag_out = tag_pool_.get() + size_t{id} * max_frames_;
        if (tags != nullptr) {
          std::memcpy(tag_out, tags, n);
        } else {
          std::memset(tag_out, 0, n);
        }
      }
      slots_[slot] = id + 1;
      return id;
    }
    const uint32_t id = v - 1;
    Entry& e = entries_[id];
    if (e.hash == h && KeyEquals(e, id, frames, n, leaf_key)) {
      ++e.count;
      e.last_seen_ms = t_ms;
      e.cpu_us += cpu_us;
      return id;
    }
  }
}

void StackTable::Clear() {
  size_ = 0;
  std::memset(slots_.get(), 0, (slot_mask_ + 1) * sizeof(uint32_t));
}

void StackTable::CopyFrom(const StackTable& other) {
  if (&other == this) {
    return;
  }
  // Capacities are fixed at construction; copying between tables of different shapes would
  // have to allocate, which this class never does after construction.
  if (other.max_stacks_ != max_stacks_ || other.max_frames_ != max_frames_) {
    Clear();
    return;
  }
  size_ = other.size_;
  std::memcpy(entries_.get(), other.entries_.get(), size_ * sizeof(Entry));
  std::memcpy(slots_.get(), other.slots_.get(), (slot_mask_ + 1) * sizeof(uint32_t));
  std::memcpy(pool_.get(), other.pool_.get(), size_ * max_frames_ * sizeof(uintptr_t));
  std::memcpy(tag_pool_.get(), other.tag_pool_.get(), size_ * max_frames_);
}

}  // namespace hangwatch::agent
