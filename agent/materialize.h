// Materialize: turns a HangData (addresses and counts in fixed storage) into a public
// HangRecord: frames resolved to module / build-id / offset, symbolized, stacks sorted by
// count, the dominant stack and the fingerprint. Runs when a hang is reported or read, never on
// the capture path; it allocates.
#ifndef HANGWATCH_AGENT_MATERIALIZE_H_
#define HANGWATCH_AGENT_MATERIALIZE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "agent/hang_data.h"
#include "hangwatch/hang_record.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {

struct MaterializeOptions {
  // The modules the hang's addresses belong to. For a hang of this process: the current map.
  std::shared_ptr<const symbols::ModuleMap> modules;
  // True: the addresses are this process's, symbolize them directly. False (a hang read back
  // from another run): symbolize a frame only when a module with the same build-id is loaded
  // here, at its address in this process.
  bool addresses_are_local = true;
  bool symbolize = true;
  std::string process;  // main executable path
};

HangRecord Materialize(const HangData& hang, const MaterializeOptions& options);

// 16 hex digits over (build-id, offset) of the top `kFingerprintFrames` frames; the innermost
// frame contributes its function (leaf key), not the exact instruction.
inline constexpr size_t kFingerprintFrames = 8;
std::string Fingerprint(const HangData& hang, uint32_t stack_id, const symbols::ModuleMap& modules);

// /proc/self/exe, or "" when unreadable.
std::string MainExecutablePath();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_MATERIALIZE_H_
