// JudgePerceived: whether a person was kept waiting by a hang, from what waited on the display
// connection (InputSnapshot, display_input.h). One pure function, so the rule lives and is
// tested in one place.
//
// The rule, in order:
//  - no display connection looked at (`known` false): unknown;
//  - bytes waiting that could not be told apart (`pending` with no kinds: a Wayland connection,
//    or an X11 one that could not be peeked at): unknown;
//  - input or a ping waiting: perceived when the oldest is older than `perceived_ms`; when no
//    age is known (a remote X server's clock), perceived all the same: the input waited through
//    a hang, which is by definition longer than the threshold. A ping older than
//    `not_responding_ms` also makes `not_responding` (the window manager would have greyed the
//    window out by now);
//  - nothing waiting, but bytes that could not be read (`lower_bound`): unknown;
//  - nothing waiting, and the pass was begun by the display connection (the toolkit read the
//    input into its own queue before it stalled): unknown;
//  - nothing waiting otherwise: not perceived.
#ifndef HANGWATCH_AGENT_CONTEXT_PERCEIVED_H_
#define HANGWATCH_AGENT_CONTEXT_PERCEIVED_H_

#include <cstdint>

#include "hang/model/hang_context.h"

namespace hangwatch::agent {

inline constexpr uint32_t kDefaultPerceivedMs = 100;
inline constexpr uint32_t kDefaultNotRespondingMs = 5000;

struct PerceivedVerdict {
  bool known = false;
  bool perceived = false;
  bool not_responding = false;
};

PerceivedVerdict JudgePerceived(const InputSnapshot& snapshot, uint32_t perceived_ms,
                                uint32_t not_responding_ms, bool display_triggered_pass);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CONTEXT_PERCEIVED_H_
