// Demangle: LLVM's Itanium demangler when available, else the C++ runtime's.
#include "symbols/demangle.h"

#include <cstdlib>

#if HANGWATCH_HAVE_LLVM_DEMANGLE
#include "llvm/Demangle/Demangle.h"
#else
#include <cxxabi.h>
#endif

namespace hangwatch::symbols {

std::string Demangle(std::string_view mangled) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return std::string(mangled);
  std::string z(mangled);  // NUL-terminated copy
  int status = 0;
#if HANGWATCH_HAVE_LLVM_DEMANGLE
  char* out = llvm::itaniumDemangle(z.c_str(), nullptr, nullptr, &status);
#else
  char* out = abi::__cxa_demangle(z.c_str(), nullptr, nullptr, &status);
#endif
  if (status != 0 || out == nullptr) {
    std::free(out);
    return z;
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace hangwatch::symbols
