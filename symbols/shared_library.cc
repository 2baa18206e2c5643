#include "symbols/shared_library.h"

namespace hangwatch::symbols {

void* OpenSharedLibrary(const char* soname, const char* debian_package, std::string* error) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = std::string("cannot load ") + soname + " (Debian: " + debian_package +
             "): " + (why != nullptr ? why : "unknown error");
  }
  return handle;
}

}  // namespace hangwatch::symbols
