// How a Python frame is stored in a hang's StackTable: one word and one tag, like a native
// frame, so that two samples with the same Python frames are one stack.
//
// The word: bit 63 set (no native address has it), bits 48-62 the instruction + 1 (code units;
// 0: not started; saturated at 0x7fff, so a function of more than 32766 code units shares one
// word past that point), bits 0-47 the code object's address. The tag: kPythonFrameTag in
// place of the native frame's FrameMethod; kPythonPartialTag on the outermost Python frame of a
// chain read only in part (python::ChainEnd other than kComplete: its outer frames are missing,
// Stack::partial).
#ifndef HANGWATCH_HANG_MODEL_PYTHON_FRAME_WORD_H_
#define HANGWATCH_HANG_MODEL_PYTHON_FRAME_WORD_H_

#include <cstdint>

namespace hangwatch::agent {

inline constexpr uint8_t kPythonFrameTag = 0x80;
inline constexpr uint8_t kPythonPartialTag = 0x81;
inline bool IsPythonTag(uint8_t tag) { return tag == kPythonFrameTag || tag == kPythonPartialTag; }
inline constexpr uintptr_t kPythonWordBit = uintptr_t{1} << 63;
inline constexpr uintptr_t kPythonCodeMask = (uintptr_t{1} << 48) - 1;

inline uintptr_t PythonFrameWord(uint64_t code, int64_t instr) {
  const uint64_t stored = instr < 0         ? 0
                          : instr >= 0x7ffe ? 0x7fff
                                            : static_cast<uint64_t>(instr) + 1;
  return kPythonWordBit | static_cast<uintptr_t>(stored << 48) | (code & kPythonCodeMask);
}
inline bool IsPythonWord(uintptr_t word) { return (word & kPythonWordBit) != 0; }
inline uint64_t PythonWordCode(uintptr_t word) { return word & kPythonCodeMask; }
inline int64_t PythonWordInstr(uintptr_t word) {
  return static_cast<int64_t>((word >> 48) & 0x7fff) - 1;
}
// A Python leaf's key in the stack table: its function (the code object), not the
// instruction, as a native leaf counts by its function's start.
inline uintptr_t PythonLeafKey(uintptr_t word) { return kPythonWordBit | PythonWordCode(word); }

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_PYTHON_FRAME_WORD_H_
