// Watching threads other than the main one: a render thread, an I/O thread, a worker's event
// loop, a pool's tasks. Each watched thread has a role ("render", "io", a pool's name), its own
// threshold and sample interval, and everything the main thread gets: samples from the start of
// the slow pass, CPU and class, causes, Python frames, fatal hangs, lag records.
//
//   hangwatch::Start(config);                         // the main thread: role "main"
//
//   void RenderThread() {                             // a loop that is not an event loop
//     auto watch = hangwatch::WatchThread("render", {.threshold = std::chrono::milliseconds(50)});
//     while (running) {
//       hangwatch::Heartbeat();                       // no beat for 50 ms: a hang
//       DrawFrame();
//       if (minimised) { watch.Pause(); WaitUntilShown(); watch.Resume(); }
//     }
//   }                                                 // `watch` destroyed: no longer watched
//
//   void IoThread() {                                 // an event loop
//     auto watch = hangwatch::WatchThread("io");
//     while (running) {
//       WaitForEvents();
//       hangwatch::WorkScope pass;                    // acts on this thread's watch
//       HandleEvents();
//     }
//   }
//
//   hangwatch::TaskPool pool("decoder", std::chrono::milliseconds(200));
//   void RunTask(Task& t) {                           // on any thread of the pool
//     hangwatch::TaskScope task(pool);                // longer than 200 ms: a hang
//     t.Run();
//   }
//
// BeginWork()/EndWork()/WorkScope/Heartbeat() act on the calling thread's watch: on the thread
// that called Start() (the main thread) the same word as ever, on a thread that called
// WatchThread() its own, on any other thread nothing. A thread's watch outlives Stop() and
// Start(): the next Start() watches it again.
//
// Memory: the slots of up to Config::max_watched_threads threads are reserved once, by the
// first Start() or WatchThread(), and never freed (a slot's pages are touched when a thread
// first takes it); the watchdog's storage for a slot (its hang, its capture buffers: about
// 300 KiB with the default limits) when it first follows a thread there, kept until Stop() and
// used again by the slot's next threads: nothing is allocated per pass, sample or hang. More
// threads than that are not watched: WatchThread() returns a ThreadWatch that watches nothing,
// counted in Stats::threads_not_watched and the lag records. The recent hangs of every thread share
// one ring (RecentHangs()); each record says which thread it was (HangRecord::tid, thread_name,
// thread_role).
#ifndef HANGWATCH_THREADS_H_
#define HANGWATCH_THREADS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hangwatch/export.h"
#include "hangwatch/work.h"

namespace hangwatch {

struct ThreadOptions {
  // A pass (or the time between two beats) longer than this is a hang. 0: Config::threshold.
  std::chrono::milliseconds threshold{0};
  // How often a slow pass is sampled. 0: threshold / 10 (at least 1 ms), as Config's.
  std::chrono::milliseconds sample_interval{0};
};

// Roles are cut to this many bytes; thread names are the kernel's (15 bytes at most).
inline constexpr size_t kMaxRoleBytes = 31;

class ThreadWatch;
// From now on the calling thread is watched under `role`. A no-op returning a ThreadWatch that
// watches nothing on the thread that called Start() (it keeps role "main"), on a thread
// already watched, and when every slot is taken. Off the hot path: reads the thread's stack
// bounds and name, a few microseconds.
HANGWATCH_EXPORT ThreadWatch WatchThread(std::string_view role, const ThreadOptions& options = {});

// The calling thread's watch. Destroying it (on the thread it watches) stops watching; a
// thread that exits without destroying it stops being watched within a second. Move-only.
class HANGWATCH_EXPORT ThreadWatch {
 public:
  ThreadWatch() noexcept = default;  // watches nothing
  ThreadWatch(ThreadWatch&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  ThreadWatch& operator=(ThreadWatch&& other) noexcept;
  ThreadWatch(const ThreadWatch&) = delete;
  ThreadWatch& operator=(const ThreadWatch&) = delete;
  ~ThreadWatch() { Stop(); }

  // Whether WatchThread() watched the thread (false: already watched, not started, no slot
  // left, or moved from).
  bool watching() const noexcept { return slot_ >= 0; }
  // On the watched thread: it stops beating on purpose (a paused renderer, a minimised window);
  // the pass under way ends and nothing is a hang until Resume(), which is a beat.
  void Pause() noexcept;
  void Resume() noexcept;
  // Stops watching now (as the destructor does).
  void Stop() noexcept;

 private:
  friend HANGWATCH_EXPORT ThreadWatch WatchThread(std::string_view, const ThreadOptions&);
  explicit ThreadWatch(int slot) noexcept : slot_(slot) {}
  int slot_ = -1;
};

// For a thread that is not an event loop: the time since its last beat is its pass; longer than
// its threshold, a hang. The same as BeginWork() (which ends the pass under way and begins the
// next); a no-op on an unwatched thread.
inline void Heartbeat() noexcept { BeginWork(); }

// A pool of threads whose tasks are watched: its name is the role of its threads, its
// threshold theirs. Keep it alive as long as its threads run tasks (a static, or the pool's
// own member).
class TaskPool {
 public:
  TaskPool(std::string_view name, std::chrono::milliseconds threshold) noexcept
      : name_(name), threshold_(threshold) {}
  std::string_view name() const noexcept { return name_; }
  std::chrono::milliseconds threshold() const noexcept { return threshold_; }

 private:
  std::string_view name_;
  std::chrono::milliseconds threshold_;
};

// One task on a pool thread: the thread is watched from its first task on (under the pool's
// name, until it exits), the task is a pass, the time between tasks is idle and never a hang.
// The first task of a thread registers it (a few microseconds); every later one costs what a
// WorkScope does.
class HANGWATCH_EXPORT TaskScope {
 public:
  explicit TaskScope(const TaskPool& pool) noexcept;
  ~TaskScope() { EndWork(); }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;
};

}  // namespace hangwatch

#endif  // HANGWATCH_THREADS_H_
