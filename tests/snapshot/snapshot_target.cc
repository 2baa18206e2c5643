// The process that `hangwatch snapshot` tests and bench/snapshot_vs_eustack.sh look at: eight
// threads parked in known call chains, built with frame pointers and without sibling calls or
// inlining (tests/snapshot/CMakeLists.txt), so every chain function is a real frame.
//
//   reader  ReadChainA -> ReadChainB -> ReadChainC -> read() on an empty pipe
//   sleeper SleepChainA -> SleepChainB -> nanosleep()
//   waiter  CondChainA -> CondChainB -> CondChainC -> pthread_cond_wait() (futex)
//   poller  EpollChainA -> EpollChainB -> epoll_wait() on an empty epoll set
//   counter CountChainA -> CountChainB -> CountChainC -> busy loop advancing a counter
//   spinner SpinChainA -> SpinChainB -> busy arithmetic loop
//   pollfd  PollChainA -> PollChainB -> poll() on an empty pipe
//   vforker VforkChainA -> VforkChainB -> vfork() (uninterruptible until the child exits)
//           only with --vfork; otherwise a second reader, ReadChainA -> ... -> read()
//
// With --quiet, the counter and spinner chains end in BlockForever() -> poll() instead of
// spinning (no thread of the target runs).
//
// With --churn, a ninth thread keeps creating and joining short-lived threads (threads that
// appear and vanish during a snapshot).
//
// Each chain optionally recurses through Recurse() `--depth N` times first (benchmark: 64-frame
// stacks). When every thread has reached its blocking call (checked in /proc/self/task/TID/
// syscall for the blocked ones, by a counter for the busy ones) the main thread prints
// "ready TID..." (one TID per chain, in the order above) and then serves commands on stdin:
//   c  print the counter               r  wake the reader once; prints "read N" when it read
//   e  print the EINTRs seen per call    v  let the vfork child exit; prints "vfork done"
//   g  longest pause of the spinner since the last g, in µs
//   q  exit 0                           (EOF: exit 0)
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The busy loops use __atomic builtins on plain variables: with -fno-inline, std::atomic's
// member functions would be calls, and a frame-pointer walk that catches a thread at the entry
// of such a callee (before it pushed its frame record) skips the caller.
#define LOAD(v) __atomic_load_n(&(v), __ATOMIC_RELAXED)
#define STORE(v, x) __atomic_store_n(&(v), (x), __ATOMIC_RELAXED)
uint64_t g_counter = 0;
uint64_t g_spin = 0;
// EINTRs seen per blocking call: read, nanosleep, epoll_wait, poll.
std::atomic<int> g_eintr_read{0};
std::atomic<int> g_eintr_sleep{0};
std::atomic<int> g_eintr_epoll{0};
std::atomic<int> g_eintr_poll{0};
// Always true; makes the busy loops returnable so that the compiler gives them a frame record
// (a noreturn leaf gets no prologue, which a frame-pointer walk cannot see).
bool g_forever = true;
// --quiet: the busy leaves block in poll() instead (a target with no running thread).
bool g_quiet = false;

std::atomic<int> g_reads{0};
std::atomic<bool> g_vfork_done{false};
int g_depth = 0;
int g_reader_pipe[2];
int g_poll_pipe[2];
int g_vfork_pipe[2];
int g_epoll = -1;
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
std::atomic<pid_t> g_tids[8];

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

#define CHAIN extern "C" __attribute__((noinline, used))
// Keeps each call a real call with a frame after it (no tail call, no merging).
#define KEEP() asm volatile("" ::: "memory")
// GCC gives a leaf function no frame record even with -fno-omit-frame-pointer when it needs no
// stack; asking for the frame address forces one, so the busy leaves below are walkable with
// frame pointers alone (the chains' callers would otherwise be skipped by such a walk).
#define NEED_FRAME() asm volatile("" ::"r"(__builtin_frame_address(0)))

}  // namespace

// Blocks forever in poll() with no descriptors.
CHAIN void BlockForever() {
  for (;;) poll(nullptr, 0, -1);
}

CHAIN void ReadChainC() {
  char c;
  for (;;) {
    ssize_t n = read(g_reader_pipe[0], &c, 1);
    if (n < 0 && errno == EINTR) g_eintr_read.fetch_add(1);
    if (n == 1) g_reads.fetch_add(1);
  }
}
CHAIN void ReadChainB() {
  ReadChainC();
  KEEP();
}
CHAIN void ReadChainA() {
  ReadChainB();
  KEEP();
}

CHAIN void SleepChainB() {
  for (;;) {
    timespec ts{100000, 0};
    if (nanosleep(&ts, &ts) != 0 && errno == EINTR) g_eintr_sleep.fetch_add(1);
  }
}
CHAIN void SleepChainA() {
  SleepChainB();
  KEEP();
}

