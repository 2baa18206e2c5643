// The process of tests/snapshot/snapshot_waits_test.cc: stuck in known waits.
//
// deadlock_target (no argument): stuck for good, every wait without a timeout.
//   "locker-a" holds mutex 1 and wants mutex 2; "locker-b" holds mutex 2 and wants mutex 1: a
//     deadlock of two threads.
//   "holder" holds mutex 3 and sleeps in HolderSleeps; "blocked" waits for mutex 3.
//   Prints "ready A B HOLDER BLOCKED" (their tids) once every lock is taken.
// deadlock_target timed: the same, every wait with a timeout an hour away (the waits a ptrace
//   stop turns into restart_syscall): the lockers use pthread_mutex_timedlock, the holder sleeps
//   in nanosleep holding a std::timed_mutex that "blocked" wants with try_lock_for, and a fifth
//   thread, "cond-waiter", waits in pthread_cond_timedwait.
//   Prints "ready A B HOLDER BLOCKED COND".
// Each waiter is then on its way into its futex wait (the test waits for that). Runs until
// killed.
// deadlock_target deadline MS: one thread, "timed-waiter", waits in pthread_mutex_timedlock
//   for a mutex the main thread holds, with a deadline MS ms away. Prints "ready TID", and
//   when the wait returned "result ETIMEDOUT LATE_MS" (else the error's text in place of
//   ETIMEDOUT; LATE_MS: how many ms after the deadline it returned), then exits.
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace {

std::mutex m1, m2, m3;
pthread_mutex_t tm1 = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t tm2 = PTHREAD_MUTEX_INITIALIZER;
std::timed_mutex tm3;
pthread_mutex_t cond_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
pthread_barrier_t taken;  // every first lock taken, before anyone asks for a second one
pid_t tids[5];

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// CLOCK_REALTIME, `ms` from now (pthread_mutex_timedlock's and pthread_cond_timedwait's clock).
timespec RealtimeIn(long ms) {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1'000'000;
  if (t.tv_nsec >= 1'000'000'000) {
    t.tv_sec += 1;
    t.tv_nsec -= 1'000'000'000;
  }
  return t;
}

constexpr long kHourMs = 3'600'000;

void Locker(int index, const char* name, std::mutex* first, std::mutex* second) {
  pthread_setname_np(pthread_self(), name);
  tids[index] = Tid();
  std::lock_guard<std::mutex> a(*first);
  pthread_barrier_wait(&taken);
  std::lock_guard<std::mutex> b(*second);  // never returns
}

void TimedLocker(int index, const char* name, pthread_mutex_t* first, pthread_mutex_t* second) {
  pthread_setname_np(pthread_self(), name);
  tids[index] = Tid();
  pthread_mutex_lock(first);
  pthread_barrier_wait(&taken);
  const timespec deadline = RealtimeIn(kHourMs);
  pthread_mutex_timedlock(second, &deadline);  // returns in an hour
}

__attribute__((noinline)) void HolderSleeps(bool timed) {
  for (;;) {
    if (timed) {
      const timespec hour{kHourMs / 1000, 0};
      nanosleep(&hour, nullptr);
    } else {
      pause();
    }
  }
}

void Holder(bool timed) {
  pthread_setname_np(pthread_self(), "holder");
  tids[2] = Tid();
  if (timed) {
    tm3.lock();
  } else {
    m3.lock();
  }
  pthread_barrier_wait(&taken);
  HolderSleeps(timed);
}

void Blocked(bool timed) {
  pthread_setname_np(pthread_self(), "blocked");
  tids[3] = Tid();
  pthread_barrier_wait(&taken);
  if (timed) {
    (void)tm3.try_lock_for(std::chrono::hours(1));  // returns in an hour
  } else {
    std::lock_guard<std::mutex> a(m3);  // never returns
  }
}

void CondWaiter() {
  pthread_setname_np(pthread_self(), "cond-waiter");
  tids[4] = Tid();
  pthread_mutex_lock(&cond_mu);
  pthread_barrier_wait(&taken);
  const timespec deadline = RealtimeIn(kHourMs);
  pthread_cond_timedwait(&cond, &cond_mu, &deadline);  // nobody signals it
}

int Stuck(bool timed) {
  pthread_barrier_init(&taken, nullptr, timed ? 6 : 5);
  std::thread a, b, c;
  if (timed) {
    a = std::thread(TimedLocker, 0, "locker-a", &tm1, &tm2);
    b = std::thread(TimedLocker, 1, "locker-b", &tm2, &tm1);
    c = std::thread(CondWaiter);
  } else {
    a = std::thread(Locker, 0, "locker-a", &m1, &m2);
    b = std::thread(Locker, 1, "locker-b", &m2, &m1);
  }
  std::thread h(Holder, timed);
  std::thread w(Blocked, timed);
  pthread_barrier_wait(&taken);
  std::printf("ready %d %d %d %d", tids[0], tids[1], tids[2], tids[3]);
  if (timed) std::printf(" %d", tids[4]);
  std::printf("\n");
  std::fflush(stdout);
  a.join();  // never returns
  return 0;
}

int Deadline(long ms) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  std::thread waiter([&] {
    pthread_setname_np(pthread_self(), "timed-waiter");
    const timespec deadline = RealtimeIn(ms);
    std::printf("ready %d\n", Tid());
    std::fflush(stdout);
    const int rc = pthread_mutex_timedlock(&mu, &deadline);
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const long late_ms =
        (now.tv_sec - deadline.tv_sec) * 1000 + (now.tv_nsec - deadline.tv_nsec) / 1'000'000;
    std::printf("result %s %ld\n", rc == ETIMEDOUT ? "ETIMEDOUT" : std::strerror(rc), late_ms);
    std::fflush(stdout);
  });
  waiter.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "deadline") == 0) return Deadline(std::atol(argv[2]));
  return Stuck(argc >= 2 && std::strcmp(argv[1], "timed") == 0);
}
