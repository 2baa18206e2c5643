// Demangle: Itanium C++ ABI names to readable ones. Uses LLVM's demangler when the build found
// it (libLLVMDemangle from llvm-14-dev), so that names match llvm-symbolizer's byte for byte
// (GNU's __cxa_demangle prints lambdas and some templates differently); falls back to
// abi::__cxa_demangle otherwise.
#ifndef HANGWATCH_SYMBOLS_DEMANGLE_H_
#define HANGWATCH_SYMBOLS_DEMANGLE_H_

#include <string>
#include <string_view>

namespace hangwatch::symbols {

// Demangles a name that starts with "_Z"; any other name, or one that fails to demangle, is
// returned unchanged (as llvm-symbolizer does).
std::string Demangle(std::string_view mangled);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DEMANGLE_H_
