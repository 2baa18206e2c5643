#include "agent/core/hang_ring.h"

#include <algorithm>

namespace hangwatch::agent {

HangRing::HangRing(size_t capacity, const HangLimits& limits) {
  slots_.reserve(std::max<size_t>(capacity, 1));
  for (size_t i = 0; i < std::max<size_t>(capacity, 1); ++i) {
    slots_.push_back(std::make_unique<HangData>(limits));
  }
}

void HangRing::Push(const HangData& hang) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_[pushed_ % slots_.size()]->CopyFrom(hang);
  ++pushed_;
}

void HangRing::ForEachNewestFirst(const std::function<void(const HangData&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t n = std::min<uint64_t>(pushed_, slots_.size());
  for (uint64_t i = 0; i < n; ++i) {
    fn(*slots_[(pushed_ - 1 - i) % slots_.size()]);
  }
}

size_t HangRing::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::min<uint64_t>(pushed_, slots_.size()));
}

uint64_t HangRing::pushed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pushed_;
}

}  // namespace hangwatch::agent
