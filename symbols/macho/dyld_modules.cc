#include "symbols/macho/dyld_modules.h"

#if defined(__APPLE__)

#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach/vm_prot.h>

#include <span>

#include "symbols/macho/macho_parser.h"

namespace hangwatch::symbols::macho {

// The parser mirrors these so that it builds and is tested where <mach-o/*.h> do not exist.
static_assert(kMagic64 == MH_MAGIC_64 && kCigam64 == MH_CIGAM_64 && kMagic32 == MH_MAGIC);
static_assert(kLcSegment64 == LC_SEGMENT_64 && kLcUuid == LC_UUID && kLcIdDylib == LC_ID_DYLIB);
static_assert(kVmProtExecute == VM_PROT_EXECUTE && kFileTypeExecute == MH_EXECUTE &&
              kFileTypeDylib == MH_DYLIB);
static_assert(kHeader64Size == sizeof(mach_header_64) && kLoadCommandSize == sizeof(load_command) &&
              kSegment64Size == sizeof(segment_command_64) &&
              kSection64Size == sizeof(section_64) && kUuidCommandSize == sizeof(uuid_command) &&
              kDylibCommandSize == sizeof(dylib_command));

absl::StatusOr<Module> ModuleFromLoadedImage(const void* header, intptr_t slide, const char* path) {
  if (header == nullptr) return absl::InvalidArgumentError("no image header");
  // A mapped image's header and load commands are contiguous and readable: __TEXT starts with
  // them. Their extent comes from the header itself, then everything is parsed with checks.
  const auto* bytes = static_cast<const unsigned char*>(header);
  const size_t size = HeaderAndCommandsSize(std::span(bytes, kHeader64Size));
  if (size == 0) return absl::InvalidArgumentError("not a 64-bit Mach-O header");
  absl::StatusOr<MachOImage> image = ParseMachOImage(std::span(bytes, size));
  if (!image.ok()) return image.status();

  Module module;
  module.path = path != nullptr ? path : "";
  module.load_bias = static_cast<uintptr_t>(slide);
  for (const Segment& seg : image->segments) {
    if (!seg.executable() || seg.vmsize == 0) continue;
    AddressRange range;
    range.lo = static_cast<uintptr_t>(seg.vmaddr) + module.load_bias;
    range.hi = range.lo + static_cast<uintptr_t>(seg.vmsize);
    module.exec_ranges.push_back(range);
  }
  module.build_id = image->UuidHex();
  return module;
}

std::vector<Module> DyldModules(size_t* skipped) {
  std::vector<Module> modules;
  size_t bad = 0;
  // Images can be added or removed while this runs: an index past the end yields a null
  // header, which is skipped, never dereferenced.
  const uint32_t count = _dyld_image_count();
  modules.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const mach_header* header = _dyld_get_image_header(i);
    if (header == nullptr) continue;
    absl::StatusOr<Module> module =
        ModuleFromLoadedImage(header, _dyld_get_image_vmaddr_slide(i), _dyld_get_image_name(i));
    if (module.ok()) {
      modules.push_back(*std::move(module));
    } else {
      ++bad;
    }
  }
  if (skipped != nullptr) *skipped = bad;
  return modules;
}

}  // namespace hangwatch::symbols::macho

#endif  // defined(__APPLE__)
