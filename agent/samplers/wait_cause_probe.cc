// The Linux WaitCauseProbe: cause/ reads the main thread's system call, the lock behind a futex
// and its chain of owners, a child's state, a descriptor's other side or a file (through
// wait_fd_cause.h); each owner is captured with the agent's sampler. A thread in restart_syscall
// (a timed wait that a stop interrupted) is decoded as the call it restarted (cause/call_memory.h).
// Linux only (cmake/apple_sources.cmake leaves it out of Apple builds).
#include "agent/samplers/wait_cause_probe.h"

#include <time.h>

#include <cstring>
#include <memory>

#include "agent/samplers/wait_fd_cause.h"
#include "cause/call_memory.h"
#include "cause/child_wait.h"
#include "cause/lock_owner.h"
#include "cause/syscall_decode.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/proc_files.h"

namespace hangwatch::agent {
namespace {

void CopyName(const char* from, char (&to)[16]) {
  const size_t n = strnlen(from, sizeof(to) - 1);
  std::memcpy(to, from, n);
  to[n] = '\0';
}

static_assert(static_cast<uint8_t>(cause::LockType::kSemaphore) == kWaitLockSemaphore &&
              static_cast<uint8_t>(cause::LockType::kConditionVariable) ==
                  kWaitLockConditionVariable &&
              static_cast<uint8_t>(cause::LockType::kPiMutex) == 6 &&
              kWaitLockTypes == kWaitLockSemaphore + 1);

WaitCall CallOf(const cause::DecodedWait& w) {
  WaitCall c;
  c.nr = w.nr;
  std::memcpy(c.args, w.args, sizeof(c.args));
  if (w.nr >= 0) cause::FormatCall(w, c.text, sizeof(c.text));
  return c;
}

WaitLock LockOf(const cause::LockInfo& l) { return WaitLock{static_cast<uint8_t>(l.type), l.addr}; }

// The CPU clock of thread `tid` of this process (the kernel's MAKE_THREAD_CPUCLOCK).
clockid_t ThreadCpuClock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
}

class LinuxWaitCauseProbe final : public WaitCauseProbe {
 public:
  bool Probe(const unwind::ThreadInfo& main, const SampledThread& sampled,
             OtherThreadCapturer* capturer, WaitCause* out) override {
    *out = WaitCause{};
    const char state = sampled.state;
    cause::DecodedWait w;
    if (sampled.syscall_known && sampled.syscall_args != nullptr) {
      unwind::TaskSyscall sys;
      sys.fields = 9;
      sys.nr = sampled.syscall_nr;
      std::memcpy(sys.args, sampled.syscall_args, sizeof(sys.args));
      calls_.Resolve(main.tid, &sys);  // a timed wait a stop restarted: the call it restarted
      w = cause::DecodeWait(sys);
    } else {
      w = cause::ReadThreadWait(main.tid);
    }
    if (w.nr < 0) {
      // Running, or blocked outside a system call: in uninterruptible sleep, a page fault.
      if (state == 'D') scheduling_.NoteFaultSample();
      return false;
    }
    out->call = CallOf(w);
    MainName(main.tid, out->main_name);
    switch (w.wait) {
      case cause::SyscallWait::kFutex:
        ProbeLock(main.tid, w, capturer, out);
        break;
      case cause::SyscallWait::kSleep:
        out->kind = CauseKind::kSleep;
        out->sleep_ns = w.sleep_ns;
        out->sleep_forever = w.sleep_forever;
        break;
      case cause::SyscallWait::kChild: {
        out->kind = CauseKind::kChild;
        const cause::ChildInfo c = cause::ResolveChildWait(main.tid, w);
        out->child.pid = c.pid;
        CopyName(c.name, out->child.name);
        out->child.state = c.state;
        out->child_any = c.any;
        break;
      }
      case cause::SyscallWait::kFile:
      case cause::SyscallWait::kDescriptors:
        // Told apart by what the descriptor is: a socket or a pipe (ipc), a file (io).
        fds_.Resolve(main.tid, state, w, out);
        break;
      default:
        // Another call: in uninterruptible sleep it waits for I/O all the same.
        if (state == 'D') {
          fds_.Resolve(main.tid, state, w, out);
        } else {
          out->kind = CauseKind::kOther;
        }
        break;
    }
    return true;
  }

