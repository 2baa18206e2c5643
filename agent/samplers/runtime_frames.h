// RuntimeFrames: a language runtime's frames merged into each capture of the watched thread,
// on the watchdog (the Python frames: python_stacks.h, made on Linux by
// MakePlatformSampler). The stall monitor calls Merge after it unwound a capture; Materialize
// names the merged frames through names().
#ifndef HANGWATCH_AGENT_SAMPLERS_RUNTIME_FRAMES_H_
#define HANGWATCH_AGENT_SAMPLERS_RUNTIME_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "hang/model/runtime_names.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

class RuntimeFrames {
 public:
  virtual ~RuntimeFrames() = default;
  // The thread the next captures are of (on the watchdog, before each capture: the watchdog
  // follows every watched thread, hangwatch/threads.h). Cheap when it is the same as before.
  virtual void Watch(const unwind::ThreadInfo& thread) = 0;
  // Where to say, once, that the frames cannot be read after all (a failed layout check).
  virtual void set_note(std::function<void(const std::string&)> note) = 0;
  // Before each capture of the watched thread (on the watchdog): a chance to install what the
  // capture needs, so that the first capture of a hang has the runtime's frames too.
  virtual void BeforeCapture() {}
  // `buf`'s frames[0..n) (unwound) and their tags (FrameMethod bytes): replaced by the merged
  // frames and tags (at most buf->max_frames()). Returns the new count. No allocation beyond
  // the name cache's fixed budget.
  virtual size_t Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) = 0;
  virtual const RuntimeNames* names() const = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_RUNTIME_FRAMES_H_
