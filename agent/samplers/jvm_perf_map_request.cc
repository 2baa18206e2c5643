#include "agent/samplers/jvm_perf_map_request.h"

#include <link.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/threads/agent_thread.h"
#include "symbols/perf_map.h"

namespace hangwatch::agent {

struct JvmPerfMapRequest::State {
  State(Ask a, Answered b, Options o) : ask(std::move(a)), answered(std::move(b)), options(o) {}
  const Ask ask;
  const Answered answered;
  const Options options;
  mutable absl::Mutex mu;
  bool pending ABSL_GUARDED_BY(mu) = false;  // a hang opened since the last request began
  bool stop ABSL_GUARDED_BY(mu) = false;
  bool busy ABSL_GUARDED_BY(mu) = false;  // a request is under way
  Note note ABSL_GUARDED_BY(mu);
  Counts counts ABSL_GUARDED_BY(mu);
  uint64_t ended ABSL_GUARDED_BY(mu) = 0;
  bool said[5] ABSL_GUARDED_BY(mu) = {};  // by AttachStatus
  std::chrono::steady_clock::time_point last_ask ABSL_GUARDED_BY(mu);
  std::thread worker;
};

namespace {

using State = JvmPerfMapRequest::State;

// Await's condition, evaluated with s->mu held.
bool WorkOrStop(State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return s->stop || (s->pending && !s->counts.given_up);
}

// What to say of a request that did not get the map (once per kind), "" for nothing.
std::string WhyUnnamed(const jvm::AttachReply& reply) {
  switch (reply.status) {
    case jvm::AttachStatus::kOk:
      return "";
    case jvm::AttachStatus::kRefused:
      return "not asking the JVM for the names of its compiled code: " + reply.why +
             "; Java frames in JIT code stay unnamed";
    case jvm::AttachStatus::kFailed:
      return "the JVM did not write the names of its compiled code (Compiler.perfmap, JDK 17 and "
             "later): " +
             reply.why + "; Java frames in JIT code stay unnamed";
    case jvm::AttachStatus::kTimeout:
    case jvm::AttachStatus::kError:
      break;
  }
  return std::string("asking the JVM for the names of its compiled code (Compiler.perfmap): ") +
         jvm::AttachStatusName(reply.status) + ": " + reply.why + " (asked again at the next hang)";
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
    s->busy = true;
    ++s->counts.asked;
    s->last_ask = std::chrono::steady_clock::now();
    s->mu.Unlock();
    const jvm::AttachReply reply = s->ask();
    if (reply.status == jvm::AttachStatus::kOk) s->answered();
    const std::string why = WhyUnnamed(reply);
    s->mu.Lock();
    s->busy = false;
    if (reply.status == jvm::AttachStatus::kOk) ++s->counts.answered;
    if (reply.status == jvm::AttachStatus::kRefused || reply.status == jvm::AttachStatus::kFailed) {
      s->counts.given_up = true;
    }
    bool& said = s->said[static_cast<size_t>(reply.status)];
    if (!why.empty() && !said && s->note) {
      said = true;
      const JvmPerfMapRequest::Note note = s->note;
      s->mu.Unlock();
      note(why);
      s->mu.Lock();
    }
    ++s->ended;  // once said: a request has ended when its note is out
  }
  s->mu.Unlock();
}

// Whether a library of this file name is loaded (dl_iterate_phdr: the loader's list).
bool Loaded(const char* file_name) {
  struct Search {
    const char* name;
    bool found;
  } search{file_name, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const char* path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const char* slash = std::strrchr(path, '/');
        if (std::strcmp(slash != nullptr ? slash + 1 : path, s->name) == 0) s->found = true;
        return s->found ? 1 : 0;
      },
      &search);
  return search.found;
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
  Ask ask = [timeout_ms = options.timeout_ms] {
    jvm::AttachOptions attach;
    attach.timeout_ms = timeout_ms;
    attach.max_reply = 64 << 10;  // the command prints nothing when it succeeds
    return jvm::RunAttachCommand(getpid(), "jcmd", {"Compiler.perfmap"}, attach);
  };
  return std::make_unique<JvmPerfMapRequest>(
      std::move(ask),
      [] {
        // Read here, off the watchdog: the samples' leaves are named from it at once
        // (leaf_normalizer.h), the record's frames when it is written.
        symbols::PerfMap& map = symbols::PerfMapOfThisProcess();
        map.ReadAgainFromStart();
        map.Refresh();
      },
      options);
}

JvmPerfMapRequest::JvmPerfMapRequest(Ask ask, Answered answered, Options options)
    : state_(std::make_shared<State>(std::move(ask), std::move(answered), options)) {
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

void JvmPerfMapRequest::HangOpened() {
  absl::MutexLock lock(&state_->mu);
  state_->pending = true;
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
