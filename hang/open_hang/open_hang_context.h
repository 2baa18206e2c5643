// The open-hang file's context region (open_hang_file.h, format version 8 on): the open hang's
// HangContext (its labels, trigger, source and callback, the input waiting and whether a person
// felt it), so that a hang that kills the process is read back with what its pass was serving.
// Two copies, each with a generation and a checksum, written alternately as the cause region's
// are (open_hang_cause.h): a write torn by the process dying leaves the other copy whole.
//
// The HangContext is stored as its bytes (the file is read on the machine and by the build
// family that wrote it; a copy whose size differs from its format's is ignored), and every
// count, string, flag and kind in it is checked on the way back. Format 9 stores the whole
// HangContext, with the run of samples being counted for the source's choice
// (hang/model/source_choice.h); format 8 stored its first 896 bytes (up to queued_ms, before
// the run was kept), which read back as those fields with the run empty.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_

#include <cstddef>
#include <cstdint>

#include "hang/model/hang_context.h"

namespace hangwatch::agent {

// The HangContext's bytes in a copy of file format `version` (8 or later):
// kOpenHangContextFormat8Bytes in format 8, sizeof(HangContext) from format 9.
inline constexpr size_t kOpenHangContextFormat8Bytes = 896;
size_t OpenHangContextPayload(uint32_t version);

// Bytes of the region (both copies) in file format `version` (8 or later).
size_t OpenHangContextBytes(uint32_t version);

// Writes `context` into the copy `generation` selects, in the region at `region` (mapped), as
// file format `version` (8 or later) lays it out.
void WriteOpenHangContext(unsigned char* region, uint64_t generation, const HangContext& context,
                          uint32_t version);

// Reads the newest whole copy of the region at `offset` of `fd`, of file format `version` (8 or
// later), into *out, made safe to use (flags 0 or 1, counts clamped to their arrays, strings
// terminated, the trigger's kind and the input's kinds in range). False when neither copy is
// whole or their size is not the format's (then *out is an empty HangContext).
bool ReadOpenHangContext(int fd, uint64_t offset, uint32_t version, HangContext* out);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_
