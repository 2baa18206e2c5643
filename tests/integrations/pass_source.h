// What the calling thread's pass says it dispatches (hangwatch::SetPassSource(), as the
// run-loop adapters call it), read on that thread: the adapters' tests check it from inside a
// callback they dispatch.
#ifndef HANGWATCH_TESTS_INTEGRATIONS_PASS_SOURCE_H_
#define HANGWATCH_TESTS_INTEGRATIONS_PASS_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "hangwatch/context.h"

namespace hangwatch::testing {

struct PassSource {
  bool stamped = false;  // set during the pass under way (false: none, or an earlier pass's)
  std::string source;    // "" when stamped with none
  const void* callback = nullptr;
  int64_t queued_ns = -1;  // how late its work was (SetPassSource's queued_ns); -1: not known
};

inline PassSource PassSourceOfThisThread() {
  PassSource out;
  std::atomic<uint64_t>* state = internal::t_run_loop_state;
  if (state == nullptr) return out;
  const internal::PassContext& c = internal::ContextOf(state);
  const uint64_t pass = (state->load(std::memory_order_relaxed) & ~internal::kRunLoopTimedBit) | 1;
  out.stamped = c.source_pass.load(std::memory_order_acquire) == pass;
  if (!out.stamped) return out;
  out.queued_ns = c.source_queued_ns.load(std::memory_order_relaxed);
  const char* source = c.source.load(std::memory_order_relaxed);
  out.source = source != nullptr ? source : "";
  out.callback = c.callback.load(std::memory_order_relaxed);
  return out;
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_INTEGRATIONS_PASS_SOURCE_H_
