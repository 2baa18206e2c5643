// What each CFRunLoop activity means for hangwatch's run-loop API: the mapping the
// CFRunLoopObserver glue (cf_run_loop_observer.cc) applies, kept in plain C++ so that it is
// unit-tested on Linux. The CFRunLoopActivity bits are mirrored from <CoreFoundation/CFRunLoop.h>
// (the glue checks them against the real header).
#ifndef HANGWATCH_INTEGRATIONS_APPLE_RUN_LOOP_ACTIVITY_H_
#define HANGWATCH_INTEGRATIONS_APPLE_RUN_LOOP_ACTIVITY_H_

#include <cstdint>

namespace hangwatch::integrations::apple {

inline constexpr uint32_t kCFRunLoopEntry = 1u << 0;
inline constexpr uint32_t kCFRunLoopBeforeTimers = 1u << 1;
inline constexpr uint32_t kCFRunLoopBeforeSources = 1u << 2;
inline constexpr uint32_t kCFRunLoopBeforeWaiting = 1u << 5;
inline constexpr uint32_t kCFRunLoopAfterWaiting = 1u << 6;
inline constexpr uint32_t kCFRunLoopExit = 1u << 7;

enum class RunLoopAction : uint8_t {
  kNone,       // no change: the current pass (or idle period) goes on
  kBeginWork,  // hangwatch::BeginWork(): the thread starts handling events
  kEndWork,    // hangwatch::EndWork(): the thread is about to sleep, waiting for events
};

// One activity (a single bit; CF reports them one at a time) to its action:
//   AfterWaiting  -> busy: woken by a source, timer or port; the pass starts now.
//   BeforeWaiting -> idle: nothing left to do; the time asleep is never a hang.
//   Entry         -> busy: a run-loop invocation starts working before its first sleep. Entered
//                    from inside a callout (a nested, modal loop), this starts a new pass: the
//                    callout's time before it has been measured up to here.
//   BeforeTimers, BeforeSources -> none: steps inside the pass already running.
//   Exit          -> none: a loop exits after waking (busy already), and control returns to
//                    the callout or code that ran it, which is still work.
// Anything else (several bits, unknown bits) -> none.
constexpr RunLoopAction ActionForActivity(uint32_t activity) {
  switch (activity) {
    case kCFRunLoopAfterWaiting:
    case kCFRunLoopEntry:
      return RunLoopAction::kBeginWork;
    case kCFRunLoopBeforeWaiting:
      return RunLoopAction::kEndWork;
    default:
      return RunLoopAction::kNone;
  }
}

// The activities the observers must subscribe to: those with an action.
inline constexpr uint32_t kObservedActivities =
    kCFRunLoopEntry | kCFRunLoopAfterWaiting | kCFRunLoopBeforeWaiting;

}  // namespace hangwatch::integrations::apple

#endif  // HANGWATCH_INTEGRATIONS_APPLE_RUN_LOOP_ACTIVITY_H_
