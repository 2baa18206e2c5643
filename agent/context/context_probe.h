// ContextProbe: the watchdog's reader of what a watched thread's pass is serving
// (internal::PassContext, written by the thread: hangwatch/context.h, the preload shim) and of
// whether input waits on the display connection meanwhile (DisplayInput), into the hang's
// HangContext.
//
// Watchdog thread only, never in a signal handler: the labels' and the source's names are
// copied with a guarded read of the process's own memory (unwind/self_memory.h), so a name
// freed or unmapped since cannot fault; the trigger's descriptor is described with the /proc
// and socket queries of cause/fd_peer.h, once per slow pass. Allocation-free after
// construction: the scratch is allocated by ContextShared, once per agent.
#ifndef HANGWATCH_AGENT_CONTEXT_CONTEXT_PROBE_H_
#define HANGWATCH_AGENT_CONTEXT_CONTEXT_PROBE_H_

#include <cstdint>
#include <memory>

#include "hang/model/hang_context.h"
#include "hangwatch/internal/pass_context.h"

namespace hangwatch::agent {

struct ContextOptions {
  bool context = true;                   // labels, trigger, source (off: --no-context)
  bool input = true;                     // the display connection (off: --no-input)
  uint32_t perceived_ms = 100;           // input waiting longer than this was felt
  uint32_t not_responding_ms = 5000;     // a ping waiting longer: the desktop's "not responding"
  int64_t describe_max_ns = 20'000'000;  // bounds the /proc scan for a trigger's peer
};

// Config's switches, each turned off by its variable set to "0" (HANGWATCH_CONTEXT,
// HANGWATCH_INPUT; `hangwatch run --no-context / --no-input`).
ContextOptions ContextOptionsFor(bool context, bool input, uint32_t perceived_ms);

// What every thread's probe shares (the watchdog runs them one at a time). On Linux: the
// descriptor scratch, the epoll fdinfo buffer, the display connection; elsewhere (no shim to
// record triggers, no X11 display) the labels and sources alone.
class ContextShared {
 public:
  explicit ContextShared(const ContextOptions& options);
  ~ContextShared();
  ContextShared(const ContextShared&) = delete;
  ContextShared& operator=(const ContextShared&) = delete;

  const ContextOptions& options() const { return options_; }
  struct Platform;
  Platform* platform() { return platform_.get(); }

 private:
  ContextOptions options_;
  std::unique_ptr<Platform> platform_;
};

class ContextProbe {
 public:
  // `words`: the watched thread's (its ThreadLoop's context); both borrowed.
  ContextProbe(const internal::PassContext* words, ContextShared* shared)
      : words_(words), shared_(shared) {}

  // At each sample of a slow pass whose run-loop state is `pass` (odd, without the timed bit):
  // the labels and the source now (the source counted toward the longest run of samples,
  // hang/model/source_choice.h), what began the pass (described at its first sample), and a
  // look at the display connection. `now_ns`: CLOCK_MONOTONIC.
  void Sample(uint64_t pass, uint64_t now_ns, HangContext* out);
  // The hang closes: whether a person was kept waiting (JudgePerceived).
  void HangEnded(HangContext* out) const;

 private:
  void ReadLabels(HangContext* out) const;
  void ReadSource(uint64_t pass, HangContext* out) const;
  void DescribeTrigger(uint64_t pass, HangContext* out);
  // Names the descriptor of a trigger: `fd` (poll, select) or, for an epoll, the descriptor of
  // its interest list whose event data word is `data` (Linux).
  void DescribeDescriptor(int fd, uint64_t data, HangContext* out);
  void LookAtDisplay(uint64_t now_ns, HangContext* out);

  const internal::PassContext* words_;
  ContextShared* shared_;
  uint64_t described_pass_ = 0;  // the pass whose trigger was described
};

// Copies the NUL-terminated string at `addr` into out (cut to n - 1 bytes, always terminated)
// with a guarded read; false (out "") when nothing could be read.
bool CopyForeignString(const char* addr, char* out, size_t n);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CONTEXT_CONTEXT_PROBE_H_
