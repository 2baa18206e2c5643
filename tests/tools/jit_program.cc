// A program that runs code it wrote into anonymous memory, as a JIT compiler's output runs, and
// names it in /tmp/perf-PID.map only when it exits, as the JVM does with
// -XX:+DumpPerfMapAtExit.
//
//   jit_program STALL_MS
//
// Prints "jit_program pid PID", waits for events (poll, 50 ms), then calls the generated function
// Loop.busyFor, which spins until another thread sets a flag STALL_MS later (x86-64 code; elsewhere
// the program exits 77), waits again, and exits 0. The map is written by an exit handler registered
// before the first wait, so that it runs after the preload shim's own (which writes the hang): the
// hang's record cannot name the code, only a reader that comes later can.
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

void* g_code = nullptr;
constexpr size_t kCodeSize = 64;

void WritePerfMap() {
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/perf-%d.map", static_cast<int>(getpid()));
  if (FILE* f = std::fopen(path, "w")) {
    // The JVM's format: "0x%016lx 0x%016lx RETURN_TYPE CLASS.METHOD(ARGS)".
    std::fprintf(f, "0x%016lx 0x%016zx void Loop.busyFor(long)\n",
                 reinterpret_cast<unsigned long>(g_code), kCodeSize);
    std::fclose(f);
  }
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__x86_64__)
  if (argc != 2) {
    std::fprintf(stderr, "usage: jit_program STALL_MS\n");
    return 2;
  }
  const int stall_ms = std::atoi(argv[1]);
  // The test removes the map this process leaves in /tmp, by its pid.
  std::printf("jit_program pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  // spin: mov (%rdi),%eax; test %eax,%eax; jz spin; ret
  static const unsigned char kSpin[] = {0x8b, 0x07, 0x85, 0xc0, 0x74, 0xfa, 0xc3};
  g_code = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_code == MAP_FAILED) return 2;
  std::memset(g_code, 0xcc, kCodeSize);
  std::memcpy(g_code, kSpin, sizeof kSpin);
  if (mprotect(g_code, 4096, PROT_READ | PROT_EXEC) != 0) return 2;
  std::atexit(WritePerfMap);
  poll(nullptr, 0, 50);
  volatile int flag = 0;
  std::thread setter([&flag, stall_ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
    flag = 1;
  });
  reinterpret_cast<void (*)(volatile int*)>(g_code)(&flag);
  setter.join();
  poll(nullptr, 0, 50);
  return 0;
#else
  (void)argc;
  (void)argv;
  return 77;
#endif
}
