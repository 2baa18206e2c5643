// A program that embeds the agent and serves its metrics through hangwatch::RegisterMetrics
// (integrations/prometheus/) on its own prometheus-cpp Exposer, for
// prometheus_registry_test.cc. Usage: prometheus_embed_program REPORT STALLS STALL_MS
// It prints "port P" once serving, makes STALLS passes of STALL_MS between short passes (busy,
// the last one asleep in poll), lets the agent write the last lag record, prints "done", and
// waits for SIGTERM (then stops the agent and exits 0). The agent also writes REPORT, the records
// the test compares with.
#include <poll.h>
#include <signal.h>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "hangwatch/hangwatch.h"
#include "hangwatch_prometheus.h"

namespace {

void Busy(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: prometheus_embed_program REPORT STALLS STALL_MS\n");
    return 2;
  }
  const int stalls = std::atoi(argv[2]);
  const int stall_ms = std::atoi(argv[3]);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);  // before any thread: taken by sigwait below

  auto registry = std::make_shared<prometheus::Registry>();
  hangwatch::RegisterMetrics(*registry);
  prometheus::Exposer exposer("127.0.0.1:0", 1);
  exposer.RegisterCollectable(registry);

  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.sample_interval = std::chrono::milliseconds(10);
  config.time_every_pass = true;
  config.lag_interval = std::chrono::milliseconds(200);
  config.json_path = argv[1];
  config.log_hangs = false;
  config.labels["build"] = "7";
  if (auto s = hangwatch::Start(config); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 2;
  }
  std::printf("port %d\n", exposer.GetListeningPorts().at(0));
  std::fflush(stdout);

  for (int i = 0; i < stalls; ++i) {
    for (int k = 0; k < 20; ++k) {
      hangwatch::WorkScope pass;
      Busy(2);
    }
    hangwatch::WorkScope pass;
    if (i + 1 < stalls) {
      Busy(stall_ms);
    } else {
      poll(nullptr, 0, stall_ms);  // the last stall sleeps: a hang whose cause is "sleep"
    }
  }
  // No pass from here on: the agent writes the interval's lag record within lag_interval.
  poll(nullptr, 0, 3 * 200);
  std::printf("done\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&term, &sig);
  hangwatch::Stop();
  return 0;
}
