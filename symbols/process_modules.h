// The modules of ANOTHER process, from /proc/PID/maps and the mapped ELF files: path, load
// bias, executable ranges, GNU build-id. The counterpart of ModuleMap::Snapshot() (which asks
// the dynamic loader of this process) for `hangwatch snapshot PID`.
//
// The load bias is computed the way the kernel and ld.so lay a file out: a PT_LOAD segment is
// mapped at page_down(bias + p_vaddr) from file offset page_down(p_offset), so the mapping
// whose file offset equals page_down(p_offset) of an executable segment gives
// bias = mapping start - page_down(p_vaddr). Offsets are then ELF virtual addresses, as for the
// in-process map (what `hangwatch symbolize` and the DWARF index expect).
#ifndef HANGWATCH_SYMBOLS_PROCESS_MODULES_H_
#define HANGWATCH_SYMBOLS_PROCESS_MODULES_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/module_map.h"

namespace hangwatch::symbols {

// One line of /proc/PID/maps.
struct MapsEntry {
  uint64_t lo = 0;
  uint64_t hi = 0;
  std::string perms;  // "r-xp"
  uint64_t offset = 0;
  uint64_t inode = 0;
  std::string path;  // "" for anonymous mappings; "[stack]", "[vdso]", ...; " (deleted)" kept
};

// Parses the text of /proc/PID/maps. Malformed lines are skipped.
std::vector<MapsEntry> ParseProcMaps(std::string_view text);

// The load bias of a file mapped at `map_start` from file offset `map_offset` with execute
// permission, from the ELF program headers. Errors: not ELF, no PT_LOAD matches the offset.
absl::StatusOr<uint64_t> LoadBiasFromProgramHeaders(const std::string& elf_path, uint64_t map_start,
                                                    uint64_t map_offset);

struct ProcessModules {
  std::shared_ptr<const ModuleMap> map;  // Module::path is the path the target mapped
  // For each map->modules()[i]: a path this process can open to read that very file (the path
  // itself, or /proc/PID/map_files/LO-HI when the file was deleted or replaced); "" if none.
  std::vector<std::string> open_paths;
  std::vector<std::string> warnings;  // unreadable files, files without a matching segment
  std::string maps_text;              // /proc/PID/maps as read (for CfiUnwinder::ForProcess)
};

// Reads the executable file mappings of process `pid`. [vdso] is included with its bias and
// no build-id (it has no file). Errors: the process does not exist, maps unreadable.
absl::StatusOr<ProcessModules> ReadProcessModules(pid_t pid);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_PROCESS_MODULES_H_
