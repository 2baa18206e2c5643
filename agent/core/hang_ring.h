// HangRing: the last N hangs, in slots allocated at construction; a push overwrites the oldest.
// Thread-safe: the watchdog pushes, any thread reads.
#ifndef HANGWATCH_AGENT_CORE_HANG_RING_H_
#define HANGWATCH_AGENT_CORE_HANG_RING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "hang/model/hang_data.h"

namespace hangwatch::agent {

class HangRing {
 public:
  HangRing(size_t capacity, const HangLimits& limits);

  // Copies `hang` into the oldest slot. No allocation.
  void Push(const HangData& hang);

  // Calls fn on each kept hang, newest first, under the ring's lock (keep fn short: it is meant
  // for copying out).
  void ForEachNewestFirst(const std::function<void(const HangData&)>& fn) const;

  size_t size() const;
  size_t capacity() const { return slots_.size(); }
  uint64_t pushed() const;  // total pushes since construction

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<HangData>> slots_;
  uint64_t pushed_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_HANG_RING_H_
