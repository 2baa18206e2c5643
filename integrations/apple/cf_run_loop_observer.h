// CFRunLoopObserver glue: feeds the main run loop's activity (in the common modes, so scroll
// tracking and modal panels count too) to hangwatch::BeginWork() / EndWork(). Apple only.
//
//   hangwatch::Start(config);                                  // on the main thread
//   hangwatch::integrations::apple::InstallMainRunLoopObserver();
#ifndef HANGWATCH_INTEGRATIONS_APPLE_CF_RUN_LOOP_OBSERVER_H_
#define HANGWATCH_INTEGRATIONS_APPLE_CF_RUN_LOOP_OBSERVER_H_

namespace hangwatch::integrations::apple {

// Adds the observers to CFRunLoopGetMain() in kCFRunLoopCommonModes. Call on the main thread.
// Returns false if they are installed already or CF could not create them.
bool InstallMainRunLoopObserver();
// Removes and releases them. Call on the main thread. No-op when not installed.
void RemoveMainRunLoopObserver();

}  // namespace hangwatch::integrations::apple

#endif  // HANGWATCH_INTEGRATIONS_APPLE_CF_RUN_LOOP_OBSERVER_H_
