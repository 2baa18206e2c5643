// A program that embeds the agent, for secure_labels_test.cc: writes one hang to the report
// named on its command line (the program's own choice, not its environment's), then prints
// getauxval(AT_SECURE) so the test knows whether it ran in secure-execution mode.
//
//   secure_labels_fixture REPORT.jsonl
#include <sys/auxv.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "hangwatch/hangwatch.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.json_path = argv[1];
  config.log_hangs = false;
  if (!hangwatch::Start(config).ok()) return 3;
  {
    hangwatch::WorkScope pass;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile uint64_t sink = 0;
    while (std::chrono::steady_clock::now() < end) sink = sink + 1;
  }
  hangwatch::Stop();
  std::printf("%lu\n", getauxval(AT_SECURE));
  return 0;
}
