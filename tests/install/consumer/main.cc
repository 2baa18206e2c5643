// A program outside the project that uses the installed hangwatch: starts the agent, runs a few
// run-loop passes, reads the stats, stops. Exits non-zero when something does not work.
#include <hangwatch/hangwatch.h>

#include <cstdio>

int main() {
  hangwatch::Config config;
  config.log_hangs = false;
  if (auto status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "consumer: Start failed: %s\n", status.message().c_str());
    return 1;
  }
  for (int i = 0; i < 10; ++i) {
    hangwatch::WorkScope pass;
  }
  const hangwatch::Stats stats = hangwatch::GetStats();
  hangwatch::Stop();
  if (stats.passes_seen != 10) {
    std::fprintf(stderr, "consumer: expected 10 passes, saw %llu\n",
                 static_cast<unsigned long long>(stats.passes_seen));
    return 1;
  }
  return 0;
}