CHAIN void CondChainC() {
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_cv, &g_mu);  // nobody signals it
}
CHAIN void CondChainB() {
  CondChainC();
  KEEP();
}
CHAIN void CondChainA() {
  CondChainB();
  KEEP();
}

CHAIN void EpollChainB() {
  for (;;) {
    epoll_event ev;
    if (epoll_wait(g_epoll, &ev, 1, -1) < 0 && errno == EINTR) g_eintr_epoll.fetch_add(1);
  }
}
CHAIN void EpollChainA() {
  EpollChainB();
  KEEP();
}

CHAIN void CountChainC() {
  NEED_FRAME();
  if (g_quiet) BlockForever();
  while (LOAD(g_forever)) __atomic_fetch_add(&g_counter, 1, __ATOMIC_RELAXED);
}
CHAIN void CountChainB() {
  CountChainC();
  KEEP();
}
CHAIN void CountChainA() {
  CountChainB();
  KEEP();
}

// The cycle counter: read inline (no call), so the spinner's stack is only its chain.
__attribute__((always_inline)) inline uint64_t Cycles() {
#if defined(__x86_64__)
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

// The longest time, in cycles, the spinner went without running: what a snapshot costs the
// target (plus whatever the scheduler takes; the benchmark measures that baseline too).
uint64_t g_max_gap_cycles = 0;

CHAIN void SpinChainB() {
  NEED_FRAME();
  if (g_quiet) BlockForever();
  uint64_t x = 1;
  uint64_t last = Cycles();
  uint64_t max_gap = 0;
  while (LOAD(g_forever)) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    STORE(g_spin, x);
    if ((x & 255) == 0) {
      uint64_t now = Cycles();
      // 'g' resets the published maximum to 0: start over from there.
      uint64_t published = LOAD(g_max_gap_cycles);
      if (published == 0) max_gap = 0;
      if (now - last > max_gap) max_gap = now - last;
      last = now;
      if (max_gap > published) STORE(g_max_gap_cycles, max_gap);
    }
  }
}
CHAIN void SpinChainA() {
  SpinChainB();
  KEEP();
}

CHAIN void PollChainB() {
  for (;;) {
    pollfd p{g_poll_pipe[0], POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno == EINTR) g_eintr_poll.fetch_add(1);
  }
}
CHAIN void PollChainA() {
  PollChainB();
  KEEP();
}

CHAIN void VforkChainB() {
  pid_t child = vfork();
  if (child == 0) {
    // The parent thread is in uninterruptible sleep until this child exits. The child dies
    // with it (it would otherwise outlive a killed target, holding its pipes open).
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char c;
    syscall(SYS_read, g_vfork_pipe[0], &c, 1);
    _exit(0);
  }
  if (child > 0) waitpid(child, nullptr, 0);
  g_vfork_done.store(true);
  for (;;) pause();
}
CHAIN void VforkChainA() {
  VforkChainB();
  KEEP();
}

static void* ShortLived(void*) { return nullptr; }

CHAIN void* Churn(void*) {
  for (;;) {
    pthread_t t;
    if (pthread_create(&t, nullptr, ShortLived, nullptr) == 0) pthread_join(t, nullptr);
  }
  return nullptr;
}

// Deepens every chain for the benchmark (64-frame stacks).
CHAIN void Recurse(int n, void (*leaf)()) {
  if (n <= 0) {
    leaf();
  } else {
    Recurse(n - 1, leaf);
  }
  KEEP();
}

namespace {

struct Chain {
  const char* name;
  void (*entry)();
  long syscall_nr;  // the syscall it blocks in, -1 for busy chains, kVforkWait for vfork
};

// Not a syscall number: the vfork parent waits in the kernel in 'D' state (vfork itself is a
// clone on some architectures, so its number says nothing).
constexpr long kVforkWait = -100;

void* ThreadMain(void* arg) {
  auto* slot = static_cast<std::pair<int, const Chain*>*>(arg);
  pthread_setname_np(pthread_self(), slot->second->name);
  g_tids[slot->first].store(Gettid());
  Recurse(g_depth, slot->second->entry);
  return nullptr;
}

// The syscall number a blocked thread is in, from /proc/self/task/TID/syscall ("running" or a
// number); -2 while unknown.
long CurrentSyscall(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -2;
  long nr = -2;
  if (std::fscanf(f, "%ld", &nr) != 1) nr = -2;
  std::fclose(f);
  return nr;
}

}  // namespace

int main(int argc, char** argv) {
  bool with_vfork = false;
  bool churn = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--depth") == 0 && i + 1 < argc) {
      g_depth = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--vfork") == 0) {
      with_vfork = true;
    } else if (std::strcmp(argv[i], "--churn") == 0) {
      churn = true;
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      g_quiet = true;
    } else {
      std::fprintf(stderr, "usage: snapshot_target [--depth N] [--vfork] [--churn] [--quiet]\n");
      return 2;
    }
  }
  if (pipe(g_reader_pipe) != 0 || pipe(g_poll_pipe) != 0 || pipe(g_vfork_pipe) != 0) return 1;
  g_epoll = epoll_create1(0);
  if (g_epoll < 0) return 1;

