// StackTable: the unique stacks of one hang, interned in memory allocated once.
//
// Open addressing over a power-of-two slot array (at least twice the entry capacity, so probe
// sequences stay short); entries are dense, numbered in insertion order (the stack id), and
// their frames live in one preallocated pool. Insert() never allocates: when the table is full
// a new stack is refused (kFull) and the caller counts it as dropped.
//
// Two samples are the same stack when their return addresses (frames[1..]) are equal and their
// interrupted instructions have the same `leaf_key` (the caller passes the start of the
// function holding frames[0], so that a busy loop is one stack, not one per instruction).
//
// Each frame may carry a one-byte tag (the agent stores how the frame was found); tags are kept
// as first seen and are not part of the key.
#ifndef HANGWATCH_HANG_MODEL_STACK_TABLE_H_
#define HANGWATCH_HANG_MODEL_STACK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hangwatch::agent {

class StackTable {
 public:
  static constexpr uint32_t kFull = UINT32_MAX;

  struct Entry {
    uint64_t hash = 0;
    uintptr_t leaf_key = 0;
    uint32_t num_frames = 0;
    uint32_t count = 0;
    uint32_t first_seen_ms = 0;
    uint32_t last_seen_ms = 0;
    uint64_t cpu_us = 0;
  };

  // Allocates room for `max_stacks` stacks of up to `max_frames` frames each.
  StackTable(size_t max_stacks, size_t max_frames);
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // Counts one sample of the stack `frames[0..n)` (n is clamped to max_frames) taken at `t_ms`
  // with `cpu_us` of CPU since the previous sample. `tags` (n bytes, may be null: all 0) are
  // stored with a new stack. Returns the stack's id, or kFull.
  uint32_t Insert(const uintptr_t* frames, size_t n, uintptr_t leaf_key, uint32_t t_ms,
                  uint64_t cpu_us, const uint8_t* tags = nullptr);

  // Forgets every stack; keeps the memory.
  void Clear();
  // Makes this table equal to `other` (same capacities required). No allocation.
  void CopyFrom(const StackTable& other);

  size_t size() const { return size_; }
  size_t max_stacks() const { return max_stacks_; }
  size_t max_frames() const { return max_frames_; }
  const Entry& entry(uint32_t id) const { return entries_[id]; }
  // The frames of stack `id` as first seen (entry(id).num_frames of them).
  const uintptr_t* frames(uint32_t id) const { return pool_.get() + size_t{id} * max_frames_; }
  // The frames' tags, as stored by the Insert() that created stack `id`.
  const uint8_t* tags(uint32_t id) const { return tag_pool_.get() + size_t{id} * max_frames_; }

  // The hash Insert() uses; exposed for tests and fingerprints.
  static uint64_t Hash(const uintptr_t* frames, size_t n, uintptr_t leaf_key);

 private:
  bool KeyEquals(const Entry& e, uint32_t id, const uintptr_t* frames, size_t n,
                 uintptr_t leaf_key) const;

  size_t max_stacks_;
  size_t max_frames_;
  size_t slot_mask_;
  size_t size_ = 0;
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<uint32_t[]> slots_;  // entry id + 1; 0 = empty
  std::unique_ptr<uintptr_t[]> pool_;
  std::unique_ptr<uint8_t[]> tag_pool_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_STACK_TABLE_H_
