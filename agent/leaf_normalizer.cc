#include "agent/leaf_normalizer.h"

#include <vector>

#include "symbols/in_process_symbolizer.h"

namespace hangwatch::agent {
namespace {

class SymbolizingLeafNormalizer final : public LeafNormalizer {
 public:
  explicit SymbolizingLeafNormalizer(size_t entries) {
    size_t n = 64;
    while (n < entries) {
      n <<= 1;
    }
    cache_.resize(n);
    mask_ = n - 1;
  }

  uintptr_t FunctionStart(uintptr_t pc) override {
    if (pc == 0) {
      return 0;
    }
    Slot& slot = cache_[(pc >> 2 ^ pc >> 13) & mask_];
    if (slot.pc == pc) {
      return slot.start;
    }
    symbols::SymbolInfo info;
    uintptr_t start = pc;
    if (symbols::SymbolizeInProcess(pc, /*is_return_address=*/false, &info) &&
        info.function_offset <= pc) {
      start = pc - static_cast<uintptr_t>(info.function_offset);
    }
    slot = Slot{pc, start};
    return start;
  }

 private:
  struct Slot {
    uintptr_t pc = 0;
    uintptr_t start = 0;
  };
  std::vector<Slot> cache_;
  size_t mask_ = 0;
};

}  // namespace

std::unique_ptr<LeafNormalizer> MakeSymbolizingLeafNormalizer(size_t cache_entries) {
  return std::make_unique<SymbolizingLeafNormalizer>(cache_entries);
}

}  // namespace hangwatch::agent
