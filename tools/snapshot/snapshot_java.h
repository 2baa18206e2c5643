// `hangwatch snapshot` of a HotSpot JVM: after the native capture, the JVM is asked for its
// thread dump through its attach mechanism (jvm/attach_client.h: no signal unless it is safe,
// one deadline), and each Java thread's Java frames (method, file, line; "kind": "java") are put
// in its native stack in place of the frames in the JVM's code cache, where the interpreter and
// the JIT-compiled code ran them (jvm/java_frame_placement.h). Threads blocked entering a
// monitor or parked on a java.util.concurrent lock join the snapshot's wait-for graph with the
// thread holding it (jvm/java_waits.h), so a Java deadlock is printed as native ones are.
//
// The dump is the JVM's own view at a safepoint taken after the native capture (the threads run
// again in between): a thread that moved meanwhile shows Java frames of a later moment.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JAVA_H_
#define HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JAVA_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jvm/attach_client.h"
#include "jvm/thread_dump.h"
#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_output.h"
#include "tools/snapshot/snapshot_waits.h"

namespace hangwatch::tools {

class SnapshotJava {
 public:
  // Before the capture: whether process `pid` is a HotSpot JVM (libjvm.so among `modules`), and
  // its state; nothing is asked yet.
  SnapshotJava(pid_t pid, const symbols::ProcessModules& modules, int timeout_ms);

  bool is_jvm() const { return is_jvm_; }
  // The dump was read.
  bool active() const { return active_; }

  // Asks the JVM for its thread dump (after the native capture). When it cannot be had, one
  // line in *notes says why ("no Java frames: ...").
  void Ask(std::vector<std::string>* notes);

  // Each thread's Java frames in its native stack. The frames point into this object.
  void Merge(std::vector<OutThread>* threads) const;

  // The Java threads' lock waits into `waits` (wait lines, the wait-for graph, deadlocks).
  void AddWaits(SnapshotWaits* waits, std::vector<std::string>* notes) const;

  // "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing)"
  const std::string& vm() const { return dump_.vm; }

  // --timings: "java: thread dump 12.3 ms (attach 1.2 ms, no signal), parsed 0.4 ms, 25 threads"
  std::string TimingsLine() const;

 private:
  pid_t pid_;
  int timeout_ms_;
  bool is_jvm_ = false;
  bool openj9_ = false;
  char state_before_ = '?';  // the process's state before the native capture
  bool active_ = false;
  jvm::AttachReply reply_;
  jvm::ThreadDump dump_;
  // The dump's nids are the JVM's pid namespace's tids: the tids here, when they differ.
  std::map<uint64_t, pid_t> host_tids_;
  pid_t HostTid(uint64_t nid) const;
  uint64_t parse_ns_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JAVA_H_
