// A program that forks from a signal handler while its main thread reaches its first wait (as
// PostgreSQL 15's postmaster starts its children from its SIGUSR1 and SIGCHLD handlers): a
// SIGALRM every 200 µs forks a child that waits once (and so arms hangwatch in itself) and
// exits. The first poll of the main thread is where the preload shim loads the agent library;
// a fork in the middle of that dlopen gave children that crashed. Prints
// "children N crashed C stuck S" and exits 0 only when every child exited 0.
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace {

constexpr int kMaxChildren = 256;
pid_t g_children[kMaxChildren];
volatile sig_atomic_t g_count = 0;

void ForkOnAlarm(int) {
  if (g_count >= kMaxChildren) return;
  const pid_t pid = fork();
  if (pid == 0) {
    poll(nullptr, 0, 20);  // the child's first wait: it arms here
    _exit(0);
  }
  if (pid > 0) {
    g_children[g_count] = pid;
    g_count = g_count + 1;
  }
}

void SetTimer(long usec) {
  itimerval t{};
  t.it_interval.tv_usec = usec;
  t.it_value.tv_usec = usec;
  setitimer(ITIMER_REAL, &t, nullptr);
}

}  // namespace

int main() {
  struct sigaction sa {};
  sa.sa_handler = ForkOnAlarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
  SetTimer(200);
  for (int i = 0; i < 5; ++i) poll(nullptr, 0, 40);  // the first one arms the agent
  SetTimer(0);
  int crashed = 0, stuck = 0;
  const int n = g_count;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    pid_t got = 0;
    for (int tries = 0; tries < 500 && (got = waitpid(g_children[i], &status, WNOHANG)) == 0;
         ++tries) {
      const timespec ten_ms{0, 10 * 1000 * 1000};
      nanosleep(&ten_ms, nullptr);
    }
    if (got == 0) {
      ++stuck;
      kill(g_children[i], SIGKILL);
      waitpid(g_children[i], &status, 0);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++crashed;
    }
  }
  printf("children %d crashed %d stuck %d\n", n, crashed, stuck);
  return crashed == 0 && stuck == 0 && n > 0 ? 0 : 1;
}
