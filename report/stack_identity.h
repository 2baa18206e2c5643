// What a hang is called and how it is recognized: its culprit (the frame a user names as the
// cause), its signature (function names of the application's frames, the same across builds)
// and its fingerprint (module identities and offsets, the same across runs of one build), all
// from a symbolized stack. report/frame_classifier.h decides which frames are the system's or
// a runtime's. Used by the agent when a hang is materialized and by the report tools on stacks
// read back from a file.
#ifndef HANGWATCH_REPORT_STACK_IDENTITY_H_
#define HANGWATCH_REPORT_STACK_IDENTITY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// The innermost frame of `s` that is the application's (FrameKind::kApp); when there is none,
// the innermost frame. An anonymous frame of an interpreter's module (a C builtin of a stripped
// python3) gives way to a function named by the runtime's perf map further out (JIT code:
// python3.12 -X perf's py::function, node's JS functions). Empty for a stack without frames.
Culprit FindCulprit(const Stack& s);

// How a culprit is printed: its symbol, else "module-file+0xoffset", else "0xoffset"; "?" when
// empty.
std::string CulpritName(const Culprit& c);

// 16 hex digits over the normalized names of the top `kSignatureFrames` application frames of
// `s` (all frames when none is the application's). A frame without a name contributes
// "?@module-file". Normalized: GCC clone suffixes (.cold, .isra.0, [clone .constprop.0], ...)
// and V8's tier markers (LazyCompile:*, JS:~, ...) are dropped. "" for a stack without frames.
inline constexpr size_t kSignatureFrames = 5;
std::string Signature(const Stack& s);

// The function name as the signature hashes it (exposed for tests).
std::string NormalizeForSignature(const std::string& symbol);

// 16 hex digits over (build-id or module file name, offset) of the top `kFingerprintFrames`
// frames that identify the stack; `leaf_offset` replaces frame 0's offset (the start of its
// function, so the exact instruction does not matter). Frames of a runtime's machinery are
// skipped, and so are unnamed frames that lead to them inside the same module past the culprit
// (call dispatch): CPython specializes a call site after a few calls and reaches the same C
// function through fewer frames, from another instruction of the eval loop.
inline constexpr size_t kFingerprintFrames = 8;
std::string Fingerprint(const Stack& s, uint64_t leaf_offset);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_STACK_IDENTITY_H_
