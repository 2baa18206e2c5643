// JitFrameLines: the source file and line of a frame in JIT-compiled code, named from a
// runtime's perf map, where the runtime said where the thread was. A perf map names compiled
// code but carries no lines; a JVM's thread dump, asked for when the hang opened
// (agent/samplers/jvm_perf_map_request.h), gives each Java frame of the hung thread with its
// file and line at that moment. Materialize() asks for the line of every frame named from the
// perf map (MaterializeOptions::jit_lines). The line is where the thread was when the runtime
// looked (one moment of the hang), not where each sample found it.
//
// The same account gives the Java callers that a walk of the native stack cannot reach: JIT code
// keeps no frame pointer, and a native method's wrapper has no unwind information, so the walk
// of a thread running or blocked in Java ends at the first Java frame. ThreadFrames() gives the
// thread's Java frames from the dump; Materialize() puts them where the walk shows they go
// (java_callers.h).
#ifndef HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_
#define HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::agent {

// A Java frame of a runtime's thread dump: "Server.handle", "Server.java", 42 (0: unknown).
struct JavaStackFrame {
  std::string method;
  std::string file;
  uint32_t line = 0;
};

// "long Server.spin(long)" -> "Server.spin": a HotSpot perf map's name of a method (return type,
// class and method, parameters) as its thread dump names it; "" for a name of other code
// ("Interpreter", "StubRoutines (1)").
inline std::string_view JavaMethodOfPerfMapName(std::string_view symbol) {
  const size_t paren = symbol.find('(');
  if (paren == std::string_view::npos) return {};
  symbol = symbol.substr(0, paren);
  const size_t space = symbol.rfind(' ');
  return space == std::string_view::npos ? symbol : symbol.substr(space + 1);
}

class JitFrameLines {
 public:
  virtual ~JitFrameLines() = default;
  // The Java frames of thread `tid`, innermost first, from the same account as FrameLine's:
  // false when there is none.
  virtual bool ThreadFrames(int64_t tid, std::vector<JavaStackFrame>* frames) const = 0;
  // The file and line of the frame named `symbol` (as the perf map names it) of thread `tid`:
  // false when the runtime gave none for it. Any thread.
  virtual bool FrameLine(int64_t tid, std::string_view symbol, std::string* file,
                         uint32_t* line) const = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_JIT_FRAME_LINES_H_
