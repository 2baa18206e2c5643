// JitFrameLines: the source file and line of a frame in JIT-compiled code, named from a
// runtime's perf map, where the runtime said where the thread was. A perf map names compiled
// code but carries no lines; a JVM's thread dump, asked for when the hang opened
// (agent/samplers/jvm_perf_map_request.h), gives each Java frame of the hung thread with its
// file and line at that moment. Materialize() asks for the line of every frame named from the
// perf map (MaterializeOptions::jit_lines). The line is where the thread was when the runtime
// looked (one moment of the hang), not where each sample found it.
#ifndef HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_
#define HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace hangwatch::agent {

class JitFrameLines {
 public:
  virtual ~JitFrameLines() = default;
  // The file and line of the frame named `symbol` (as the perf map names it) of thread `tid`:
  // false when the runtime gave none for it. Any thread.
  virtual bool FrameLine(int64_t tid, std::string_view symbol, std::string* file,
                         uint32_t* line) const = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_
