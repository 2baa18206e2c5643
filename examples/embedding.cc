// Embedding hangwatch in an application with a run loop of its own: start the agent on the
// loop's thread, mark each pass of the loop with a WorkScope, and read the hangs from the log
// (stderr), the JSON Lines file and a callback. The README's embedding section shows this file.
//
// Usage: hangwatch_embedding [REPORT]   (default: hangs.jsonl in the current directory)
#include <poll.h>
#include <time.h>

#include <hangwatch/hangwatch.h>

#include <chrono>
#include <cstdio>

namespace {

// The application's event handler: the fourth event sleeps 300 ms.
[[gnu::noinline]] void HandleEvent(int event) {
  timespec left{0, event == 3 ? 300'000'000 : 0};
  while (nanosleep(&left, &left) != 0) continue;  // after a signal: the rest of the sleep
}

}  // namespace

int main(int argc, char** argv) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);        // a longer pass is a hang
  config.json_path = argc > 1 ? argv[1] : "hangs.jsonl";    // one JSON line per hang
  config.on_hang = [](const hangwatch::HangRecord& hang) {  // runs on the watchdog thread
    std::fprintf(stderr, "on_hang: %llu ms in %s\n",
                 static_cast<unsigned long long>(hang.duration_ms), hang.culprit.symbol.c_str());
  };
  if (hangwatch::Status status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "hangwatch: %s\n", status.message().c_str());
    return 1;
  }
  for (int event = 0; event < 5; ++event) {
    poll(nullptr, 0, 20);       // waiting for events: idle, never a hang
    hangwatch::WorkScope pass;  // from here to the end of the block: one pass
    HandleEvent(event);
  }
  hangwatch::Stop();  // joins the watchdog; the hangs stay readable
  for (const hangwatch::HangRecord& hang : hangwatch::RecentHangs()) {
    std::printf("%llu ms %s hang in %s\n", static_cast<unsigned long long>(hang.duration_ms),
                hangwatch::HangClassName(hang.hang_class), hang.culprit.symbol.c_str());
  }
  return 0;
}
