// Where a thread's Java frames go in its native stack (`hangwatch snapshot` of a JVM).
//
// The JVM runs Java code in its code cache (the interpreter's templates, JIT-compiled methods,
// the call stubs): anonymous memory, no module. A thread's native stack therefore shows, from
// the innermost frame: the JVM's or a library's own native frames, then a run of frames without
// a module where Java ran, then JavaCalls::call_helper and the thread's start. Each run of
// code-cache frames is replaced by Java frames, in order: the Java frames are split into groups
// at each native method ("(Native Method)") but the innermost, since a Java native method is
// where Java called out into native code, which may call Java again (JNI callbacks) in a run
// further out. Groups left over (the native unwind stopped short, in JIT code without frame
// pointers) are put after the last frame; runs left over stay as they are.
#ifndef HANGWATCH_JVM_JAVA_FRAME_PLACEMENT_H_
#define HANGWATCH_JVM_JAVA_FRAME_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jvm/thread_dump.h"

namespace hangwatch::jvm {

enum class NativeMark : uint8_t {
  kOther,           // a frame in a module
  kCodeCache,       // a frame without a module: the JVM's code cache
  kSameAsPrevious,  // an inlined entry of the previous frame's address: goes with it
};

struct PlacedFrame {
  bool java = false;
  size_t index = 0;  // into the Java frames or the native frames
};

struct JavaPlacement {
  std::vector<PlacedFrame> frames;
  size_t appended = 0;  // Java frames placed after the native stack (no run left for them)
};

JavaPlacement PlaceJavaFrames(const std::vector<NativeMark>& native,
                              const std::vector<JavaFrame>& java);

}  // namespace hangwatch::jvm

#endif  // HANGWATCH_JVM_JAVA_FRAME_PLACEMENT_H_
