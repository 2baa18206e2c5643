#include "integrations/apple/cf_run_loop_observer.h"

#include <CoreFoundation/CoreFoundation.h>

#include "hangwatch/hangwatch.h"
#include "integrations/apple/run_loop_activity.h"

namespace hangwatch::integrations::apple {

static_assert(kCFRunLoopEntry == ::kCFRunLoopEntry &&
              kCFRunLoopBeforeTimers == ::kCFRunLoopBeforeTimers &&
              kCFRunLoopBeforeSources == ::kCFRunLoopBeforeSources &&
              kCFRunLoopBeforeWaiting == ::kCFRunLoopBeforeWaiting &&
              kCFRunLoopAfterWaiting == ::kCFRunLoopAfterWaiting &&
              kCFRunLoopExit == ::kCFRunLoopExit);

namespace {

// Two observers so that the pass covers every other observer's work: the one that marks busy
// runs first (lowest order) after waking, the one that marks idle runs last before sleeping.
CFRunLoopObserverRef g_wake_observer = nullptr;
CFRunLoopObserverRef g_sleep_observer = nullptr;

void OnActivity(CFRunLoopObserverRef, CFRunLoopActivity activity, void*) {
  switch (ActionForActivity(static_cast<uint32_t>(activity))) {
    case RunLoopAction::kBeginWork:
      BeginWork();
      break;
    case RunLoopAction::kEndWork:
      EndWork();
      break;
    case RunLoopAction::kNone:
      break;
  }
}

}  // namespace

bool InstallMainRunLoopObserver() {
  if (g_wake_observer != nullptr) return false;
  g_wake_observer =
      CFRunLoopObserverCreate(kCFAllocatorDefault, ::kCFRunLoopEntry | ::kCFRunLoopAfterWaiting,
                              /*repeats=*/true, LONG_MIN, &OnActivity, nullptr);
  g_sleep_observer = CFRunLoopObserverCreate(kCFAllocatorDefault, ::kCFRunLoopBeforeWaiting,
                                             /*repeats=*/true, LONG_MAX, &OnActivity, nullptr);
  if (g_wake_observer == nullptr || g_sleep_observer == nullptr) {
    RemoveMainRunLoopObserver();
    return false;
  }
  CFRunLoopAddObserver(CFRunLoopGetMain(), g_wake_observer, kCFRunLoopCommonModes);
  CFRunLoopAddObserver(CFRunLoopGetMain(), g_sleep_observer, kCFRunLoopCommonModes);
  return true;
}

void RemoveMainRunLoopObserver() {
  for (CFRunLoopObserverRef* observer : {&g_wake_observer, &g_sleep_observer}) {
    if (*observer == nullptr) continue;
    CFRunLoopObserverInvalidate(*observer);  // also removes it from every run loop and mode
    CFRelease(*observer);
    *observer = nullptr;
  }
}

}  // namespace hangwatch::integrations::apple
