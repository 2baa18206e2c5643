// Who waits for whom among the threads of a thread dump (thread_dump.h): for each thread blocked
// entering a monitor (`synchronized`) or parked on a java.util.concurrent lock, the lock and the
// thread holding it. The holder of a monitor is the thread with a "- locked" line for it (but
// not one that waits on it in Object.wait(), which released it); of a j.u.c. lock, the thread
// that lists it among its "Locked ownable synchronizers" (`threaddump -l` only); for the threads
// of a deadlock the JVM found, the holder it named. The caller turns these into the snapshot's
// wait-for graph, where cycles are deadlocks (tools/snapshot/snapshot_waits.h).
#ifndef HANGWATCH_JVM_JAVA_WAITS_H_
#define HANGWATCH_JVM_JAVA_WAITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jvm/thread_dump.h"

namespace hangwatch::jvm {

struct JavaWait {
  size_t thread = 0;    // index into ThreadDump::threads
  bool monitor = true;  // a monitor, else a java.util.concurrent lock (parked on it)
  uint64_t object = 0;
  std::string klass;
  static constexpr size_t kNoOwner = static_cast<size_t>(-1);
  size_t owner = kNoOwner;  // index of the holder, when known
};

// One entry per thread that waits for a lock (at most one per thread: its innermost).
std::vector<JavaWait> FindJavaWaits(const ThreadDump& dump);

// "Java monitor (a java.lang.Object)", "Java lock (a java.util.concurrent.locks.ReentrantLock
// $NonfairSync)": the words for a lock in a wait line.
std::string JavaLockWords(const JavaWait& wait);

}  // namespace hangwatch::jvm

#endif  // HANGWATCH_JVM_JAVA_WAITS_H_
