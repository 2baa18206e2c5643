// How an interpreter's frame (a Python, JavaScript or Ruby function) is stored in a hang's
// StackTable: one word and one tag, like a native frame, so that two samples with the same
// interpreter frames are one stack.
//
// The word: bit 63 set (no native address has it), bits 48-62 the instruction + 1 (the runtime's
// code units; 0: not started or unknown; saturated at 0x7fff, so a function of more than 32766
// code units shares one word past that point), bits 0-47 the key: the runtime's object for the
// function (CPython's code object, a Ruby iseq, a V8 SharedFunctionInfo), by which the runtime's
// RuntimeNames (runtime_names.h) names the frame.
// The tag, in place of the native frame's FrameMethod: 0x80 | language << 1 | partial, where
// language is 0 for Python, 1 for JavaScript, 2 for Ruby, and partial marks the outermost frame
// of a chain read only in part (its outer frames are missing: Stack::partial). Python's two tags
// (0x80, 0x81) are those of open-hang files since format 5.
#ifndef HANGWATCH_HANG_MODEL_RUNTIME_FRAME_WORD_H_
#define HANGWATCH_HANG_MODEL_RUNTIME_FRAME_WORD_H_

#include <cstdint>

#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

inline constexpr uint8_t kPythonFrameTag = 0x80;
inline constexpr uint8_t kPythonPartialTag = 0x81;
inline constexpr uint8_t kRuntimeTagLast = 0x85;  // Ruby, partial

// The tag of a frame of `language` (interpreted: not kNative).
inline constexpr uint8_t RuntimeFrameTag(FrameLanguage language, bool partial) {
  const unsigned index = language == FrameLanguage::kJs     ? 1
                         : language == FrameLanguage::kRuby ? 2
                                                            : 0;
  return static_cast<uint8_t>(0x80u | index << 1 | (partial ? 1u : 0u));
}
inline bool IsRuntimeTag(uint8_t tag) { return tag >= kPythonFrameTag && tag <= kRuntimeTagLast; }
inline bool IsRuntimePartialTag(uint8_t tag) { return IsRuntimeTag(tag) && (tag & 1) != 0; }
// The language of a runtime tag (IsRuntimeTag).
inline FrameLanguage RuntimeTagLanguage(uint8_t tag) {
  switch ((tag >> 1) & 3) {
    case 1:
      return FrameLanguage::kJs;
    case 2:
      return FrameLanguage::kRuby;
    default:
      return FrameLanguage::kPython;
  }
}

inline constexpr uintptr_t kRuntimeWordBit = uintptr_t{1} << 63;
inline constexpr uintptr_t kRuntimeKeyMask = (uintptr_t{1} << 48) - 1;

inline uintptr_t RuntimeFrameWord(uint64_t key, int64_t instr) {
  const uint64_t stored = instr < 0         ? 0
                          : instr >= 0x7ffe ? 0x7fff
                                            : static_cast<uint64_t>(instr) + 1;
  return kRuntimeWordBit | static_cast<uintptr_t>(stored << 48) | (key & kRuntimeKeyMask);
}
inline bool IsRuntimeWord(uintptr_t word) { return (word & kRuntimeWordBit) != 0; }
inline uint64_t RuntimeWordKey(uintptr_t word) { return word & kRuntimeKeyMask; }
inline int64_t RuntimeWordInstr(uintptr_t word) {
  return static_cast<int64_t>((word >> 48) & 0x7fff) - 1;
}
// An interpreted leaf's key in the stack table: its function (the key), not the instruction, as
// a native leaf counts by its function's start.
inline uintptr_t RuntimeLeafKey(uintptr_t word) { return kRuntimeWordBit | RuntimeWordKey(word); }

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_RUNTIME_FRAME_WORD_H_
