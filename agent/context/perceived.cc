// JudgePerceived's rule (perceived.h).
#include "agent/context/perceived.h"

namespace hangwatch::agent {

PerceivedVerdict JudgePerceived(const InputSnapshot& snapshot, uint32_t perceived_ms,
                                uint32_t not_responding_ms, bool display_triggered_pass) {
  PerceivedVerdict verdict;
  if (!snapshot.known) return verdict;
  if (snapshot.pending && snapshot.kinds == 0) return verdict;  // bytes not told apart
  const bool input = snapshot.events > 0;
  if (input || snapshot.ping) {
    verdict.known = true;
    const bool input_waited =
        input && (!snapshot.oldest_known || snapshot.oldest_ms > perceived_ms);
    const bool ping_waited =
        snapshot.ping && (!snapshot.ping_age_known || snapshot.ping_ms > perceived_ms);
    verdict.perceived = input_waited || ping_waited;
    verdict.not_responding =
        snapshot.ping && snapshot.ping_age_known && snapshot.ping_ms > not_responding_ms;
    return verdict;
  }
  if (snapshot.lower_bound || display_triggered_pass) return verdict;
  verdict.known = true;
  return verdict;
}

}  // namespace hangwatch::agent
