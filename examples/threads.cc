// Three watched threads: the main loop, a render thread that beats once a frame and an I/O
// loop, each with its own threshold; each stalls once. docs/threads.md shows this file.
#include <hangwatch/hangwatch.h>

#include <chrono>
#include <cstdio>
#include <thread>

using namespace std::chrono_literals;

int main() {
  hangwatch::Config config;
  config.threshold = 200ms;  // the main thread's; "main" is the thread that calls Start()
  config.log_hangs = false;
  hangwatch::Start(config);
  std::thread render([] {
    auto watch = hangwatch::WatchThread("render", {.threshold = 50ms});
    for (int frame = 0; frame < 20; ++frame) {
      hangwatch::Heartbeat();                                  // a frame begins
      std::this_thread::sleep_for(frame == 10 ? 120ms : 5ms);  // frame 10 is slow
    }
    watch.Pause();  // no more frames: not a hang
  });
  std::thread io([] {
    auto watch = hangwatch::WatchThread("io");  // the config's threshold
    for (int event = 0; event < 3; ++event) {
      std::this_thread::sleep_for(20ms);  // waiting for events: idle
      hangwatch::WorkScope pass;
      if (event == 1) std::this_thread::sleep_for(300ms);
    }
  });
  for (int event = 0; event < 3; ++event) {
    hangwatch::WorkScope pass;
    std::this_thread::sleep_for(event == 2 ? 250ms : 10ms);
  }
  render.join();
  io.join();
  hangwatch::Stop();
  for (const char* role : {"main", "render", "io"}) {
    for (const hangwatch::HangRecord& hang : hangwatch::RecentHangs()) {
      if (hang.thread_role != role) continue;
      std::printf("%-6s %s hang of %llu ms (threshold %u ms)\n", role,
                  hangwatch::HangClassName(hang.hang_class),
                  static_cast<unsigned long long>(hang.duration_ms), hang.threshold_ms);
    }
  }
}
