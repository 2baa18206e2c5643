// What a function's ScopeInfo says about it: its name, the name V8 inferred for an anonymous
// function (`obj.handler = function () {}` gives "obj.handler"), and where it begins and ends in
// its script. V8 11 moves a compiled function's name from its SharedFunctionInfo into this
// object, after the context locals, in slots whose presence the flags tell
// (unpublished_layout.h); the parse is checked slot by slot.
#ifndef HANGWATCH_JS_SCOPE_INFO_H_
#define HANGWATCH_JS_SCOPE_INFO_H_

#include <cstdint>

#include "js/heap_reader.h"

namespace hangwatch::js {

struct ScopeInfoFacts {
  uint64_t name = 0;            // a tagged String, or 0 when none
  uint64_t inferred_name = 0;   // a tagged String, or 0 when none
  int64_t start_position = -1;  // -1: unknown (not a function scope)
  int64_t end_position = -1;
};

// Reads the ScopeInfo `scope_info` (tagged; its type already checked by the caller). False when
// the slots do not read as a V8 11 ScopeInfo should.
bool ReadScopeInfo(const HeapReader& heap, uint64_t scope_info, ScopeInfoFacts* out);

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_SCOPE_INFO_H_
