// Where the main thread's event loop itself waits, learned by the loader, so that a wait made
// from anywhere else (a handler's synchronous HTTP call, libpq's PQexec, a DNS lookup: each a
// poll or select deeper in the stack) is work of the pass under way, not the loop idling.
// Internal to libhangwatch_preload.so (libc only, like shim_state.h): main thread only, no
// allocation, no system call, errno untouched. The functions take the table they learn in: the
// main thread's (g_loop_wait_sites) or another loop thread's own (thread_waits.h), learned by
// the same rules.
//
// What is learned, and why:
//   - A wait is identified by its call site (the return address into the code that called the
//     interposed function) and the caller's stack pointer at the call (the canonical frame
//     address, __builtin_dwarf_cfa: the same for every interposer called from one frame, so
//     libuv's epoll_pwait and epoll_wait, made from one function, sit at one depth).
//   - A call site becomes one of the loop's (a small fixed table) in either of two ways:
//       * a wait made there, taken as idle, timed out: a loop idles with a timer; a handler's
//         wait answers;
//       * it is where the first wait after arming was made, and the main thread came back to
//         wait there kReturnsToLearn times, with every wait from another site made deeper in
//         the stack than the shallowest of these: a loop under constant load (its waits always
//         return ready events) or with no timer never times out, but it returns to its wait
//         after each pass, and its handlers run below it. A wait from another site that is no
//         deeper (another loop beside it, a loop whose own wait sits below its handlers')
//         rules the first wait out: only a time-out teaches from then on.
//     The loop's depth is the shallowest learned wait's.
//   - Once the loop is known, a wait from a site that is not one of its own and made deeper in
//     the stack than the loop's wait is inside the pass: the handler runs below the loop. The
//     loop's own site at any depth (a GTK dialog's nested main loop) is idle, as is any wait no
//     deeper than the loop's.
//   - Until a site is learned (the first waits), after the table is full, and in a runtime whose
//     loop waits in its own function (wait_wrapper.h), every wait is taken as the loop's, as the
//     shim always did: idle time is never reported as a hang. A start-up wait (Xlib's round
//     trip in XOpenDisplay: a reply, no time-out) that arms the shim is ruled out by the loop's
//     own, shallower, wait; it would be learned only if it came back kReturnsToLearn times
//     before any wait no deeper than it. The limit of learning from returns: a start-up
//     exchange that waits that often at one site before the loop starts (a handshake read
//     piece by piece from main()), with no shallower wait in between, is taken for the loop;
//     if the loop's own wait then sits deeper in the stack, that wait is taken as a handler's
//     and its idle time counted as work (as with a set-up loop, shallower than the main loop,
//     whose wait timed out: a wait inside a pass never teaches).
//   - Why the depth, not the call site alone: a second loop at another site, outside the
//     first (a program that runs a set-up loop, returns, then its main loop), is no deeper,
//     so it stays idle. The cost: a loop whose own wait is deeper than its handlers' (Python's
//     SelectSelector, whose select() is called under a 50 KB frame of fd tables) keeps the
//     old behaviour, its handlers' waits taken as idle.
//   - Only waits taken as idle teach: a handler whose poll times out does not make its own site
//     the loop's. A forked child forgets everything and learns its own loop (ForkChild).
//   - An epoll loop's instance: the epoll descriptor of a wait learned at the loop's depth. A
//     wait at one of the loop's own sites but deeper, on another epoll instance, is a second
//     loop run inside the pass until it is done (node's child_process.execSync runs a private
//     libuv loop from uv__io_poll's own call site until the child exits): work of the pass, not
//     idle. A nested loop on the same instance (or a poll-based one: GTK's dialogs) stays idle.
//     The limit: a program that runs one epoll loop, leaves it, then idles in its main loop on
//     another instance from a deeper frame of the same call site would have that idle time
//     taken as work (a first asyncio loop at module level, the main one from a function, on
//     CPython 3.10, whose Python calls nest C frames; 3.11 and later run them in one C frame).
//     None of the programs tested does; a second loop no deeper than the first stays idle.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_LOOP_WAIT_SITES_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_LOOP_WAIT_SITES_H_

#include <stdint.h>

