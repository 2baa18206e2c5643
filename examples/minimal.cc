// The smallest program using hangwatch: public header, shared library, nothing else.
// One run-loop pass sleeps 300 ms (over the 100 ms threshold); the callback prints the hang.
#include <hangwatch/hangwatch.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;  // this example reports through its callback only
  config.on_hang = [](const hangwatch::HangRecord& hang) {
    std::printf("hang: %llu ms, %s, %u samples, fingerprint %s\n",
                static_cast<unsigned long long>(hang.duration_ms),
                hangwatch::HangClassName(hang.hang_class), hang.samples, hang.fingerprint.c_str());
  };
  if (auto status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  {
    hangwatch::WorkScope pass;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  hangwatch::Stop();  // closes the hang whose pass has ended, reports it, joins the watchdog
  return hangwatch::GetStats().hangs == 1 ? 0 : 1;
}
