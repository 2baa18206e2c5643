// A client of HotSpot's attach mechanism (the protocol `jcmd` and `jstack` use), written here so
// that `hangwatch snapshot` can ask a JVM for its thread dump without a JDK tool or a JVM of its
// own:
//
//   1. If the JVM's attach socket /tmp/.java_pid<NSPID> exists (seen through /proc/PID/root, the
//      JVM's own file system), connect to it: no signal. A socket no one listens on (left by an
//      earlier process of the same pid) counts as none; the JVM's new one replaces it.
//   2. Else, only when it is safe (JvmProcessFacts: the JVM catches SIGQUIT, its attach
//      mechanism is not disabled, it is not stopped), create the trigger file .attach_pid<NSPID>
//      in the JVM's working directory (else in its /tmp), send SIGQUIT, and wait for the socket;
//      the JVM's signal handler sees the trigger file and starts its attach listener instead of
//      printing a thread dump. The trigger file is removed afterwards.
//   3. Check the socket belongs to the JVM's user and nobody else may use it, connect, write
//      "1\0<command>\0<arg1>\0<arg2>\0<arg3>\0", read the reply: a status line ("0": done), then
//      the command's text until the JVM closes the connection.
//
// Every step is bounded by one deadline (a thread dump needs a safepoint, which a JVM may be
// slow to reach). Nothing here stops or reads the JVM's threads. Linux only.
#ifndef HANGWATCH_JVM_ATTACH_CLIENT_H_
#define HANGWATCH_JVM_ATTACH_CLIENT_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jvm/jvm_process.h"

namespace hangwatch::jvm {

enum class AttachStatus : uint8_t {
  kOk,       // `text` is the command's output
  kRefused,  // not asked: the checks said the signal was unsafe or useless (`why`)
  kTimeout,  // the JVM did not start its listener or answer before the deadline
  kFailed,   // the JVM answered with an error status (`why` has its message)
  kError,    // a system call failed, or the reply was malformed (`why`)
};
const char* AttachStatusName(AttachStatus s);  // "ok", "refused", "timeout", "failed", "error"

struct AttachOptions {
  int timeout_ms = 2000;        // the whole exchange, handshake included
  size_t max_reply = 64 << 20;  // bytes of reply kept; the rest is read and dropped
};

struct AttachReply {
  AttachStatus status = AttachStatus::kError;
  std::string text;           // the command's output (kOk)
  std::string why;            // one line (everything but kOk)
  bool signalled = false;     // SIGQUIT was sent (the listener was not running)
  bool truncated = false;     // the reply was longer than max_reply
  uint64_t handshake_ns = 0;  // until connected
  uint64_t total_ns = 0;
};

// Runs `command` (e.g. "threaddump", "jcmd") with up to three arguments in JVM `pid`.
AttachReply RunAttachCommand(pid_t pid, const std::string& command,
                             const std::vector<std::string>& args, const AttachOptions& options);

// The same with facts already read (tests pass their own).
AttachReply RunAttachCommandWith(const JvmProcessFacts& facts, const std::string& command,
                                 const std::vector<std::string>& args,
                                 const AttachOptions& options);

// Why no signal may be sent to a JVM with these facts (one line), or "" when it may.
std::string WhyNoSignal(const JvmProcessFacts& facts);

// "/proc/PID/root/tmp/.java_pidNSPID": the attach socket as this process reaches it.
std::string AttachSocketPath(const JvmProcessFacts& facts);

}  // namespace hangwatch::jvm

#endif  // HANGWATCH_JVM_ATTACH_CLIENT_H_
