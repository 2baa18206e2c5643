// File paths as LLVM joins them (llvm::sys::path::append for POSIX paths), so that the index
// names files exactly as llvm-symbolizer prints them.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_PATHS_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_PATHS_H_

#include <string>
#include <string_view>

namespace hangwatch::symbols::internal {

// Appends `component` to `path` with one separator between them.
void AppendPath(std::string* path, std::string_view component);

// A file name as libdw joins its directory and name; a relative result is relative to the
// compilation directory, which LLVM prepends. Empty for a null name.
std::string AbsoluteFile(const char* name, const char* comp_dir);

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_PATHS_H_
