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
#include <span>
#include <string>
#include <string_view>

#include "hangwatch/culprit_label.h"  // CulpritLabel, how a culprit is printed
#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// The innermost frame of `s` that is the application's (FrameKind::kApp); when there is none,
// the innermost library frame (FrameKind::kLibrary: a third-party Python package's), else the
// innermost Python frame, else the innermost frame. In a stack with Python frames, the
// interpreter's native frames are its runtime's, and so is native code called from Python (a C
// extension's, a builtin's) when the stack has an application or library Python frame: a Python
// user names the Python function that called json.dumps, not _json's encoder. An anonymous frame of
// an interpreter's module (a C builtin of a stripped python3) gives way to a function named by the
// runtime's perf map further out (JIT code: python3.12 -X perf's py::function, node's JS
// functions). Code outside every module without a perf-map name, in a stack that has perf-map
// names, is the runtime's (V8's builtins, copied into anonymous memory). Empty for a stack without
// frames.
Culprit FindCulprit(const Stack& s);

// A hang's culprit, from all its stacks (`stacks` as HangRecord::stacks: most samples first):
// of the application functions (FunctionIdentity, application frames as FindCulprit judges
// them) present in at least three quarters of the samples (else half of them), the innermost
// (inside each of the others, in the samples that hold both, at least as often as outside it;
// among several, the one with the most samples, then the first met in stack order, innermost
// frame first). Library functions (FrameKind::kLibrary) when no application function is. A
// partial stack (Stack::partial, while some stack is whole) counts for the functions it holds
// and for no other: its chain was cut short, so a caller it lacks may have been there. The
// culprit is that function's frame in the dominant stack when it has one, else in the first
// stack that has (Culprit::stack). FindCulprit(stacks[0]) when no function is in half of the
// samples. Bounded: one identity string per frame of the given stacks, and a table of pairs of
// the functions in half of the samples.
Culprit HangCulprit(std::span<const Stack> stacks);

// What tells a frame's function from others: for a Python frame, its qualified name and the base
// name of its file, PythonFunctionLabel(symbol, file, 0) ("Handler.handle (app.py)"), never the
// code object's address (another in every run); else its normalized name (NormalizeForSignature);
// without a name, "?@" + module file name + "#" + build-id + "+0x" + start of the function
// (Frame::function_start), or, when the start is unknown, "@0x" + the frame's offset for a
// return address (a call site) and nothing for the interrupted instruction (`leaf`).
std::string FunctionIdentity(const Frame& f, bool leaf);

// A Python function as py-spy prints it: "Handler.handle (app.py:42)" (the file's base name;
// without ":line" when `line` is 0, without the parentheses when `file` is empty; "?" for an
// unknown name).
std::string PythonFunctionLabel(std::string_view qualname, std::string_view file, int line);

// 16 hex digits over the function identities (FunctionIdentity) of the top `kSignatureFrames`
// application frames of `s` (when none is the application's: its library frames, else its Python
// frames, else all frames): names where there are names, else module, build-id and start of the
// function; a Python frame's qualified name and file base name. Normalized: GCC clone suffixes
// (.cold, .isra.0, [clone .constprop.0], ...) and V8's tier markers (LazyCompile:*, JS:~, ...) are
// dropped.
// "" for a stack without frames.
// `from`: the frame to start at, the hang's culprit (HangCulprit) when `s` holds it, so that
// the signature follows what most samples share, not the dominant stack's own leaf (an
// interpreter's dominant stack holds a few of its samples and changes from run to run).
inline constexpr size_t kSignatureFrames = 5;
std::string Signature(const Stack& s, size_t from = 0);

// A hang's signature: Signature of the stack that holds `culprit` (HangCulprit(stacks)), from
// the culprit's frame.
std::string HangSignature(std::span<const Stack> stacks, const Culprit& culprit);

// The function name as the signature hashes it (exposed for tests).
std::string NormalizeForSignature(const std::string& symbol);

// 16 hex digits over (build-id or module file name, offset) of the top `kFingerprintFrames`
// frames that identify the stack (a Python frame: its qualified name, file and line, never the
// code object's address; the innermost Python frame without its line, which moves while its
// function computes); `leaf_offset` replaces frame 0's offset (the start of its
// function, so the exact instruction does not matter). Frames of a runtime's machinery (Python's
// standard library and the interpreter's native frames among Python frames too) are
// skipped, and so are unnamed frames that lead to them inside the same module past the culprit
// (call dispatch): CPython specializes a call site after a few calls and reaches the same C
// function through fewer frames, from another instruction of the eval loop.
inline constexpr size_t kFingerprintFrames = 8;
std::string Fingerprint(const Stack& s, uint64_t leaf_offset);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_STACK_IDENTITY_H_
