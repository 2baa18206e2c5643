// ThreadRegistry: the slots of the threads watched besides the main one (hangwatch/threads.h).
//
// A thread registers itself (WatchThread(), a pool's first TaskScope): it claims a free slot,
// fills in who it is (its capture handle, role, thresholds), publishes the slot as active and
// points its own run-loop word (internal::t_run_loop_state) at the slot's, so that BeginWork()
// and EndWork() act on it. The watchdog reads active slots on its own thread and gives each a
// stall monitor (agent/core/). A thread that stops watching ends its pass and marks the slot
// released; only the watchdog (or Start(), when none runs) frees it again, after it has closed
// whatever hang the slot had open, so a slot is never reused under a monitor that still follows
// it.
//
// The registry is made once per process, by the first Start() or WatchThread(), and never
// freed: a thread's run-loop word must outlive every agent (Stop() and Start() do not touch the
// threads). Slot bodies (about 15 KiB each: the pass histogram) sit in one anonymous mapping and
// are constructed on their first claim, so unused slots cost no memory.
//
// No lock on either side: each slot's status is an atomic that hands the slot between its
// thread (claim, fill, activate; release) and the watchdog (adopt; free).
#ifndef HANGWATCH_AGENT_THREADS_THREAD_REGISTRY_H_
#define HANGWATCH_AGENT_THREADS_THREAD_REGISTRY_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hangwatch/internal/pass_timer.h"
#include "hangwatch/threads.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

enum class SlotStatus : uint32_t {
  kFree = 0,  // nobody's
  kClaimed,   // its thread is filling it in
  kActive,    // watched: the watchdog follows it
  kReleased,  // its thread stopped watching (on itself): the watchdog frees it
  kOrphaned,  // its watch was stopped from another thread: freed once the thread is gone
};

// What a thread registers. Written by the thread before the slot is active; read-only after.
struct WatchedThreadSlot {
  internal::ThreadLoop loop;  // the run-loop word and pass timer BeginWork() acts on
  unwind::ThreadInfo thread;  // its capture handle
  char role[kMaxRoleBytes + 1] = {};
  uint64_t threshold_ns = 0;        // 0: the agent's
  uint64_t sample_interval_ns = 0;  // 0: derived from the threshold
  uint64_t generation = 0;          // which registration of this slot (the watchdog's key)
};

class ThreadRegistry {
 public:
  // The process's registry, made with `capacity` slots by the first call; later calls get it
  // as it is. Not async-signal-safe (allocates, once).
  static ThreadRegistry& Ensure(size_t capacity);
  // The registry, or null before the first Ensure().
  static ThreadRegistry* Get() noexcept;

  size_t capacity() const noexcept { return capacity_; }
  // Register() uses only the first `limit` slots (Start(): Config::max_watched_threads, which
  // may be below the capacity fixed by the first call).
  void set_limit(size_t limit) noexcept {
    limit_.store(limit < capacity_ ? limit : capacity_, std::memory_order_relaxed);
  }
  SlotStatus status(size_t i) const noexcept {
    return static_cast<SlotStatus>(status_[i].load(std::memory_order_acquire));
  }
  // Valid once status(i) has been seen kActive (or later) with the load above.
  WatchedThreadSlot& slot(size_t i) noexcept;

  // On the registering thread: a slot filled in and active, the thread's run-loop word pointed
  // at it. -1 when every slot is taken (counted in not_watched()).
  int Register(std::string_view role, const ThreadOptions& options);
  // On the slot's own thread: the pass under way ends, the thread's run-loop word is cleared,
  // the slot is released. From another thread: orphaned (the thread may still write its word).
  void Release(int index) noexcept;
  // The watchdog (or Start()): the slot's hang is closed, the slot may be reused.
  void Free(size_t index) noexcept;

  // In the child of fork(), which has only the thread that forked: every other thread's slot is
  // orphaned (never followed, freed once the watchdog sees its thread is not there), so that a
  // pass the parent's thread was in never becomes the child's hang. Async-signal-safe.
  void ForgetOtherThreadsAfterFork() noexcept;

  uint64_t not_watched() const noexcept { return not_watched_.load(std::memory_order_relaxed); }
  // Slots active or being filled in now.
  uint64_t watched() const noexcept;

 private:
  explicit ThreadRegistry(size_t capacity);
  size_t capacity_;
  std::atomic<size_t> limit_;
  std::atomic<uint32_t>* status_;
  unsigned char* bodies_;  // capacity_ slot bodies, constructed on first claim
  bool* constructed_;      // written by the claiming thread only, under its claim
  std::atomic<uint64_t> not_watched_{0};
};

// The thread the agent's Start() made role "main" (set by Start()).
void SetMainThread(pthread_t thread) noexcept;
// Whether a Start() named a main thread yet, and whether it is the calling thread.
bool MainThreadKnown() noexcept;
bool OnMainThread() noexcept;

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_THREADS_THREAD_REGISTRY_H_
