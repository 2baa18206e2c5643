// The Java threads' waits and the lock holders (java_waits.h).
#include "jvm/java_waits.h"

#include <map>

namespace hangwatch::jvm {

std::vector<JavaWait> FindJavaWaits(const ThreadDump& dump) {
  // Holders by object: monitors from "- locked" (not of an object the thread waits on),
  // j.u.c. locks from the ownable synchronizers.
  std::map<uint64_t, size_t> monitor_holder;
  std::map<uint64_t, size_t> ownable_holder;
  for (size_t i = 0; i < dump.threads.size(); ++i) {
    const JavaThread& t = dump.threads[i];
    for (const JavaLockLine& l : t.locks) {
      if (l.object == 0) continue;
      if (l.role == JavaLockRole::kOwnable) ownable_holder.emplace(l.object, i);
      if (l.role != JavaLockRole::kLocked) continue;
      bool released = false;  // Object.wait() on it: listed as locked, yet released
      for (const JavaLockLine& w : t.locks) {
        released |=
            (w.role == JavaLockRole::kWaitingOn || w.role == JavaLockRole::kWaitingToRelock) &&
            w.object == l.object;
      }
      if (!released) monitor_holder.emplace(l.object, i);
    }
  }
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < dump.threads.size(); ++i) by_name.emplace(dump.threads[i].name, i);

  std::vector<JavaWait> waits;
  for (size_t i = 0; i < dump.threads.size(); ++i) {
    const JavaThread& t = dump.threads[i];
    for (const JavaLockLine& l : t.locks) {
      if (l.role != JavaLockRole::kWaitingToLock && l.role != JavaLockRole::kParkingFor) continue;
      JavaWait w;
      w.thread = i;
      w.monitor = l.role == JavaLockRole::kWaitingToLock;
      w.object = l.object;
      w.klass = l.klass;
      const auto& holders = w.monitor ? monitor_holder : ownable_holder;
      if (const auto h = holders.find(l.object); h != holders.end() && h->second != i) {
        w.owner = h->second;
      }
      waits.push_back(std::move(w));
      break;  // the innermost lock only
    }
  }
  // The JVM's own deadlock report names the holders of j.u.c. locks even without -l.
  for (const std::vector<JavaDeadlockEdge>& cycle : dump.deadlocks) {
    for (const JavaDeadlockEdge& e : cycle) {
      const auto waiter = by_name.find(e.thread);
      const auto holder = by_name.find(e.held_by);
      if (waiter == by_name.end() || holder == by_name.end()) continue;
      JavaWait* w = nullptr;
      for (JavaWait& x : waits) {
        if (x.thread == waiter->second) w = &x;
      }
      if (w == nullptr) {
        waits.push_back({});
        w = &waits.back();
        w->thread = waiter->second;
      }
      w->monitor = e.monitor;
      if (e.object != 0) w->object = e.object;
      if (!e.klass.empty()) w->klass = e.klass;
      w->owner = holder->second;
    }
  }
  return waits;
}

std::string JavaLockWords(const JavaWait& w) {
  std::string s = w.monitor ? "Java monitor" : "Java lock";
  if (!w.klass.empty()) s += " (a " + w.klass + ")";
  return s;
}

}  // namespace hangwatch::jvm
