// FunctionStartInModule: where the function holding an address starts, so that a frame without
// a name still has an identity that tells its function from every other one of its module (a
// stripped binary's static functions: Debian's python3.11, emacs, tmux), the same in every run
// of the build and whoever computes it: the agent for a hang of its own process, a reader of
// an open-hang file for a process that died. Both read the same file, so both agree.
//
// The rule, for an ELF virtual address `offset` of module `m`:
//   1. the function symbol that names it (ModuleSymbolTable: what SymbolizeInProcess names the
//      frame with), its address;
//   2. else the FDE of the module's .eh_frame whose range holds it: its
//      initial location (compilers emit one FDE per function, and one per split-off part such
//      as a function's .cold block, which is then a function of its own here);
//   3. else the nearest function symbol below it;
//   4. else unknown (no symbols and no CFI, or a file that is not the build that ran).
// Files are opened on first use per module (path and build-id) and kept; never on the capture
// path. Thread-safe.
#ifndef HANGWATCH_SYMBOLS_FUNCTION_START_H_
#define HANGWATCH_SYMBOLS_FUNCTION_START_H_

#include <cstdint>

#include "symbols/module_map.h"

namespace hangwatch::symbols {

// Looks `offset` up as the rule above says; for a return address (every frame but the
// interrupted one) pass offset - 1. False when unknown.
bool FunctionStartInModule(const Module& m, uint64_t offset, uint64_t* start);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_FUNCTION_START_H_
