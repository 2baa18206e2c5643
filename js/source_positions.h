// V8's source position table (a ByteArray of a BytecodeArray or Code object): entries of
// (code offset, source position, is_statement), each as deltas from the previous entry, each a
// zig-zag varint of 7-bit groups (bit 7: more follow); a negative code offset delta -d-1 marks
// an expression position of delta d. A source position is V8's SourcePosition bits: bit 0
// external (not a script offset), bits 1-30 the script offset + 1.
//
// Pure: no memory reads; the caller copies the table. Bounded by the table's size.
#ifndef HANGWATCH_JS_SOURCE_POSITIONS_H_
#define HANGWATCH_JS_SOURCE_POSITIONS_H_

#include <cstddef>
#include <cstdint>

namespace hangwatch::js {

// The script offset V8 gives for code offset `code_offset` (a bytecode offset): that of the last
// entry at or before it. -1 when none, when the table is malformed, or the position is external.
int64_t ScriptOffsetAt(const unsigned char* table, size_t size, int64_t code_offset);

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_SOURCE_POSITIONS_H_