namespace hangwatch::preload {

struct LoopWaitSites {
  static constexpr int kCapacity = 8;
  // How often the first wait after arming must come back, with only deeper waits in between,
  // to be the loop's: more than a start-up exchange repeats from one frame, and a loop under
  // load gets there in a few milliseconds.
  static constexpr int kReturnsToLearn = 16;
  const void* sites[kCapacity];
  int count;           // sites learned; 0: the loop is not known yet
  bool full;           // a ninth site timed out: unsure from then on, every wait is the loop's
  uintptr_t loop_cfa;  // the caller's stack pointer at the shallowest learned wait
  // Until the loop is known: the first wait taken as idle (site null: none yet) and how often
  // the main thread came back to it; -1 once a wait no deeper than it ruled it out.
  const void* first_site;
  uintptr_t first_cfa;
  int first_returns;
  // The loop's epoll descriptor + 1 (0: not known, or the loop does not wait in epoll).
  int loop_epfd_plus1;
};
// The main thread's. Defined in preload_shim.cc; zeroed by the fork child handler. (Each other
// thread watched has its own: thread_waits.h.)
extern LoopWaitSites g_loop_wait_sites;

inline bool IsLoopWaitSite(const LoopWaitSites& s, const void* site) {
  for (int i = 0; i < s.count; ++i) {
    if (s.sites[i] == site) return true;
  }
  return false;
}

// True when a wait called from `site` with the caller's stack at `cfa` is part of the pass
// under way: the loop is known, and this is not its wait. Stacks grow down (x86-64, AArch64).
// `epfd`: the epoll instance waited on, -1 for the other waits.
inline bool WaitIsInsidePass(const LoopWaitSites& s, const void* site, uintptr_t cfa,
                             int epfd = -1) {
  if (__builtin_expect(s.count == 0, 0) || s.full) return false;
  if (cfa >= s.loop_cfa) return false;
  if (!IsLoopWaitSite(s, site)) return true;
  // The loop's own site, deeper: a nested loop; on another epoll instance, a private one.
  return epfd >= 0 && s.loop_epfd_plus1 != 0 && epfd + 1 != s.loop_epfd_plus1;
}

// `site` at `cfa` is one of the loop's waits (on epoll instance `epfd`, -1: not an epoll wait).
inline void LearnLoopWaitSite(LoopWaitSites& s, const void* site, uintptr_t cfa, int epfd = -1) {
  if (s.count == 0 || cfa > s.loop_cfa) {
    s.loop_cfa = cfa;
    s.loop_epfd_plus1 = epfd + 1;  // the shallowest wait's instance (0 when not epoll)
  }
  if (IsLoopWaitSite(s, site)) return;
  if (s.count == LoopWaitSites::kCapacity) {
    s.full = true;
    return;
  }
  s.sites[s.count++] = site;
}

// Before the loop is known: follows the first wait taken as idle (see above). Out of line: it
// runs only until the loop is learned or the first wait is ruled out.
__attribute__((noinline)) inline void FollowFirstWait(LoopWaitSites& s, const void* site,
                                                      uintptr_t cfa, int epfd) {
  if (s.first_site == nullptr) {
    s.first_site = site;
    s.first_cfa = cfa;
  } else if (site == s.first_site) {
    // At any depth: an interpreter calls the same wait from a shallower frame once it has
    // specialised the call (Python 3.11 calls select.epoll.poll straight from its eval loop
    // after a few passes), and a nested loop calls it from deeper.
    if (cfa > s.first_cfa) s.first_cfa = cfa;
    if (++s.first_returns == LoopWaitSites::kReturnsToLearn) {
      LearnLoopWaitSite(s, site, s.first_cfa, cfa == s.first_cfa ? epfd : -1);
    }
  } else if (cfa >= s.first_cfa) {
    s.first_returns = -1;  // a wait beside or above it: the first wait may not be the loop's
  }
}

// A wait taken as idle returned `result`; `blocking`: it had a time-out that was not zero;
// `epfd`: its epoll instance (-1: not an epoll wait).
inline void NoteIdleWait(LoopWaitSites& s, bool blocking, int result, const void* site,
                         uintptr_t cfa, int epfd = -1) {
  if (__builtin_expect(result == 0, 0) && blocking) {
    LearnLoopWaitSite(s, site, cfa, epfd);  // timed out: the loop idling on its timer
  } else if (__builtin_expect(s.count == 0, 0) && s.first_returns >= 0) {
    FollowFirstWait(s, site, cfa, epfd);
  }
}

// The fork child handler: the child's loop may not be its parent's.
inline void ForgetLoopWaitSites() { g_loop_wait_sites = LoopWaitSites{}; }

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_LOOP_WAIT_SITES_H_
