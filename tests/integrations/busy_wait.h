// A deliberate stall of known length that keeps the CPU busy inside the calling function (the
// clock is read rarely, so nearly every sample lands in the caller's own code, not in the vDSO).
#ifndef HANGWATCH_TESTS_INTEGRATIONS_BUSY_WAIT_H_
#define HANGWATCH_TESTS_INTEGRATIONS_BUSY_WAIT_H_

#include <chrono>
#include <cstdint>

// Must be inlined into the stalling function so that it is that function's frame on top.
#define HANGWATCH_BUSY_WAIT_MS(ms)                                                        \
  do {                                                                                    \
    const auto hw_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms); \
    volatile uint64_t hw_sink = 0;                                                        \
    while (std::chrono::steady_clock::now() < hw_end) {                                   \
      for (int hw_i = 0; hw_i < 200000; ++hw_i) hw_sink = hw_sink + hw_i;                 \
    }                                                                                     \
  } while (0)

#endif  // HANGWATCH_TESTS_INTEGRATIONS_BUSY_WAIT_H_