#if defined(__x86_64__)
  const long kNanosleep = SYS_clock_nanosleep;
  const long kEpollWait = SYS_epoll_wait;
  const long kPoll = SYS_poll;
#else
  const long kNanosleep = SYS_clock_nanosleep;
  const long kEpollWait = SYS_epoll_pwait;
  const long kPoll = SYS_ppoll;
#endif
  static const Chain kChains[8] = {
      {"reader", ReadChainA, SYS_read},  {"sleeper", SleepChainA, kNanosleep},
      {"waiter", CondChainA, SYS_futex}, {"poller", EpollChainA, kEpollWait},
      {"counter", CountChainA, -1},      {"spinner", SpinChainA, -1},
      {"pollfd", PollChainA, kPoll},     {"vforker", VforkChainA, kVforkWait},
  };
  Chain chains[8];
  for (int i = 0; i < 8; ++i) chains[i] = kChains[i];
  if (g_quiet) chains[4].syscall_nr = chains[5].syscall_nr = kPoll;
  if (!with_vfork) chains[7] = {"reader2", ReadChainA, SYS_read};

  static std::pair<int, const Chain*> slots[8];
  for (int i = 0; i < 8; ++i) {
    slots[i] = {i, &chains[i]};
    pthread_t t;
    if (pthread_create(&t, nullptr, ThreadMain, &slots[i]) != 0) return 1;
    pthread_detach(t);
  }
  // Wait, on real events, until each thread is where its chain ends: in its syscall, or
  // advancing its counter.
  for (int i = 0; i < 8; ++i) {
    while (g_tids[i].load() == 0) sched_yield();
    if (chains[i].syscall_nr < 0) {
      uint64_t& c = i == 4 ? g_counter : g_spin;
      uint64_t before = LOAD(c);
      while (LOAD(c) == before) sched_yield();
      continue;
    }
    // vfork: the thread waits in the kernel while its child runs; /proc shows the child's
    // read() in the child, and "running"/vfork for the parent depending on the kernel: wait
    // for the 'D' state instead.
    if (chains[i].syscall_nr == kVforkWait) {
      for (;;) {
        char path[64];
        char buf[512];
        std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", g_tids[i].load());
        FILE* f = std::fopen(path, "r");
        size_t n = f != nullptr ? std::fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f != nullptr) std::fclose(f);
        buf[n] = '\0';
        const char* p = std::strrchr(buf, ')');
        if (p != nullptr && p[1] == ' ' && p[2] == 'D') break;
        sched_yield();
      }
      continue;
    }
    while (CurrentSyscall(g_tids[i].load()) != chains[i].syscall_nr) sched_yield();
  }
  if (churn) {
    pthread_t t;
    if (pthread_create(&t, nullptr, Churn, nullptr) != 0) return 1;
    pthread_detach(t);
  }
  // Cycle counter rate, for 'g' (a measurement, not a synchronization).
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint64_t c0 = Cycles();
  timespec nap{0, 20000000};
  nanosleep(&nap, nullptr);
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e6 +
              static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e3;
  const double cycles_per_us = us > 0 ? static_cast<double>(Cycles() - c0) / us : 1.0;
  STORE(g_max_gap_cycles, uint64_t{0});

  std::printf("ready");
  for (int i = 0; i < 8; ++i) std::printf(" %d", g_tids[i].load());
  std::printf("\n");
  std::fflush(stdout);

  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    switch (line[0]) {
      case 'c':
        std::printf("%llu\n", static_cast<unsigned long long>(LOAD(g_counter)));
        break;
      case 'e':
        std::printf("read=%d nanosleep=%d epoll_wait=%d poll=%d\n", g_eintr_read.load(),
                    g_eintr_sleep.load(), g_eintr_epoll.load(), g_eintr_poll.load());
        break;
      case 'r': {
        int before = g_reads.load();
        if (write(g_reader_pipe[1], "x", 1) != 1) return 1;
        while (g_reads.load() == before) sched_yield();
        std::printf("read %d\n", g_reads.load());
        break;
      }
      case 'v':
        if (write(g_vfork_pipe[1], "x", 1) != 1) return 1;
        while (!g_vfork_done.load()) sched_yield();
        std::printf("vfork done\n");
        break;
      case 'g': {
        // Longest pause of the spinner since the last 'g', in µs; then reset.
        uint64_t gap = __atomic_exchange_n(&g_max_gap_cycles, 0, __ATOMIC_RELAXED);
        std::printf("%.0f\n", static_cast<double>(gap) / cycles_per_us);
        break;
      }
      case 'q':
        return 0;
      default:
        break;
    }
    std::fflush(stdout);
  }
  return 0;
}
