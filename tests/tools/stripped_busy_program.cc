// An event-loop program built stripped (-s: no .symtab; its static functions are not in .dynsym
// either), for the identity tests of stripped binaries: between polls it keeps its main thread
// busy for 600 ms, twice, in one of two functions that have no name in the binary
// (argv[1]: "a" or "b"). Their frames are told apart by where each function starts.
#include <poll.h>
#include <time.h>

#include <cstdio>
#include <cstring>

namespace {

double NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Two different functions doing different work, so that the compiler cannot merge them.
__attribute__((noinline)) unsigned long SpinSumming(double ms) {
  const double end = NowMs() + ms;
  unsigned long x = 0;
  while (NowMs() < end) {
    for (unsigned i = 0; i < 1000; ++i) x += i * 7;
    asm volatile("" : "+r"(x));
  }
  return x;
}

__attribute__((noinline)) unsigned long SpinXoring(double ms) {
  const double end = NowMs() + ms;
  unsigned long x = 1;
  while (NowMs() < end) {
    for (unsigned i = 0; i < 1000; ++i) x ^= (x << 3) + i;
    asm volatile("" : "+r"(x));
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const bool a = argc > 1 && std::strcmp(argv[1], "a") == 0;
  unsigned long sink = 0;
  for (int round = 0; round < 2; ++round) {
    poll(nullptr, 0, 50);  // the event loop's wait: the preload shim arms here
    sink += a ? SpinSumming(600) : SpinXoring(600);
  }
  poll(nullptr, 0, 50);
  std::printf("%lu\n", sink & 1);
  return 0;
}
