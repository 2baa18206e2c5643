// An asio io_context run by two threads, watched through the asio adapter (integrations/asio):
// one hangwatch::AsioWatch, nothing else marked; linking hangwatch::asio compiled this file with
// asio's handler-tracking hooks. One handler blocks its thread for 300 ms: the hang is that
// thread's, under the watch's role; the other thread keeps running handlers. docs/embedding.md
// runs it.
//
// Usage: hangwatch_asio_pool
#include <hangwatch/hangwatch.h>
#include <hangwatch_asio.h>

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

int main() {
  std::mutex mutex;
  std::condition_variable reported;
  bool hang_seen = false;
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;  // this example reports through its callback only
  config.on_hang = [&](const hangwatch::HangRecord& hang) {
    std::printf("hang: %llu ms on thread %s (tid %lld), %s\n",
                static_cast<unsigned long long>(hang.duration_ms), hang.thread_role.c_str(),
                static_cast<long long>(hang.tid), hangwatch::HangClassName(hang.hang_class));
    std::lock_guard lock(mutex);
    hang_seen = true;
    reported.notify_all();
  };
  if (auto status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  asio::io_context io;
  hangwatch::AsioWatch watch(io, "io-pool");  // every handler of `io`, on any thread
  auto work = asio::make_work_guard(io);
  std::thread a([&] { io.run(); });
  std::thread b([&] { io.run(); });
  asio::post(io, [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  {
    std::unique_lock lock(mutex);
    reported.wait_for(lock, std::chrono::seconds(10), [&] { return hang_seen; });
  }
  work.reset();
  a.join();
  b.join();
  hangwatch::Stop();
  return hangwatch::GetStats().hangs == 1 ? 0 : 1;
}
