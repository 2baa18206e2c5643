// The few facts of V8's layout that its postmortem metadata (v8_metadata.h) does not publish,
// as V8 11.3 (node 20) has them: the bit order of V8's ScopeFlags (src/objects/scope-info.tq),
// with the scope type values and the slot order that node 20.20.2's live objects show (newer V8
// moved the positions before the locals), and the BytecodeArray field read off the same live
// objects; V8 10.2 in Debian's node 18.20.4 reads the same. Every object read with them is
// checked, so a V8 that lays these out otherwise fails the checks (unnamed or lineless frames)
// rather than naming a frame wrongly:
//  - ScopeInfo's flags (a Smi in its first slot): which optional slots follow the context
//    locals. The parse must land on a String or 0 for the name, String or undefined for the
//    inferred name, and two Smis start <= end for the positions, after context local names
//    that are heap objects and infos that are Smis (scope_info.cc).
//  - BytecodeArray's source position table: the third tagged field after the length. It must
//    be a ByteArray (else V8 has not collected positions for it: they are lazy).
#ifndef HANGWATCH_JS_UNPUBLISHED_LAYOUT_H_
#define HANGWATCH_JS_UNPUBLISHED_LAYOUT_H_

#include <cstdint>

namespace hangwatch::js::v8_11 {

// ScopeFlags bit fields.
inline constexpr uint32_t kScopeTypeMask = 0xf;  // bits 0-3
inline constexpr uint32_t kFunctionScope = 2;    // ScopeType::FUNCTION_SCOPE in 11.3
inline constexpr uint32_t kHasSavedClassVariable = 1u << 10;
inline constexpr int kFunctionVariableShift = 12;  // 2 bits, 0: NONE
inline constexpr uint32_t kHasInferredFunctionName = 1u << 14;
// Context locals whose names are stored inline; from this count on, one hash table instead.
inline constexpr int64_t kMaxInlinedLocalNames = 75;

// BytecodeArray: source_position_table is the fourth tagged field after the map (map, length,
// constant_pool, handler_table, source_position_table).
inline constexpr int32_t kBytecodeSourcePositionsSlot = 4;

}  // namespace hangwatch::js::v8_11

#endif  // HANGWATCH_JS_UNPUBLISHED_LAYOUT_H_
