// An unmodified program with several loop threads and two helper threads, for the preload shim's
// HANGWATCH_THREADS tests (preload_threads_test, run_threads_test). Links nothing of hangwatch.
//
//   main          a poll loop (10 ms time-out) for --seconds (default 1.2 s)
//   io-stall      a poll loop (5 ms time-out) whose pass at 300 ms runs busy for 300 ms
//   io-nested     the same loop whose pass at 700 ms blocks 300 ms in a handler's own poll
//                 (deeper in the stack: part of the pass, as on the main thread)
//   io-calm       a poll loop (5 ms time-out), never slow
//   helper-once   after 200 ms, polls a pipe that is ready (once), then blocks in read() until
//                 the end
//   resolver      after 200 ms, 12 request/answer exchanges, each a poll with a 5 s time-out that
//   its answer
//                 ends (as glibc's resolver polls its socket), then blocks in read() until the
//                 end
//   loop-N        with --extra N: N more poll loops like io-calm
// With --exit _exit, the process ends with _exit(0) while its threads still loop; with
// --die-in-stall 1, it is killed (SIGKILL) 250 ms into io-stall's slow pass.
// Prints "done" when every thread has ended.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
bool g_die_in_stall = false;  // --die-in-stall: SIGKILL 250 ms into io-stall's slow pass
int g_release[2];             // written at the end: the helpers' read() returns

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void Name(const char* name) { pthread_setname_np(pthread_self(), name); }

// A handler's own wait, deeper in the stack than its loop's: blocks for `seconds`.
__attribute__((noinline)) void HandlerWaits(double seconds) {
  int quiet[2];
  if (pipe(quiet) != 0) return;
  pollfd p = {quiet[0], POLLIN, 0};
  volatile char frame[256] = {};  // a frame of its own, below the loop's
  poll(&p, 1, static_cast<int>(seconds * 1000));
  (void)frame[0];
  close(quiet[0]);
  close(quiet[1]);
}

// `stall_in_wait`: the slow pass blocks in a handler's poll instead of running.
void PollLoop(const char* name, double stall_at, double stall_for, bool stall_in_wait) {
  Name(name);
  int idle[2];
  if (pipe(idle) != 0) return;
  const double start = Now();
  bool stalled = false;
  while (!g_stop.load()) {
    pollfd p = {idle[0], POLLIN, 0};
    poll(&p, 1, 5);
    if (!stalled && stall_for > 0 && Now() - start >= stall_at) {
      stalled = true;
      if (stall_in_wait) {
        HandlerWaits(stall_for);
        continue;
      }
      const double until = Now() + stall_for;
      while (Now() < until) {
        if (g_die_in_stall && Now() > until - stall_for + 0.25) kill(getpid(), SIGKILL);
      }
    }
  }
  close(idle[0]);
  close(idle[1]);
}

void BlockUntilReleased() {
  char c;
  while (read(g_release[0], &c, 1) < 0) {
  }
}

// The helpers start their work once the process is surely watched (the main thread armed at
// its first wait; waits before that pass unseen).
void LetTheMainThreadArm() {
  const timespec pause = {0, 200'000'000};
  nanosleep(&pause, nullptr);
}

void HelperOnce() {
  Name("helper-once");
  LetTheMainThreadArm();
  int ready[2];
  if (pipe(ready) != 0) return;
  if (write(ready[1], "x", 1) != 1) return;
  pollfd p = {ready[0], POLLIN, 0};
  poll(&p, 1, 1000);
  BlockUntilReleased();
}

void Resolver() {
  Name("resolver");
  LetTheMainThreadArm();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) != 0) return;
  for (int i = 0; i < 12; ++i) {
    if (write(pair[1], "answer", 6) != 6) return;  // the server's reply, already there
    pollfd p = {pair[0], POLLIN, 0};
    poll(&p, 1, 5000);
    char buf[16];
    if (read(pair[0], buf, sizeof buf) <= 0) return;
  }
  BlockUntilReleased();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.2;
  int extra = 0;
  bool exit_now = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--extra") == 0) extra = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--die-in-stall") == 0) g_die_in_stall = true;
    if (std::strcmp(argv[i], "--exit") == 0) exit_now = std::strcmp(argv[i + 1], "_exit") == 0;
  }
  if (pipe(g_release) != 0) return 1;
  std::vector<std::thread> threads;
  threads.emplace_back(PollLoop, "io-stall", 0.3, 0.3, false);
  threads.emplace_back(PollLoop, "io-nested", 0.7, 0.3, true);
  threads.emplace_back(PollLoop, "io-calm", 0.0, 0.0, false);
  threads.emplace_back(HelperOnce);
  threads.emplace_back(Resolver);
  std::vector<std::string> names;
  for (int i = 0; i < extra; ++i) names.push_back("loop-" + std::to_string(i));
  for (const std::string& n : names) threads.emplace_back(PollLoop, n.c_str(), 0.0, 0.0, false);
  const double start = Now();
  int idle[2];
  if (pipe(idle) != 0) return 1;
  while (Now() - start < seconds) {
    pollfd p = {idle[0], POLLIN, 0};
    poll(&p, 1, 10);
  }
  if (exit_now) {  // as a forked worker or os._exit() leaves: threads still looping
    std::printf("done\n");
    std::fflush(stdout);
    _exit(0);
  }
  g_stop.store(true);
  if (write(g_release[1], "xx", 2) != 2) return 1;
  for (auto& t : threads) t.join();
  std::printf("done\n");
  std::fflush(stdout);
  return 0;
}
