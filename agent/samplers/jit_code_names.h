// JitCodeNames: a runtime that compiles code while the program runs, asked to publish the names
// of that code when a hang opens, so that the hang's frames in it are named when its record is
// written (hang/model/materialize.cc reads the process's perf map, symbols/perf_map.h). Made by
// MakePlatformSampler (Linux: a HotSpot JVM, jvm_perf_map_request.h); null when the process has
// no such runtime.
//
// HangOpened() is called on the watchdog, by every stall monitor (the main thread's and each
// other watched thread's), right after the hang opened: it must return at once and never wait
// for the runtime (asking is done elsewhere, off the capture path and off the watchdog). What
// the runtime said of the hung thread's frames (their lines) is then read as JitFrameLines when
// the hang's record is written.
#ifndef HANGWATCH_AGENT_SAMPLERS_JIT_CODE_NAMES_H_
#define HANGWATCH_AGENT_SAMPLERS_JIT_CODE_NAMES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "hang/model/jit_frame_lines.h"

namespace hangwatch::agent {

class JitCodeNames : public JitFrameLines {
 public:
  // A hang opened on watched thread `tid`. Non-blocking.
  virtual void HangOpened(int64_t tid) = 0;
  // Where to say, once each, why names could not be had (any thread). Before the first hang.
  virtual void set_note(std::function<void(const std::string&)> note) = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_JIT_CODE_NAMES_H_
