#include "agent/samplers/jvm_perf_map_request.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/threads/agent_thread.h"
#include "jvm/thread_dump.h"
#include "symbols/module_map.h"
#include "symbols/perf_map.h"

namespace hangwatch::agent {

struct JvmPerfMapRequest::State {
  State(Ask map, Ask dump, Answered a, Options o)
      : ask_map(std::move(map)), ask_dump(std::move(dump)), answered(std::move(a)), options(o) {}
  const Ask ask_map;
  const Ask ask_dump;
  const Answered answered;
  const Options options;
  mutable absl::Mutex mu;
  bool pending ABSL_GUARDED_BY(mu) = false;       // a hang opened since the last request began
  std::vector<int64_t> tids ABSL_GUARDED_BY(mu);  // ... on these threads (kMaxPendingThreads)
  bool stop ABSL_GUARDED_BY(mu) = false;
  bool busy ABSL_GUARDED_BY(mu) = false;  // a request is under way
  bool dumps_given_up ABSL_GUARDED_BY(mu) = false;
  Note note ABSL_GUARDED_BY(mu);
  Counts counts ABSL_GUARDED_BY(mu);
  uint64_t ended ABSL_GUARDED_BY(mu) = 0;
  bool said[2][5] ABSL_GUARDED_BY(mu) = {};  // [map, dump][AttachStatus]
  std::chrono::steady_clock::time_point last_ask ABSL_GUARDED_BY(mu);
  // The hung threads' Java frames in their last dump, by tid (kMaxStacks, the oldest tid first
  // out: tids grow, mostly).
  std::map<int64_t, std::vector<jvm::JavaFrame>> stacks ABSL_GUARDED_BY(mu);
  std::thread worker;
};

namespace {

using State = JvmPerfMapRequest::State;

constexpr size_t kMaxPendingThreads = 16;
constexpr size_t kMaxStacks = 64;
constexpr size_t kMaxDumpFrames = 256;  // per thread: a hang's innermost frames are the ones

// Await's condition, evaluated with s->mu held.
bool WorkOrStop(State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return s->stop || (s->pending && !s->counts.given_up);
}

// What to say of a request that did not get the map (`dump` false) or the thread dump, once per
// kind; "" for nothing.
std::string WhyNot(const jvm::AttachReply& reply, bool dump) {
  const std::string what = dump ? "its threads' Java frames (threaddump)"
                                : "the names of its compiled code (Compiler.perfmap)";
  const std::string outcome =
      dump ? "Java frames in JIT code have no lines" : "Java frames in JIT code stay unnamed";
  switch (reply.status) {
    case jvm::AttachStatus::kOk:
      return "";
    case jvm::AttachStatus::kRefused:
      return "not asking the JVM for " + what + ": " + reply.why + "; " + outcome;
    case jvm::AttachStatus::kFailed:
      return "the JVM did not give " + what + (dump ? "" : ", JDK 17 and later") + ": " +
             reply.why + "; " + outcome;
    case jvm::AttachStatus::kTimeout:
    case jvm::AttachStatus::kError:
      break;
  }
  return "asking the JVM for " + what + ": " + jvm::AttachStatusName(reply.status) + ": " +
         reply.why + " (asked again at the next hang)";
}

bool GivesUp(const jvm::AttachReply& reply) {
  return reply.status == jvm::AttachStatus::kRefused || reply.status == jvm::AttachStatus::kFailed;
}

// Says `why` once per kind (s->mu held; released while the note runs).
void SayOnce(State* s, const jvm::AttachReply& reply, bool dump, const std::string& why)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
  bool& said = s->said[dump ? 1 : 0][static_cast<size_t>(reply.status)];
  if (why.empty() || said || !s->note) return;
  said = true;
  const JvmPerfMapRequest::Note note = s->note;
  s->mu.Unlock();
  note(why);
  s->mu.Lock();
}

// Keeps the frames of the threads `tids` from a dump's text (s->mu held).
void KeepStacks(State* s, const std::string& text, const std::vector<int64_t>& tids)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
  jvm::ThreadDump dump = jvm::ParseThreadDump(text, 65536, kMaxDumpFrames);
  for (jvm::JavaThread& t : dump.threads) {
    const int64_t nid = static_cast<int64_t>(t.nid);
    if (t.nid == 0 || std::find(tids.begin(), tids.end(), nid) == tids.end()) continue;
    s->stacks.erase(nid);
    while (s->stacks.size() >= kMaxStacks) s->stacks.erase(s->stacks.begin());
    s->stacks.emplace(nid, std::move(t.frames));
  }
}

