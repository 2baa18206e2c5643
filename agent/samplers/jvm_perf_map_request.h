// JvmPerfMapRequest: in a HotSpot JVM, asks the JVM for the names of its compiled Java code when
// a hang opens: the diagnostic command `Compiler.perfmap` (JDK 17 and later, what
// `jcmd PID Compiler.perfmap` sends) makes the JVM write /tmp/perf-PID.map, which names each
// method's code in its code cache; hang/model/materialize.cc reads that map when the hang's
// record is written, so a frame in JIT-compiled Java code is named (`void Server.spin(int)`)
// instead of an address outside every module. The map has no lines: right after it, the JVM is
// asked for its thread dump (`threaddump`, what jstack reads), and the hung threads' Java frames
// (method, file, line) are kept, so that a JIT frame whose method the dump shows gets the file
// and line where the JVM found the thread (FrameLine, the JitFrameLines the record is
// materialized with). The dump needs a safepoint: every Java thread pauses for it, about as long
// as a jstack (0.2 ms with 21 threads here), at most once per min_spacing. Linux; made by
// MakePlatformSampler when the process loaded libjli.so (the `java` launcher) or libjvm.so and
// HANGWATCH_JAVA is not "0".
//
// The request goes through the JVM's own attach mechanism (jvm/attach_client.h: its socket, else
// the handshake with SIGQUIT when the JVM catches it and its attach mechanism is on), from a
// thread of its own that only waits for this work (an agent thread: never watched,
// agent/threads/agent_thread.h): the watchdog only flags that a hang opened. Nothing stops the
// JVM's threads; the JVM writes the map on its attach listener thread, without a safepoint.
//
// When:
//   - at most one request at a time; hangs that open while one is under way are served by it;
//   - at least `min_spacing` between two (a program whose passes keep crossing the threshold
//     would otherwise have the JVM rewrite its map several times a second); a hang that opens
//     sooner is served when the spacing has passed;
//   - a JVM that refuses (its attach mechanism off, SIGQUIT not caught) or answers with an error
//     (a JDK before 17 has no Compiler.perfmap) is never asked again; a timeout or a failed call
//     is retried at the next hang. Each kind of failure is said once, as a note.
// A hang that ends before the map is written keeps its frames unnamed in the agent's record;
// `hangwatch run` and `hangwatch report` name them afterwards from the map the request left
// (tools/reader/report_jit_names.h). The map stays in /tmp after the JVM exits, as the one
// -XX:+DumpPerfMapAtExit writes does.
#ifndef HANGWATCH_AGENT_SAMPLERS_JVM_PERF_MAP_REQUEST_H_
#define HANGWATCH_AGENT_SAMPLERS_JVM_PERF_MAP_REQUEST_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/samplers/jit_code_names.h"
#include "jvm/attach_client.h"

namespace hangwatch::agent {

class JvmPerfMapRequest final : public JitCodeNames {
 public:
  struct Options {
    std::chrono::milliseconds min_spacing{2000};
    int timeout_ms = 5000;  // the whole exchange, the handshake included
  };
  // One request: asks the JVM and returns its reply (tests pass their own): one for the map,
  // one for the thread dump.
  using Ask = std::function<jvm::AttachReply()>;
  // After a request the JVM answered: the map was rewritten in place.
  using Answered = std::function<void()>;
  using Note = std::function<void(const std::string&)>;

  // This process's JVM, asked through the attach mechanism, its map re-read by
  // symbols::PerfMapOfThisProcess(); nullptr when this process runs no JVM or HANGWATCH_JAVA=0.
  static std::unique_ptr<JvmPerfMapRequest> Create();

  JvmPerfMapRequest(Ask ask_map, Ask ask_dump, Answered answered, Options options);
  // Stops the worker: joined when it waits, left to finish (detached, its state its own) when a
  // request is under way, so that the program's exit never waits for the JVM.
  ~JvmPerfMapRequest() override;

  void HangOpened(int64_t tid) override;
  void set_note(Note note) override;
  // The frame of thread `tid` whose method the perf map names `symbol` ("long Server.spin(long)"),
  // in the thread dump taken since that thread's last hang opened: the dump's innermost frame of
  // that method ("Server.spin", Server.java:14). False when there is no such dump yet, or it had
  // no such frame, or no line.
  bool FrameLine(int64_t tid, std::string_view symbol, std::string* file,
                 uint32_t* line) const override;
  // Thread `tid`'s Java frames in that same dump, innermost first.
  bool ThreadFrames(int64_t tid, std::vector<JavaStackFrame>* frames) const override;

  struct Counts {
    uint64_t asked = 0;     // requests sent
    uint64_t answered = 0;  // ... that the JVM answered with its map written
    uint64_t dumps = 0;     // thread dumps read
    bool given_up = false;  // refused or failed: never asked again
  };
  Counts counts() const;
  // Waits until `asked` requests have ended, at most `timeout`; false on timeout (tests).
  bool WaitForRequests(uint64_t asked, std::chrono::milliseconds timeout) const;

  struct State;  // shared with the worker thread, which may outlive this object

 private:
  std::shared_ptr<State> state_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_JVM_PERF_MAP_REQUEST_H_
