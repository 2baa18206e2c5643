// HangContext: what a hang's pass was serving and whether input waited meanwhile, in fixed
// storage beside its WaitCause (HangData::context). Filled on the watchdog thread by the
// context probe (agent/context/), turned into the public Context / Input / perceived of a
// HangRecord by materialize.cc. Plain bytes: cleared and copied without allocation.
#ifndef HANGWATCH_HANG_MODEL_HANG_CONTEXT_H_
#define HANGWATCH_HANG_MODEL_HANG_CONTEXT_H_

#include <cstddef>
#include <cstdint>

#include "hangwatch/internal/pass_context.h"

namespace hangwatch::agent {

// Kinds of input seen waiting on the display connection (InputSnapshot::kinds, a bit set).
enum InputKindBit : uint32_t {
  kInputKey = 1u << 0,
  kInputButton = 1u << 1,
  kInputMotion = 1u << 2,
  kInputTouch = 1u << 3,
  kInputPing = 1u << 4,   // a window manager's _NET_WM_PING
  kInputOther = 1u << 5,  // input of a kind not told apart (an XInput2 event of another type)
};

// One look at the display connection (agent/context/display_input.h).
struct InputSnapshot {
  bool known = false;         // a display connection was found and read
  bool pending = false;       // input events or a ping are waiting in it
  uint32_t events = 0;        // input events waiting (a ping is not one)
  bool lower_bound = false;   // part of the bytes could not be parsed: at least `events`
  bool oldest_known = false;  // the oldest event's server time could be compared with ours
  uint32_t oldest_ms = 0;     // its age
  uint32_t kinds = 0;         // InputKindBit
  bool ping = false;
  bool ping_age_known = false;
  uint32_t ping_ms = 0;  // the ping's age
  uint32_t bytes = 0;    // bytes waiting (FIONREAD), what the peek saw of them
};

struct HangContext {
  static constexpr size_t kLabelBytes = 64;  // each label, NUL-terminated (longer ones cut)
  static constexpr size_t kTextBytes = 128;

  // ScopedLabel's stack at the hang's last sample, outermost first.
  char labels[internal::kMaxLabelDepth][kLabelBytes] = {};
  uint32_t label_count = 0;  // kept in `labels`
  uint32_t label_depth = 0;  // on the stack (may exceed label_count)

  // What began the pass: the raw words the shim recorded (internal::PassContext), and what the
  // watchdog made of them.
  bool has_trigger = false;
  uint32_t trigger_kind = internal::kTriggerNone;  // internal::TriggerKind
  uint32_t ready = 0;
  int32_t fd = -1;
  uint64_t timeout_ms = 0;
  char trigger_name[16] = {};  // Trigger::kind ("tcp", "timerfd", "timeout"...)
  char peer[kTextBytes] = {};  // Trigger::peer
  int64_t peer_pid = 0;
  char peer_process[16] = {};

  // What an adapter said the pass dispatches (SetPassSource()): the source of the hang's longest
  // run of samples that found one (hang/model/source_choice.h), not the last sample's.
  char source[kTextBytes] = {};
  uint64_t callback = 0;  // an address, symbolized when materialized

  // The display connection, at the hang's last look; the largest ages seen over its looks.
  InputSnapshot input;
  bool perceived_known = false;
  bool perceived = false;
  bool not_responding = false;

  int64_t queued_ms = -1;  // the source's lateness (SetPassSource's queued_ns), -1: not known

  // How `source` was chosen (CountSourceSample, hang/model/source_choice.h). Appended after the
  // fields above, so that the open-hang file's format 8 (which ends at queued_ms) is this
  // struct's first bytes.
  uint32_t source_samples = 0;  // the length of the run that named `source`
  uint32_t run_samples = 0;     // the length of the run being counted, ending at the last sample
  char run_source[kTextBytes] = {};  // that run's source, callback and lateness
  uint64_t run_callback = 0;
  int64_t run_queued_ms = -1;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_HANG_CONTEXT_H_