void Run(const std::shared_ptr<State>& s) {
  MarkAgentThread();
  prctl(PR_SET_NAME, "hangwatch-jit", 0, 0, 0);
  s->mu.Lock();
  for (;;) {
    s->mu.Await(absl::Condition(&WorkOrStop, s.get()));
    if (s->stop) break;
    const auto due = s->last_ask + s->options.min_spacing;
    if (s->counts.asked > 0 && std::chrono::steady_clock::now() < due) {
      s->mu.AwaitWithTimeout(absl::Condition(&s->stop),
                             absl::FromChrono(due - std::chrono::steady_clock::now()));
      if (s->stop) break;
    }
    s->pending = false;
    std::vector<int64_t> tids;
    tids.swap(s->tids);
    const bool want_dump = !s->dumps_given_up && !tids.empty();
    s->busy = true;
    ++s->counts.asked;
    s->last_ask = std::chrono::steady_clock::now();
    s->mu.Unlock();
    const jvm::AttachReply map = s->ask_map();
    if (map.status == jvm::AttachStatus::kOk) s->answered();
    // The dump right after the map (the thread is likely still where the map names it), unless
    // the JVM would not be asked at all.
    jvm::AttachReply dump;
    const bool dumped = want_dump && map.status != jvm::AttachStatus::kRefused;
    if (dumped) dump = s->ask_dump();
    s->mu.Lock();
    s->busy = false;
    if (map.status == jvm::AttachStatus::kOk) ++s->counts.answered;
    if (GivesUp(map)) s->counts.given_up = true;
    if (dumped && dump.status == jvm::AttachStatus::kOk) {
      KeepStacks(s.get(), dump.text, tids);
      ++s->counts.dumps;
    }
    if (dumped && GivesUp(dump)) s->dumps_given_up = true;
    SayOnce(s.get(), map, false, WhyNot(map, false));
    if (dumped) SayOnce(s.get(), dump, true, WhyNot(dump, true));
    ++s->ended;  // once said: a request has ended when its notes are out
  }
  s->mu.Unlock();
}

