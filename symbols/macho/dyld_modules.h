// The modules (main executable, dylibs, bundles) that dyld has loaded in this process, as
// symbols::Module entries: path, slide as load bias, __TEXT (every executable segment) as
// runtime ranges, and LC_UUID as the build id (lowercase hex), so that a Mach-O frame is
// reported as module + UUID + offset exactly like an ELF one is as module + build-id + offset.
//
// Apple platforms only. Not for the capture path (allocates; dyld's image list is read with
// the _dyld_* calls, which take dyld's lock).
#ifndef HANGWATCH_SYMBOLS_MACHO_DYLD_MODULES_H_
#define HANGWATCH_SYMBOLS_MACHO_DYLD_MODULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/module_map.h"

namespace hangwatch::symbols::macho {

// Builds a Module from an image mapped in this process: `header` points at its mach_header_64,
// `slide` is what dyld added to its vmaddrs. InvalidArgument, with a reason, when the header's
// load commands do not parse.
absl::StatusOr<Module> ModuleFromLoadedImage(const void* header, intptr_t slide, const char* path);

// Every image dyld currently lists, in dyld's order (the main executable first). Images whose
// headers do not parse are skipped and counted in *skipped (if not null).
std::vector<Module> DyldModules(size_t* skipped = nullptr);

}  // namespace hangwatch::symbols::macho

#endif  // HANGWATCH_SYMBOLS_MACHO_DYLD_MODULES_H_
