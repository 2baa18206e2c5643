// What a wait returned, as the few words the agent keeps for the pass it begins
// (hangwatch/internal/pass_context.h): the first ready descriptor and how many were ready, the
// wait's own time-out, or a signal. Computed by the wait wrappers (wait_wrapper.h,
// thread_waits.h) after the call returns, only for a wait of a watched loop: a look at the
// result the call already wrote (the first ready entry), no system call, errno untouched.
// Describing the descriptor (a socket and its peer, a timer...) is the watchdog's, and only
// when the pass becomes slow (agent/context/context_probe.h).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_WAKE_TRIGGER_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_WAKE_TRIGGER_H_

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

#include "hangwatch/internal/pass_context.h"
#include "integrations/preload/shim_state.h"

namespace hangwatch::preload {

struct WakeTrigger {
  uint64_t word = 0;  // internal::TriggerWord(); 0: nothing known
  uint64_t data = 0;
  uint64_t events = 0;
};

// A time-out in milliseconds (negative: none), as the trigger's data.
inline uint64_t TimeoutMsOf(int ms) { return ms < 0 ? 0 : static_cast<uint64_t>(ms); }
inline uint64_t TimeoutMsOf(const struct timespec* t) {
  return t == nullptr ? 0
                      : static_cast<uint64_t>(t->tv_sec) * 1000u +
                            static_cast<uint64_t>(t->tv_nsec) / 1000000u;
}
inline uint64_t TimeoutMsOf(const struct timeval* t) {
  return t == nullptr
             ? 0
             : static_cast<uint64_t>(t->tv_sec) * 1000u + static_cast<uint64_t>(t->tv_usec) / 1000u;
}

// Nothing ready: the time-out (result 0) or a signal (-1, EINTR); else nothing known.
inline WakeTrigger NothingReady(int result, uint64_t timeout_ms) {
  WakeTrigger t;
  if (result == 0) {
    t.word = internal::TriggerWord(internal::kTriggerTimeout, 0, -1);
    t.data = timeout_ms;
  } else if (result < 0 && errno == EINTR) {
    t.word = internal::TriggerWord(internal::kTriggerInterrupted, 0, -1);
  }
  return t;
}

inline WakeTrigger PollTrigger(const struct pollfd* fds, nfds_t nfds, int result,
                               uint64_t timeout_ms) {
  if (result <= 0 || fds == nullptr) return NothingReady(result, timeout_ms);
  for (nfds_t i = 0; i < nfds; ++i) {
    if (fds[i].revents != 0 && fds[i].fd >= 0) {
      WakeTrigger t;
      t.word =
          internal::TriggerWord(internal::kTriggerFd, static_cast<uint32_t>(result), fds[i].fd);
      t.events = static_cast<uint16_t>(fds[i].revents);
      return t;
    }
  }
  return {};
}

inline WakeTrigger EpollTrigger(int epfd, const struct epoll_event* events, int result,
                                uint64_t timeout_ms) {
  if (result <= 0 || events == nullptr) return NothingReady(result, timeout_ms);
  WakeTrigger t;
  t.word = internal::TriggerWord(internal::kTriggerEpoll, static_cast<uint32_t>(result), epfd);
  t.data = events[0].data.u64;
  t.events = events[0].events;
  return t;
}

// The lowest descriptor set in any of the three sets (select's result: the ready ones), a
// word of each set at a time.
inline WakeTrigger SelectTrigger(int nfds, const fd_set* r, const fd_set* w, const fd_set* e,
                                 int result, uint64_t timeout_ms) {
  if (result <= 0) return NothingReady(result, timeout_ms);
  constexpr int kBits = 8 * static_cast<int>(sizeof(__fd_mask));
  const int words = (nfds < FD_SETSIZE ? nfds : FD_SETSIZE + kBits - 1) / kBits + 1;
  for (int i = 0; i < words && i * kBits < FD_SETSIZE; ++i) {
    const __fd_mask rw = r != nullptr ? __FDS_BITS(r)[i] : 0;
    const __fd_mask ww = w != nullptr ? __FDS_BITS(w)[i] : 0;
    const __fd_mask ew = e != nullptr ? __FDS_BITS(e)[i] : 0;
    const unsigned long any = static_cast<unsigned long>(rw | ww | ew);
    if (any == 0) continue;
    const int bit = __builtin_ctzl(any);
    const int fd = i * kBits + bit;
    if (fd >= nfds) break;
    const unsigned long mask = 1ul << bit;
    WakeTrigger t;
    t.word = internal::TriggerWord(internal::kTriggerFd, static_cast<uint32_t>(result), fd);
    t.events = ((static_cast<unsigned long>(rw) & mask) != 0 ? POLLIN : 0) |
               ((static_cast<unsigned long>(ww) & mask) != 0 ? POLLOUT : 0) |
               ((static_cast<unsigned long>(ew) & mask) != 0 ? POLLPRI : 0);
    return t;
  }
  return {};
}

// The agent's woke_up with what the wait returned (errno untouched: the agent's entry makes
// relaxed stores only).
inline __attribute__((always_inline)) void WokeUpFrom(const WakeTrigger& t) {
  g_shim.woke_up_from(t.word, t.data, t.events);
}

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_WAKE_TRIGGER_H_
