// The open-hang file's context region (open_hang_file.h, format version 8): the open hang's
// HangContext (its labels, trigger, source and callback, the input waiting and whether a person
// felt it), so that a hang that kills the process is read back with what its pass was serving.
// Two copies, each with a generation and a checksum, written alternately as the cause region's
// are (open_hang_cause.h): a write torn by the process dying leaves the other copy whole.
//
// The HangContext is stored as its bytes (the file is read on the machine and by the build
// family that wrote it; a copy whose size differs from this build's HangContext is ignored), and
// every count, string, flag and kind in it is checked on the way back.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_

#include <cstddef>
#include <cstdint>

#include "hang/model/hang_context.h"

namespace hangwatch::agent {

// Bytes of the region (both copies).
size_t OpenHangContextBytes();

// Writes `context` into the copy `generation` selects, in the region at `region` (mapped).
void WriteOpenHangContext(unsigned char* region, uint64_t generation, const HangContext& context);

// Reads the newest whole copy of the region at `offset` of `fd` into *out, made safe to use
// (flags 0 or 1, counts clamped to their arrays, strings terminated, the trigger's kind and the
// input's kinds in range). False when neither copy is whole or their size is not this build's
// (then *out is an empty HangContext).
bool ReadOpenHangContext(int fd, uint64_t offset, HangContext* out);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CONTEXT_H_