  void HangStarted(const unwind::ThreadInfo& main) override {
    fds_.Forget();
    calls_.Forget();
    scheduling_.Start(main.tid);
  }

  void HangEnded(const unwind::ThreadInfo& main, WaitCause* cause) override {
    scheduling_.End(main.tid, cause);
  }

 private:
  void ProbeLock(pid_t main_tid, const cause::DecodedWait& w, OtherThreadCapturer* capturer,
                 WaitCause* out) {
    const cause::LockInfo lock = cause::ResolveFutexWait(w);
    out->kind = CauseKind::kLock;
    out->lock = LockOf(lock);
    out->owner_released = lock.owner_released;
    if (lock.owner == 0) return;
    reader_.probe = this;
    reader_.capturer = capturer;
    reader_.out = out;
    cause::FollowChain(main_tid, lock, &chain_, &reader_);
    out->num_threads = static_cast<uint8_t>(chain_.length);
    out->chain_truncated = chain_.truncated;
    if (chain_.deadlock) {
      out->kind = CauseKind::kDeadlock;
      out->cycle_from = static_cast<int8_t>(chain_.cycle_from);
    }
    for (int i = 0; i < chain_.length; ++i) {
      const cause::ChainLink& link = chain_.links[i];
      WaitThread& t = out->threads[i];  // its frames are the reader's
      t.tid = link.tid;
      CopyName(link.name, t.name);
      t.state = link.state;
      t.call = CallOf(link.wait);
      t.wants = LockOf(link.wants);
    }
  }

  // Each owner is captured once per sample: its stack into the cause, and what the capture saw
  // (state, system call, sp) for the chain.
  struct CapturingReader final : cause::ChainReader {
    void ReadLink(int index, cause::ChainLink* link) override {
      probe->ThreadName(link->tid, link->name);
      if (capturer == nullptr) {
        link->wait = cause::ReadThreadWait(link->tid, &link->sp, &link->state);
        return;
      }
      WaitThread& t = out->threads[index];
      unwind::ThreadInfo info;
      info.tid = link->tid;
      info.cpu_clock = ThreadCpuClock(link->tid);
      info.stack = probe->StackOf(link->tid);
      SampledThread seen;
      t.num_frames = static_cast<uint32_t>(
          capturer->CaptureOther(info, t.frames, t.methods, kCauseMaxFrames, &seen));
      link->state = seen.state;
      link->sp = seen.sp;
      if (seen.syscall_known && seen.syscall_args != nullptr) {
        unwind::TaskSyscall sys;
        sys.fields = 9;
        sys.nr = seen.syscall_nr;
        std::memcpy(sys.args, seen.syscall_args, sizeof(sys.args));
        probe->calls_.Resolve(link->tid, &sys);
        link->wait = cause::DecodeWait(sys);
      }
    }
    LinuxWaitCauseProbe* probe = nullptr;
    OtherThreadCapturer* capturer = nullptr;
    WaitCause* out = nullptr;
  };

  // A thread's name, remembered per thread (kKnownNames of them): an owner is named once, not
  // at every sample. A name set while it is remembered shows once it is forgotten.
  void ThreadName(pid_t tid, char (&out)[16]) {
    for (const KnownName& k : names_) {
      if (k.tid == tid) {
        std::memcpy(out, k.name, sizeof(out));
        return;
      }
    }
    KnownName& k = names_[next_name_];
    next_name_ = (next_name_ + 1) % kKnownNames;
    k.tid = tid;
    cause::ReadThreadName(tid, k.name, sizeof(k.name));
    std::memcpy(out, k.name, sizeof(out));
  }

