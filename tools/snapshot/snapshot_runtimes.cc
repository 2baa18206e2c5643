#include "tools/snapshot/snapshot_runtimes.h"

#include <dirent.h>

#include <cstdio>
#include <utility>

#include "tools/snapshot/snapshot_java.h"
#include "tools/snapshot/snapshot_js.h"
#include "tools/snapshot/snapshot_python.h"
#include "tools/snapshot/snapshot_ruby.h"

namespace hangwatch::tools {
namespace {

// The threads of `pid` now: the readers that work inside the stop window size their buffers
// from it (with room for threads that start meanwhile), before the stop.
size_t CountTasks(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task", pid);
  DIR* d = opendir(path);
  if (d == nullptr) return 0;
  size_t n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

SnapshotRuntimes::SnapshotRuntimes(pid_t pid, const RuntimeChoice& choice,
                                   std::function<void(const char*)> phase)
    : pid_(pid), choice_(choice), phase_(std::move(phase)) {}

SnapshotRuntimes::~SnapshotRuntimes() = default;

void SnapshotRuntimes::Prepare(const symbols::ProcessModules* modules,
                               unwind::PtraceCaptureOptions* options,
                               std::vector<std::string>* notes) {
  if (modules == nullptr) return;
  const size_t max_threads = CountTasks(pid_) + 64;
  // CPython's and Ruby's frame chains are read within the stop (only one hook: an interpreter
  // hosts one of them).
  if (choice_.python) {
    python_ =
        std::make_unique<SnapshotPython>(pid_, *modules, max_threads, choice_.max_frames, notes);
    python_->Hook(options);
    phase_("python-setup");
  }
  ruby_ = SnapshotRuby::Prepare(choice_.ruby ? pid_ : 0, modules, max_threads, choice_.max_frames,
                                notes, options);
  if (ruby_ != nullptr) phase_("ruby-setup");
  // A JVM (and its state) found before the stop; its thread dump asked after it.
  if (choice_.java) java_ = std::make_unique<SnapshotJava>(pid_, *modules, choice_.java_timeout_ms);
}

void SnapshotRuntimes::Merge(const symbols::ProcessModules& modules,
                             std::vector<OutThread>* threads, std::vector<std::string>* notes) {
  // The thread dump, asked once every thread runs again (it needs a safepoint).
  if (java_ != nullptr) {
    java_->Ask(notes);
    java_->Merge(threads);
    if (java_->is_jvm()) phase_("java");
  }
  if (python_ != nullptr && python_->active()) {
    python_->Merge(threads, notes);
    phase_("python");
  }
  if (ruby_ != nullptr && ruby_->Merge(threads, notes)) phase_("ruby");
  // node: each thread's JS frames, read after the stop and checked (snapshot_js.h).
  if (choice_.js && !modules.map->modules().empty()) {
    js_ = std::make_unique<SnapshotJs>(pid_, modules, notes);
    if (js_->active()) {
      js_->Merge(threads);
      phase_("js");
    }
  }
}

void SnapshotRuntimes::AddWaits(SnapshotWaits* waits, std::vector<std::string>* notes) const {
  if (java_ != nullptr) java_->AddWaits(waits, notes);
}

std::vector<RuntimeLine> SnapshotRuntimes::Lines() const {
  std::vector<RuntimeLine> lines;
  if (python_ != nullptr && python_->active()) {
    lines.push_back(
        {"python", python_->Describe(), "Python frames in place of the interpreter's eval loop"});
  }
  if (ruby_ != nullptr && ruby_->active()) {
    lines.push_back({"ruby", ruby_->Describe(), "Ruby frames in place of the VM's rb_vm_exec"});
  }
  if (js_ != nullptr && js_->active()) {
    lines.push_back({"js", js_->Describe(), "JavaScript frames in place of V8's frames"});
  }
  if (java_ != nullptr && java_->active()) {
    lines.push_back(
        {"jvm", java_->vm(), "Java frames from its thread dump (its attach mechanism)"});
  }
  return lines;
}

void SnapshotRuntimes::PrintTimings() const {
  if (python_ != nullptr && python_->active()) {
    std::fprintf(stderr, "python: frame chains read in %.3f ms inside the stop window\n",
                 Ms(python_->read_ns()));
  }
  if (java_ != nullptr && java_->is_jvm()) std::fputs(java_->TimingsLine().c_str(), stderr);
  if (ruby_ != nullptr) std::fputs(ruby_->TimingsLine().c_str(), stderr);
}

}  // namespace hangwatch::tools
