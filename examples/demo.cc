// The README's demo: a run loop whose handlers stall the main thread in four different ways.
// The agent reports each stall through spdlog (a WARN line, then the dominant stack): a busy
// computation, a wait on a lock held by another thread, a slow sort, and a sleep. Short events
// and the idle waits between events are never reported.
//
// Usage: hangwatch_demo [--json FILE]   (also writes the JSON Lines report to FILE)
#include <pthread.h>

#include <hangwatch/hangwatch.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

volatile uint64_t g_sink;  // keeps the computations from being optimized away

// ~0.5 s of pure CPU: trial-division prime counting.
[[gnu::noinline]] void BusyComputation() {
  uint64_t count = 0;
  for (uint64_t n = 2; n < 2'500'000; ++n) {
    bool prime = true;
    for (uint64_t d = 2; d * d <= n; ++d) {
      if (n % d == 0) {
        prime = false;
        break;
      }
    }
    count += prime;
  }
  g_sink = count;
}

std::mutex g_shared_lock;

// Blocks ~0.6 s on a mutex a background thread holds (CPU near 0 %).
[[gnu::noinline]] void WaitForLock() {
  std::lock_guard<std::mutex> lock(g_shared_lock);
  g_sink = 1;
}

// A quadratic insertion sort: the kind of "it was fine with 100 items" code that stalls a UI.
[[gnu::noinline]] void SlowSort() {
  std::vector<uint32_t> v(60'000);
  std::mt19937 rng(42);
  for (auto& x : v) x = static_cast<uint32_t>(rng());
  for (size_t i = 1; i < v.size(); ++i) {
    const uint32_t x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
    v[j] = x;
  }
  g_sink = v[v.size() / 2];
}

// Synchronous sleep on the main thread (a blocking call that should have been async).
[[gnu::noinline]] void SleepyHandler() { std::this_thread::sleep_for(400ms); }

// A handler well under the threshold: never reported.
[[gnu::noinline]] void QuickHandler() { std::this_thread::sleep_for(5ms); }

}  // namespace

int main(int argc, char** argv) {
  hangwatch::Config config;
  config.threshold = 200ms;  // sample every 20 ms, from 100 ms into a pass
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      config.json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--json FILE]\n", argv[0]);
      return 2;
    }
  }

  // Wait for each report before dispatching the next event, so the output reads in order.
  std::mutex mu;
  std::condition_variable cv;
  uint64_t reports = 0;
  hangwatch::AddHangCallback([&](const hangwatch::HangRecord&) {
    std::lock_guard<std::mutex> lock(mu);
    ++reports;
    cv.notify_all();
  });

  if (hangwatch::Status status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }

  std::thread lock_holder;
  struct Event {
    const char* what;
    std::function<void()> handler;
    bool stalls;
  };
  const std::vector<Event> events = {
      {"a quick event", QuickHandler, false},
      {"a busy computation", BusyComputation, true},
      {"a quick event", QuickHandler, false},
      {"waiting on a lock held by another thread",
       [&] {
         std::mutex started_mu;
         std::condition_variable started_cv;
         bool started = false;
         lock_holder = std::thread([&] {
           // The name the report gives the thread that held the lock.
           pthread_setname_np(pthread_self(), "lock-holder");
           std::lock_guard<std::mutex> hold(g_shared_lock);
           {
             std::lock_guard<std::mutex> l(started_mu);
             started = true;
           }
           started_cv.notify_all();
           std::this_thread::sleep_for(600ms);
         });
         std::unique_lock<std::mutex> l(started_mu);
         started_cv.wait(l, [&] { return started; });
         l.unlock();
         WaitForLock();
       },
       true},
      {"a slow sort", SlowSort, true},
      {"a sleep on the main thread", SleepyHandler, true},
  };

  std::printf("hangwatch demo: threshold %lld ms; %zu events, %zu of them stall\n",
              static_cast<long long>(config.threshold.count()), events.size(),
              static_cast<size_t>(std::count_if(events.begin(), events.end(),
                                                [](const Event& e) { return e.stalls; })));
  for (const Event& e : events) {
    std::this_thread::sleep_for(50ms);  // idle in the run loop: never a hang
    std::printf("\n--- event: %s\n", e.what);
    std::fflush(stdout);
    uint64_t before;
    {
      std::lock_guard<std::mutex> lock(mu);
      before = reports;
    }
    {
      hangwatch::WorkScope pass;
      e.handler();
    }
    if (e.stalls) {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, 5s, [&] { return reports > before; })) {
        std::printf("(no report within 5 s)\n");
      }
    }
  }
  if (lock_holder.joinable()) lock_holder.join();
  hangwatch::Stop();

  const hangwatch::Stats stats = hangwatch::GetStats();
  std::printf("\n--- summary: %llu passes, %llu hangs, %llu samples, %llu failed captures\n",
              static_cast<unsigned long long>(stats.passes_seen),
              static_cast<unsigned long long>(stats.hangs),
              static_cast<unsigned long long>(stats.samples),
              static_cast<unsigned long long>(stats.failed_captures));
  for (const hangwatch::HangRecord& h : hangwatch::RecentHangs()) {
    const hangwatch::Stack* top = h.dominant();
    // Where in *our* code: the innermost frame of the program itself (not libc's wait).
    std::string where = "?";
    if (top != nullptr) {
      for (const auto& f : top->frames) {
        if (!f.symbol.empty() && f.module == h.process) {
          where = f.symbol;
          break;
        }
      }
    }
    std::printf("  %5llu ms  %-7s CPU %3u%%  %s  in %s\n",
                static_cast<unsigned long long>(h.duration_ms),
                hangwatch::HangClassName(h.hang_class), h.cpu_percent, h.fingerprint.c_str(),
                where.c_str());
  }
  return 0;
}
