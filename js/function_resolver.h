// FunctionResolver: a JavaScript function named from its SharedFunctionInfo, as a stack trace
// would: its name (or the name V8 inferred, or "(anonymous)"), its script's name (the file
// path or URL), where it begins (the line of its start position) and, for an interpreted frame,
// the line being run (from the bytecode's source position table, when V8 has collected it).
//
// Reads only; allocates (strings). Off the capture path: the agent calls it on the watchdog.
// Every object is checked by its type first (heap_reader.h), so a SharedFunctionInfo that the
// GC moved or freed under the reader gives false, not another function's name.
#ifndef HANGWATCH_JS_FUNCTION_RESOLVER_H_
#define HANGWATCH_JS_FUNCTION_RESOLVER_H_

#include <cstdint>
#include <string>

#include "js/heap_reader.h"

namespace hangwatch::js {

struct FunctionInfo {
  std::string name;             // never empty: "(anonymous)" when V8 has none
  std::string script;           // the script's name; "" when it has none (eval, a wrapped function)
  uint64_t script_object = 0;   // the tagged Script, 0 when none
  int64_t start_position = -1;  // character offset in the script; -1 unknown
  int line = 0;                 // of start_position, 1-based; 0 unknown
};

class FunctionResolver {
 public:
  // Names and files longer than these are cut.
  static constexpr size_t kMaxName = 256;
  static constexpr size_t kMaxScript = 512;

  explicit FunctionResolver(const HeapReader& heap) : heap_(heap) {}

  // `sfi`: a tagged SharedFunctionInfo. False when it is none, or its name cannot be read.
  bool Resolve(uint64_t sfi, FunctionInfo* out) const;
  // The script offset run at bytecode offset `offset` of `bytecode_array` (tagged; its type
  // checked here): -1 when the array has no source position table (V8 builds them lazily).
  int64_t BytecodePosition(uint64_t bytecode_array, int64_t offset) const;
  // The 1-based line of `position` in `script` (its line_ends when V8 computed them, else its
  // source scanned); 0 when unknown.
  int LineOf(uint64_t script, int64_t position) const;
  // True when `bytecode_array` is the bytecode of `sfi` (its function data, directly or through
  // the InterpreterData that holds it).
  bool IsBytecodeOf(uint64_t sfi, uint64_t bytecode_array) const;

 private:
  const HeapReader& heap_;
};

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_FUNCTION_RESOLVER_H_