  // The stack of thread `tid`: remembered, else found around its sp (its syscall line).
  unwind::StackBounds StackOf(pid_t tid) {
    for (const KnownStack& k : known_) {
      if (k.tid == tid) return k.bounds;
    }
    uint64_t sp = 0;
    cause::ReadThreadWait(tid, &sp);
    return StackOf(tid, sp);
  }

  // The stack mapping of thread `tid` around `sp` (from /proc/self/maps), remembered per thread
  // so that a thread seen running (no sp) is still read with its bounds.
  unwind::StackBounds StackOf(pid_t tid, uint64_t sp) {
    for (const KnownStack& k : known_) {
      if (k.tid == tid && (sp == 0 || (sp >= k.bounds.lo && sp < k.bounds.hi))) return k.bounds;
    }
    unwind::StackBounds found;
    if (sp == 0) return found;
    unwind::ReadMaps(0, maps_buf_.get(), kMapsBufSize, [&](const unwind::MapsLine& line) {
      if (sp >= line.lo && sp < line.hi && line.readable()) {
        found.lo = line.lo;
        found.hi = line.hi;
      }
    });
    if (found.hi != 0) {
      known_[next_known_] = KnownStack{tid, found};
      next_known_ = (next_known_ + 1) % kKnownStacks;
    }
    return found;
  }

  // The main thread's name, read once per thread (a name set during a hang shows from the next
  // thread watched).
  void MainName(pid_t tid, char (&out)[16]) {
    if (tid != main_name_tid_) {
      cause::ReadThreadName(tid, main_name_, sizeof(main_name_));
      main_name_tid_ = tid;
    }
    std::memcpy(out, main_name_, sizeof(out));
  }

  static constexpr size_t kMapsBufSize = 4352;
  static constexpr size_t kKnownStacks = 8;
  struct KnownStack {
    pid_t tid = 0;
    unwind::StackBounds bounds;
  };
  std::unique_ptr<char[]> maps_buf_{new char[kMapsBufSize]};
  KnownStack known_[kKnownStacks];
  size_t next_known_ = 0;
  cause::WaitChain chain_;
  FdWaitResolver fds_;         // ipc, io: their scratch allocated here, before Start returns
  HangScheduling scheduling_;  // starved, throttled, pressure, fault
  cause::CallMemory calls_;    // the calls seen in this hang, for a wait a stop restarted
  CapturingReader reader_;
  static constexpr size_t kKnownNames = 8;
  struct KnownName {
    pid_t tid = 0;
    char name[16] = {};
  };
  KnownName names_[kKnownNames];
  size_t next_name_ = 0;
  pid_t main_name_tid_ = 0;
  char main_name_[16] = {};
};

class LinuxOwnerSampler final : public OwnerSampler {
 public:
  explicit LinuxOwnerSampler(unwind::ThreadSampler* fallback) : sampler_(fallback) {}
  unwind::CaptureStatus Capture(const unwind::ThreadInfo& thread,
                                unwind::CaptureBuffer* out) override {
    return sampler_.Capture(thread, out);
  }
  bool UnchangedSinceLastRead(const unwind::ThreadInfo& thread) override {
    return sampler_.UnchangedSinceLastRead(thread);
  }

 private:
  unwind::ProcFirstSampler sampler_;
};

}  // namespace

std::unique_ptr<OwnerSampler> MakeLinuxOwnerSampler(unwind::ThreadSampler* fallback) {
  return std::make_unique<LinuxOwnerSampler>(fallback);
}

std::unique_ptr<WaitCauseProbe> MakeLinuxWaitCauseProbe() {
  return std::make_unique<LinuxWaitCauseProbe>();
}

}  // namespace hangwatch::agent
