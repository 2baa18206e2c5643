// The process of tests/snapshot/snapshot_waits_test.cc: stuck for good, in known waits.
//   "locker-a" holds mutex 1 and wants mutex 2; "locker-b" holds mutex 2 and wants mutex 1: a
//     deadlock of two threads.
//   "holder" holds mutex 3 and sleeps in HolderSleeps; "blocked" waits for mutex 3.
// Prints "ready A B HOLDER BLOCKED" (their tids) once every lock is taken; each waiter is then
// on its way into its futex wait (the test waits for that). Runs until killed.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <thread>

namespace {

std::mutex m1, m2, m3;
pthread_barrier_t taken;  // every first lock taken, before anyone asks for a second one
pid_t tids[4];

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void Locker(int index, const char* name, std::mutex* first, std::mutex* second) {
  pthread_setname_np(pthread_self(), name);
  tids[index] = Tid();
  std::lock_guard<std::mutex> a(*first);
  pthread_barrier_wait(&taken);
  std::lock_guard<std::mutex> b(*second);  // never returns
}

__attribute__((noinline)) void HolderSleeps() {
  for (;;) pause();
}

void Holder() {
  pthread_setname_np(pthread_self(), "holder");
  tids[2] = Tid();
  std::lock_guard<std::mutex> a(m3);
  pthread_barrier_wait(&taken);
  HolderSleeps();
}

void Blocked() {
  pthread_setname_np(pthread_self(), "blocked");
  tids[3] = Tid();
  pthread_barrier_wait(&taken);
  std::lock_guard<std::mutex> a(m3);  // never returns
}

}  // namespace

int main() {
  pthread_barrier_init(&taken, nullptr, 5);
  std::thread a(Locker, 0, "locker-a", &m1, &m2);
  std::thread b(Locker, 1, "locker-b", &m2, &m1);
  std::thread h(Holder);
  std::thread w(Blocked);
  pthread_barrier_wait(&taken);
  std::printf("ready %d %d %d %d\n", tids[0], tids[1], tids[2], tids[3]);
  std::fflush(stdout);
  a.join();  // never returns
  return 0;
}
