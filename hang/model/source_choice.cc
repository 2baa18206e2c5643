// CountSourceSample: the longest run of samples names the hang's source (source_choice.h).
#include "hang/model/source_choice.h"

#include <cstring>

namespace hangwatch::agent {

void CountSourceSample(const char* source, uint64_t callback, int64_t queued_ms, HangContext* c) {
  const size_t len = strnlen(source, HangContext::kTextBytes - 1);
  const bool same = c->run_samples > 0 && c->run_callback == callback &&
                    strncmp(c->run_source, source, HangContext::kTextBytes - 1) == 0;
  if (same) {
    if (c->run_samples < UINT32_MAX) ++c->run_samples;
  } else {
    std::memset(c->run_source, 0, sizeof c->run_source);  // padded: the file's bytes repeat
    std::memcpy(c->run_source, source, len);
    c->run_callback = callback;
    c->run_samples = 1;
  }
  c->run_queued_ms = queued_ms;  // the run's latest dispatch's, as its last sample read it
  // Strictly longer: of equal runs the earlier stays.
  if (c->run_samples <= c->source_samples) return;
  std::memcpy(c->source, c->run_source, sizeof c->source);
  c->callback = c->run_callback;
  c->queued_ms = c->run_queued_ms;
  c->source_samples = c->run_samples;
}

}  // namespace hangwatch::agent
