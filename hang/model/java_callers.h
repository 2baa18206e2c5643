// AddJavaFrames: the Java frames a walk of a JVM thread's native stack cannot reach or name, from
// the JVM's own account of the thread (its thread dump: jit_frame_lines.h), put where the frames
// the walk found show they go. JIT-compiled code keeps no frame pointer and a native method's
// wrapper has no unwind information, so the walk of a thread running or blocked in Java ends at its
// first Java frame: a handler asleep in Thread.sleep showed only libc and libjvm frames, and a
// JIT-compiled method none of its callers.
//
// `hangwatch snapshot` does more with a dump (jvm/java_frame_placement.h): it also puts Java
// frames in place of the code-cache frames inside the stack, since its native stack and its dump
// are of the same moment. A hang's stacks are of many moments and the dump of one, so a run of
// code-cache frames is replaced here only when it is all interpreter frames, one per Java
// frame of the dump, and otherwise only the end of a walk is extended, below the frame both share.
#ifndef HANGWATCH_HANG_MODEL_JAVA_CALLERS_H_
#define HANGWATCH_HANG_MODEL_JAVA_CALLERS_H_

#include <vector>

#include "hang/model/jit_frame_lines.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

// Puts the frames of `java` (the thread's Java frames, innermost first) into each stack of
// `stacks` where its walk shows where they go, as "java" frames (FrameLanguage::kJava: method,
// file, line):
//   - the stack's one run of interpreter frames ("Interpreter" in the perf map: one per
//     interpreted method, as cold code is), when exactly as long as `java`: replaced by them;
//   - else, the walk reached JavaCalls::call_helper (where the JVM enters Java code) with no
//     frame of the code cache before it: a stack scan skipped them (a thread asleep in a JDK
//     library, read through /proc); inserted before it;
//   - else, the walk ended at a JIT frame named from the perf map that `java` has: its callers
//     appended;
//   - else, it ended in a module short of the thread's start (libjvm, a JDK or JNI library):
//     all appended.
// A stack whose walk reached the thread's start (clone, start_thread, _start) with JIT code in
// it, that ended at code `java` does not name (a stub, an unnamed address), or that is partial
// is left as it is. The frames are one moment of the thread, taken after the hang opened, the
// same for every stack: a stack of another moment may have had other callers.
void AddJavaFrames(const std::vector<JavaStackFrame>& java, std::vector<Stack>* stacks);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_JAVA_CALLERS_H_
