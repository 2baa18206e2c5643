// The public Context, Input and perceived of a hang from its HangContext (materialize.cc).
// `resolve` names the callback's address as a frame's (module, offset, symbol).
#ifndef HANGWATCH_HANG_MODEL_MATERIALIZE_CONTEXT_H_
#define HANGWATCH_HANG_MODEL_MATERIALIZE_CONTEXT_H_

#include <cstdint>
#include <functional>

#include "hang/model/hang_context.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

void MaterializeContext(const HangContext& c, const std::function<Frame(uintptr_t)>& resolve,
                        HangRecord* r);

// "key", "button", "motion", "touch", "ping", "other" for each bit of `kinds`, in that order.
std::vector<std::string> InputKindNames(uint32_t kinds);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_MATERIALIZE_CONTEXT_H_
