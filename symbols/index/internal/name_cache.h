// NameCache: a DIE walk's demangled names, remembered per thread. Demangling is the most
// expensive step per name of an index build.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_NAME_CACHE_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_NAME_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "symbols/demangle.h"

namespace hangwatch::symbols::internal {

// Keyed by the string's address: names come from .debug_str, which the linker deduplicates,
// so equal names mostly share one address within a libdw handle.
class NameCache {
 public:
  struct Entry {
    std::string demangled;
    // Its index among the names of unit `unit` (a per-thread unit number), so that a node
    // finds its unit-local name index without another lookup.
    uint32_t unit = 0;
    uint32_t local = 0;
  };

  // Abstract origin DIE offset -> its name (per thread: offsets are per libdw handle); null
  // when the origin has no name.
  absl::flat_hash_map<uint64_t, Entry*> by_origin;

  // The entry of a name (null for null); stable for the cache's lifetime (units keep pointers
  // to the demangled strings, not copies).
  Entry* Get(const char* mangled) {
    if (mangled == nullptr) return nullptr;
    auto [it, inserted] = cache_.try_emplace(mangled);
    if (inserted) it->second.demangled = Demangle(mangled);
    return &it->second;
  }

 private:
  absl::node_hash_map<const char*, Entry> cache_;
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_NAME_CACHE_H_