// Whether a library of this file name is loaded (symbols/module_map.h: the loader's list).
bool Loaded(std::string_view file_name) {
  for (const symbols::Module& m : symbols::CurrentModuleMap()->modules()) {
    const size_t slash = m.path.rfind('/');
    if (std::string_view(m.path).substr(slash == std::string::npos ? 0 : slash + 1) == file_name) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::unique_ptr<JvmPerfMapRequest> JvmPerfMapRequest::Create() {
  if (const char* v = std::getenv("HANGWATCH_JAVA"); v != nullptr && std::strcmp(v, "0") == 0) {
    return nullptr;
  }
  // The launcher's library, there from the start; libjvm.so itself is loaded later by the
  // thread the launcher starts, or by a program that embeds a JVM.
  if (!Loaded("libjli.so") && !Loaded("libjvm.so")) return nullptr;
  const Options options;
  Ask ask_map = [timeout_ms = options.timeout_ms] {
    jvm::AttachOptions attach;
    attach.timeout_ms = timeout_ms;
    attach.max_reply = 64 << 10;  // the command prints nothing when it succeeds
    return jvm::RunAttachCommand(getpid(), "jcmd", {"Compiler.perfmap"}, attach);
  };
  Ask ask_dump = [timeout_ms = options.timeout_ms] {
    jvm::AttachOptions attach;
    attach.timeout_ms = timeout_ms;
    attach.max_reply = 16 << 20;  // thousands of threads
    return jvm::RunAttachCommand(getpid(), "threaddump", {}, attach);
  };
  return std::make_unique<JvmPerfMapRequest>(
      std::move(ask_map), std::move(ask_dump),
      [] {
        // Read here, off the watchdog: the samples' leaves are named from it at once
        // (leaf_normalizer.h), the record's frames when it is written.
        symbols::PerfMap& map = symbols::PerfMapOfThisProcess();
        map.ReadAgainFromStart();
        map.Refresh();
      },
      options);
}

JvmPerfMapRequest::JvmPerfMapRequest(Ask ask_map, Ask ask_dump, Answered answered, Options options)
    : state_(std::make_shared<State>(std::move(ask_map), std::move(ask_dump), std::move(answered),
                                     options)) {
  state_->worker = std::thread([s = state_] { Run(s); });
}

JvmPerfMapRequest::~JvmPerfMapRequest() {
  bool busy;
  {
    absl::MutexLock lock(&state_->mu);
    state_->stop = true;
    busy = state_->busy;
  }
  if (busy) {
    state_->worker.detach();  // it ends after its request, on its own state
  } else {
    state_->worker.join();
  }
}

void JvmPerfMapRequest::HangOpened(int64_t tid) {
  absl::MutexLock lock(&state_->mu);
  state_->pending = true;
  // A line is only ever from a dump taken after its hang opened: an earlier hang's would name a
  // moment of another hang (this one's request may come after it ended: the spacing).
  state_->stacks.erase(tid);
  std::vector<int64_t>& tids = state_->tids;
  if (tids.size() < kMaxPendingThreads && std::find(tids.begin(), tids.end(), tid) == tids.end()) {
    tids.push_back(tid);
  }
}

bool JvmPerfMapRequest::FrameLine(int64_t tid, std::string_view symbol, std::string* file,
                                  uint32_t* line) const {
  const std::string_view method = JavaMethodOfPerfMapName(symbol);
  if (method.empty()) return false;
  absl::MutexLock lock(&state_->mu);
  const auto it = state_->stacks.find(tid);
  if (it == state_->stacks.end()) return false;
  for (const jvm::JavaFrame& f : it->second) {
    if (f.method != method) continue;
    if (f.file.empty() || f.line <= 0) return false;
    *file = f.file;
    *line = static_cast<uint32_t>(f.line);
    return true;
  }
  return false;
}

bool JvmPerfMapRequest::ThreadFrames(int64_t tid, std::vector<JavaStackFrame>* frames) const {
  absl::MutexLock lock(&state_->mu);
  const auto it = state_->stacks.find(tid);
  if (it == state_->stacks.end() || it->second.empty()) return false;
  frames->clear();
  for (const jvm::JavaFrame& f : it->second) {
    frames->push_back(
        JavaStackFrame{f.method, f.file, f.line > 0 ? static_cast<uint32_t>(f.line) : 0u});
  }
  return true;
}

void JvmPerfMapRequest::set_note(Note note) {
  absl::MutexLock lock(&state_->mu);
  state_->note = std::move(note);
}

JvmPerfMapRequest::Counts JvmPerfMapRequest::counts() const {
  absl::MutexLock lock(&state_->mu);
  return state_->counts;
}

bool JvmPerfMapRequest::WaitForRequests(uint64_t asked, std::chrono::milliseconds timeout) const {
  absl::MutexLock lock(&state_->mu);
  const State* s = state_.get();
  auto done = [s, asked]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->ended >= asked; };
  return state_->mu.AwaitWithTimeout(absl::Condition(&done), absl::FromChrono(timeout));
}

}  // namespace hangwatch::agent
