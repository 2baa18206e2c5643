// `hangwatch snapshot` of a HotSpot JVM (snapshot_java.h): the thread dump asked, its Java frames
// placed, its Java lock waits added to the wait-for graph.
#include "tools/snapshot/snapshot_java.h"

#include <time.h>

#include <cstdio>
#include <map>
#include <string_view>
#include <utility>

#include "jvm/java_frame_placement.h"
#include "jvm/java_waits.h"

namespace hangwatch::tools {
namespace {

uint64_t DumpClockNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool IsLibjvm(std::string_view path) {
  const size_t slash = path.rfind('/');
  return path.substr(slash == std::string_view::npos ? 0 : slash + 1) == "libjvm.so";
}

}  // namespace

SnapshotJava::SnapshotJava(pid_t pid, const symbols::ProcessModules& modules, int timeout_ms)
    : pid_(pid), timeout_ms_(timeout_ms) {
  bool openj9 = false;  // OpenJ9 has a libjvm.so too, but not HotSpot's attach mechanism
  for (const symbols::Module& m : modules.map->modules()) {
    is_jvm_ |= IsLibjvm(m.path);
    openj9 |= m.path.find("/libj9vm") != std::string::npos;
  }
  if (is_jvm_ && openj9) {
    is_jvm_ = false;
    openj9_ = true;
  }
  // The state before the capture: a ptrace stop and release leave a stopped process running
  // for a moment, then stopped again, so that its state read after the capture may lie.
  jvm::JvmProcessFacts facts;
  std::string error;
  if (is_jvm_ && jvm::ReadJvmProcessFacts(pid, &facts, &error)) state_before_ = facts.state;
}

void SnapshotJava::Ask(std::vector<std::string>* notes) {
  if (openj9_) {
    notes->push_back(
        "no Java frames: an OpenJ9 JVM (only HotSpot's attach mechanism is known; "
        "no signal sent)");
  }
  if (!is_jvm_) return;
  jvm::AttachOptions options;
  options.timeout_ms = timeout_ms_;
  jvm::JvmProcessFacts facts;
  std::string error;
  if (!jvm::ReadJvmProcessFacts(pid_, &facts, &error)) {
    notes->push_back("no Java frames: " + error);
    return;
  }
  if (state_before_ == 'T' || state_before_ == 't') facts.state = state_before_;
  reply_ = jvm::RunAttachCommandWith(facts, "threaddump", {}, options);
  if (reply_.status != jvm::AttachStatus::kOk) {
    notes->push_back("no Java frames: " + reply_.why);
    return;
  }
  const uint64_t start = DumpClockNs();
  dump_ = jvm::ParseThreadDump(reply_.text);
  parse_ns_ = DumpClockNs() - start;
  if (dump_.threads.empty()) {
    notes->push_back("no Java frames: the JVM's thread dump lists no thread");
    return;
  }
  if (reply_.truncated) notes->push_back("the JVM's thread dump was cut at 64 MiB");
  if (facts.ns_pid != pid_) host_tids_ = jvm::NamespaceTids(pid_);
  active_ = true;
}

void SnapshotJava::Merge(std::vector<OutThread>* threads) const {
  if (!active_) return;
  std::map<uint64_t, const jvm::JavaThread*> by_tid;
  for (const jvm::JavaThread& t : dump_.threads) {
    if (t.nid != 0) by_tid.emplace(static_cast<uint64_t>(HostTid(t.nid)), &t);
  }
  for (OutThread& ot : *threads) {
    const auto it = by_tid.find(static_cast<uint64_t>(ot.thread->tid));
    if (it == by_tid.end()) continue;
    const jvm::JavaThread& jt = *it->second;
    if (jt.number >= 0) {  // a Java thread ("#12"), not one of the VM's own
      ot.java_name = jt.name;
      ot.java_state = jt.state;
    }
    if (jt.frames.empty()) continue;
    std::vector<jvm::NativeMark> marks(ot.frames.size(), jvm::NativeMark::kOther);
    for (size_t i = 0; i < ot.frames.size(); ++i) {
      const OutFrame& f = ot.frames[i];
      if (i > 0 && f.addr == ot.frames[i - 1].addr && ot.frames[i - 1].inlined) {
        marks[i] = jvm::NativeMark::kSameAsPrevious;
      } else if (f.module == nullptr && f.kind == nullptr) {
        marks[i] = jvm::NativeMark::kCodeCache;
      }
    }
    const jvm::JavaPlacement placement = jvm::PlaceJavaFrames(marks, jt.frames);
    std::vector<OutFrame> merged;
    merged.reserve(placement.frames.size());
    for (const jvm::PlacedFrame& p : placement.frames) {
      if (!p.java) {
        merged.push_back(ot.frames[p.index]);
        continue;
      }
      const jvm::JavaFrame& jf = jt.frames[p.index];
      OutFrame f;
      f.kind = "java";
      f.method = "java";
      f.symbol = jf.method;
      f.file = jf.native_method ? std::string_view("Native Method") : std::string_view(jf.file);
      f.line = jf.line;
      merged.push_back(f);
    }
    // Java frames appended (placement.appended) are the usual case where the native unwind
    // stops at the JVM's entry from the interpreter: no note (docs/java.md).
    ot.frames = std::move(merged);
  }
}

void SnapshotJava::AddWaits(SnapshotWaits* waits, std::vector<std::string>* notes) const {
  if (!active_) return;
  bool added = false;
  for (const jvm::JavaWait& w : jvm::FindJavaWaits(dump_)) {
    const jvm::JavaThread& t = dump_.threads[w.thread];
    const auto it = waits->threads.find(HostTid(t.nid));
    if (t.nid == 0 || it == waits->threads.end()) continue;
    ThreadWait& tw = it->second;
    tw.runtime_lock = jvm::JavaLockWords(w);
    tw.lock = cause::LockInfo{};
    tw.lock.addr = w.object;
    if (w.owner != jvm::JavaWait::kNoOwner) {
      tw.lock.owner = HostTid(dump_.threads[w.owner].nid);
    }
    added = true;
  }
  if (!added) return;
  const size_t before = waits->deadlocks.size();
  FindDeadlocks(waits);
  if (waits->deadlocks.size() - before < dump_.deadlocks.size()) {
    notes->push_back("the JVM reports " + std::to_string(dump_.deadlocks.size()) +
                     " Java-level deadlocks, of which " +
                     std::to_string(waits->deadlocks.size() - before) +
                     " are among the threads of this snapshot");
  }
}

pid_t SnapshotJava::HostTid(uint64_t nid) const {
  if (const auto it = host_tids_.find(nid); it != host_tids_.end()) return it->second;
  return static_cast<pid_t>(nid);
}

std::string SnapshotJava::TimingsLine() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "java: thread dump %.3f ms wall (connected after %.3f ms, %s), parsed %.3f ms, "
                "%zu threads\n",
                static_cast<double>(reply_.total_ns) / 1e6,
                static_cast<double>(reply_.handshake_ns) / 1e6,
                reply_.signalled ? "SIGQUIT sent" : "no signal",
                static_cast<double>(parse_ns_) / 1e6, dump_.threads.size());
  return buf;
}

}  // namespace hangwatch::tools
