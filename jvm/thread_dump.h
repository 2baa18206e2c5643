// A HotSpot thread dump (the text of the attach command "threaddump", as `jstack` prints it)
// read into threads, their Java frames and lock lines, and the deadlocks the JVM found itself.
//
// Each thread starts with a header line
//   "worker-a" #12 prio=5 os_prio=0 cpu=2.92ms elapsed=73.14s tid=0x00007f3a48118b20 nid=0x2b4f
//   waiting for monitor entry  [0x00007f3a2519d000]
// (one line), whose nid is the thread's native (kernel) thread id; then its state
//   "   java.lang.Thread.State: BLOCKED (on object monitor)",
// its frames, innermost first, "\tat Deadlock.lockBoth(Deadlock.java:8)", each followed by the
// locks of that frame: "\t- waiting to lock <0x...> (a java.lang.Object)", "- locked", "- waiting
// on", "- parking to wait for"; with `threaddump -l`, "Locked ownable synchronizers:" and one
// "\t- <0x...> (a ...)" per held java.util.concurrent lock. After the threads, each cycle the
// JVM's own deadlock detection found (monitors and ownable synchronizers):
//   Found one Java-level deadlock:
//   "worker-a":
//     waiting to lock monitor 0x00007f39a40667f0 (object 0x000000069ec19210, a java.lang.Object),
//     which is held by "worker-b"
//
// Lines the parser does not know are skipped; nothing in the text is trusted to be well formed.
#ifndef HANGWATCH_JVM_THREAD_DUMP_H_
#define HANGWATCH_JVM_THREAD_DUMP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::jvm {

struct JavaFrame {
  std::string method;          // "Deadlock.lockBoth", "java.lang.Thread.run"
  std::string file;            // "Deadlock.java" ("" when unknown)
  int line = 0;                // 0 when unknown
  std::string module;          // "java.base@17.0.15" ("" for the class path)
  bool native_method = false;  // "(Native Method)"
};

enum class JavaLockRole : uint8_t {
  kWaitingToLock,    // "- waiting to lock <...>": blocked entering a monitor
  kLocked,           // "- locked <...>": holds the monitor (unless it waits on it: see below)
  kWaitingOn,        // "- waiting on <...>": in Object.wait(), the monitor released
  kWaitingToRelock,  // "- waiting to re-lock in wait() <...>"
  kParkingFor,       // "- parking to wait for <...>": parked on a java.util.concurrent lock
  kOwnable,          // a "Locked ownable synchronizers:" entry: holds that j.u.c. lock
};

struct JavaLockLine {
  JavaLockRole role = JavaLockRole::kLocked;
  uint64_t object = 0;  // the object's address (0 when the dump gave none)
  std::string klass;    // "java.lang.Object"
  size_t frame = 0;     // index of the frame it follows (frames.size() for ownable ones)
};

struct JavaThread {
  std::string name;
  uint64_t nid = 0;     // native thread id (0: none printed)
  int64_t number = -1;  // "#12": the Java thread number (-1 for VM threads)
  bool daemon = false;
  std::string state;  // "BLOCKED (on object monitor)" ("" for VM threads)
  std::vector<JavaFrame> frames;
  std::vector<JavaLockLine> locks;
};

// One edge of a deadlock the JVM reported: `thread` waits for `object` held by `held_by`.
struct JavaDeadlockEdge {
  std::string thread;
  bool monitor = true;  // a monitor (synchronized), else an ownable synchronizer (j.u.c.)
  uint64_t object = 0;
  std::string klass;
  std::string held_by;
};

struct ThreadDump {
  std::string vm;  // "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing)"
  std::vector<JavaThread> threads;
  std::vector<std::vector<JavaDeadlockEdge>> deadlocks;
};

// Parses a dump. At most `max_threads` threads and `max_frames` frames per thread are kept.
ThreadDump ParseThreadDump(std::string_view text, size_t max_threads = 65536,
                           size_t max_frames = 4096);

// Parses one "at ..." frame text (after "at "): "pkg.C.m(File.java:12)", "(Native Method)",
// "(Unknown Source)", "(java.base@17.0.15/Thread.java:840)". False when it has no "(...)".
bool ParseJavaFrame(std::string_view text, JavaFrame* frame);

// "Deadlock.lockBoth (Deadlock.java:8)": a frame as the snapshot and the docs name it.
std::string JavaFrameLabel(const JavaFrame& frame);

}  // namespace hangwatch::jvm

#endif  // HANGWATCH_JVM_THREAD_DUMP_H_
