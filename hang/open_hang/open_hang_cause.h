// The open-hang file's cause region (open_hang_file.h, format version 3): the open hang's
// WaitCause, so that a hang that never ends (a deadlock) is read back after the process died
// with its cause. Two copies, each with a generation and a checksum, written alternately as the
// live headers are: a write torn by the process dying leaves the other copy whole.
//
// The WaitCause is stored as its bytes (the file is read on the machine and by the build family
// that wrote it; a copy whose size differs from this build's WaitCause is ignored), and every
// count and string in it is checked on the way back.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CAUSE_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CAUSE_H_

#include <cstddef>
#include <cstdint>

#include "hang/model/wait_cause.h"

namespace hangwatch::agent {

// Bytes of the region (both copies).
size_t OpenHangCauseBytes();

// Writes `cause` into the copy `generation` selects, in the region at `region` (mapped).
void WriteOpenHangCause(unsigned char* region, uint64_t generation, const WaitCause& cause);

// Reads the newest whole copy of the region at `offset` of `fd` into *out, made safe to use
// (counts clamped, strings terminated, kinds and methods in range). False when neither copy is
// whole or their size is not this build's (then *out is left empty).
bool ReadOpenHangCause(int fd, uint64_t offset, WaitCause* out);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_CAUSE_H_
