// MaterializeCause: a hang's WaitCause (fixed storage, wait_cause.h) -> the public Cause
// (hang_record.h): lock names, the threads of a chain or a deadlock cycle with their frames
// resolved and symbolized like the main thread's, their culprits, and the one-line summary
// (report/cause_text.h). Part of Materialize (materialize.h): when reporting, never on the
// capture path; it allocates.
#ifndef HANGWATCH_HANG_MODEL_MATERIALIZE_CAUSE_H_
#define HANGWATCH_HANG_MODEL_MATERIALIZE_CAUSE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "hang/model/hang_data.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

// Resolves one address into a Frame (module, offset, symbol): Materialize's own.
using FrameMaker = std::function<Frame(uintptr_t addr, bool is_return, FrameMethod method)>;

// `record` is the hang's record with its stacks already made; `new_id` maps the stack table's
// ids to their index in record.stacks.
Cause MaterializeCause(const HangData& hang, const HangRecord& record,
                       const std::vector<int>& new_id, const FrameMaker& make_frame);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_MATERIALIZE_CAUSE_H_
