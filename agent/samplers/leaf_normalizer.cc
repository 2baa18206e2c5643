#include "agent/samplers/leaf_normalizer.h"

#include <vector>

#include "symbols/function_start.h"
#include "symbols/module_map.h"
#include "symbols/perf_map.h"

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
    // The same start as the hang's frames get when it is reported or read back
    // (symbols/function_start.h): a symbol, else the CFI's FDE, so that a busy loop in a
    // stripped binary's unnamed function is one stack too.
    uintptr_t start = pc;
    const std::shared_ptr<const symbols::ModuleMap> map = symbols::CurrentModuleMap();
    const symbols::ModuleAddress where = map->Find(pc);
    uint64_t offset = 0;
    if (where.module != nullptr &&
        symbols::FunctionStartInModule(*where.module, where.offset, &offset) &&
        offset <= where.offset) {
      start = pc - static_cast<uintptr_t>(where.offset - offset);
    } else if (where.module == nullptr) {
      // JIT code: its start as the runtime's perf map says, as far as it has been read (a JVM
      // asked for it when the hang opened, jvm_perf_map_request.h). Not cached while unknown:
      // the map may name it by the next sample.
      if (!symbols::PerfMapOfThisProcess().Find(pc, nullptr, &offset) || offset > pc) return pc;
      start = pc - static_cast<uintptr_t>(offset);
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
