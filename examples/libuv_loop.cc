// A libuv program watched through the libuv adapter (integrations/libuv): the adapter marks the
// loop's passes, the program marks nothing. The README's embedding section shows this file.
//
// Usage: hangwatch_libuv_loop   (writes nothing; the hang goes to the log on stderr)
#include <uv.h>

#include <hangwatch/hangwatch.h>
#include <hangwatch_uv.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

// A timer callback that blocks the loop for 300 ms, then stops the timer.
[[gnu::noinline]] void OnTimer(uv_timer_t* timer) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  uv_timer_stop(timer);
}

}  // namespace

int main() {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  if (hangwatch::Status status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "hangwatch: %s\n", status.message().c_str());
    return 1;
  }
  uv_loop_t* loop = uv_default_loop();
  uv_timer_t timer;
  uv_timer_init(loop, &timer);
  uv_timer_start(&timer, OnTimer, 50, 0);
  hangwatch::UvLoopWatch watch;
  watch.Attach(loop);  // right before uv_run, on the thread Start() watches
  uv_run(loop, UV_RUN_DEFAULT);
  watch.Detach();
  uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);
  hangwatch::Stop();
  return hangwatch::GetStats().hangs == 1 ? 0 : 1;
}
