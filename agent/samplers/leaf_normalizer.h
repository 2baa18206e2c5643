// LeafNormalizer: maps the interrupted instruction of a sample to the start of its function, so
// that samples of one busy loop (a different pc each time) intern as one stack, and so that
// fingerprints do not depend on where in the function the sample landed.
#ifndef HANGWATCH_AGENT_SAMPLERS_LEAF_NORMALIZER_H_
#define HANGWATCH_AGENT_SAMPLERS_LEAF_NORMALIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hangwatch::agent {

class LeafNormalizer {
 public:
  virtual ~LeafNormalizer() = default;
  // The start of the function holding `pc`, or `pc` itself when unknown.
  virtual uintptr_t FunctionStart(uintptr_t pc) = 0;
};

// Returns pc unchanged (tests with synthetic addresses).
class IdentityLeafNormalizer final : public LeafNormalizer {
 public:
  uintptr_t FunctionStart(uintptr_t pc) override { return pc; }
};

// Looks functions up as symbols/function_start.h says (a symbol, else the CFI; code outside every
// module in the process's perf map, symbols/perf_map.h, as read so far), behind a fixed-size
// direct-mapped cache (allocated once), so a hot loop costs one lookup per distinct pc and memory
// never grows. Used on the watchdog thread only (not thread-safe).
std::unique_ptr<LeafNormalizer> MakeSymbolizingLeafNormalizer(size_t cache_entries = 4096);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_LEAF_NORMALIZER_H_
