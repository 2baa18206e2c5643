// Loading an optional shared library at run time (dlopen): the features that need one only when
// asked (debuginfod, libcurl for `hangwatch export`) find it then, so the CLI starts, and does
// everything else, on a machine without it, and links statically.
#ifndef HANGWATCH_SYMBOLS_SHARED_LIBRARY_H_
#define HANGWATCH_SYMBOLS_SHARED_LIBRARY_H_

#include <dlfcn.h>

#include <string>

namespace hangwatch::symbols {

// dlopen(soname) with local symbols; nullptr, with "cannot load SONAME (Debian: PACKAGE): why"
// in *error, when it cannot be loaded. The handle is never closed: the functions stay in use.
void* OpenSharedLibrary(const char* soname, const char* debian_package, std::string* error);

// *out = the function `name` of the library; false when it lacks it.
template <typename F>
bool LoadFunction(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_SHARED_LIBRARY_H_
