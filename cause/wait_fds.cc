// DescribeWaitFds: decode the wait's arguments, copy its pollfds / fd_sets / timeout out of the
// thread's memory (process_vm_readv) or read the epoll interest list, then describe up to
// kMaxWaitFds descriptors with one /proc scan.
#include "cause/wait_fds.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cause/epoll_fdinfo.h"
#include "cause/syscall_decode.h"

namespace hangwatch::cause {
namespace {

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

// A timespec (or timeval when `micro`) at addr as milliseconds; -1 for a null pointer.
int64_t ReadTimeout(pid_t pid, uint64_t addr, bool micro) {
  if (addr == 0) return -1;
  int64_t t[2];
  if (!ReadProcess(pid, addr, t, sizeof t)) return -2;
  return t[0] * 1000 + (micro ? t[1] / 1000 : t[1] / 1'000'000);
}

void Add(WaitFds* out, int fd, uint32_t events) {
  ++out->total;
  for (uint32_t i = 0; i < out->count; ++i) {
    if (out->fds[i].fd == fd) {
      out->fds[i].events |= events;
      --out->total;
      return;
    }
  }
  if (out->count == kMaxWaitFds) return;
  out->fds[out->count].fd = fd;
  out->fds[out->count].events = events;
  ++out->count;
}

bool ReadPoll(pid_t pid, const unwind::TaskSyscall& call, WaitFdsScratch* s, WaitFds* out) {
  const uint64_t nfds = call.args[1];
  const bool ppoll = call.nr == SYS_ppoll;
  out->timeout_ms = ppoll ? ReadTimeout(pid, call.args[2], false)
                          : static_cast<int64_t>(static_cast<int32_t>(call.args[2]));
  if (out->timeout_ms < -1) out->timeout_ms = ppoll ? -2 : -1;
  if (nfds == 0) return true;
  if (nfds > (1u << 20)) {  // more than RLIMIT_NOFILE can be: not a pollfd count
    errno = EINVAL;
    return false;
  }
  const size_t n = nfds < 256 ? nfds : 256;
  if (!ReadProcess(pid, call.args[0], s->polls, n * sizeof(pollfd))) return false;
  for (size_t i = 0; i < n; ++i) {
    if (s->polls[i].fd >= 0) Add(out, s->polls[i].fd, static_cast<uint16_t>(s->polls[i].events));
  }
  if (nfds > n) out->total += static_cast<uint32_t>(nfds - n);  // not looked at
  return true;
}

bool ReadSelect(pid_t pid, const unwind::TaskSyscall& call, WaitFdsScratch* s, WaitFds* out) {
  const uint64_t nfds = call.args[0] < 1024 ? call.args[0] : 1024;
  out->timeout_ms = ReadTimeout(pid, call.args[4], call.nr != SYS_pselect6);
  const size_t bytes = (nfds + 63) / 64 * 8;
  static constexpr uint32_t kEvents[3] = {POLLIN, POLLOUT, POLLPRI};
  for (int set = 0; set < 3; ++set) {
    std::memset(s->fd_set_bits[set], 0, sizeof s->fd_set_bits[set]);
    const uint64_t addr = call.args[1 + set];
    if (addr == 0 || bytes == 0) continue;
    if (!ReadProcess(pid, addr, s->fd_set_bits[set], bytes)) return false;
  }
  for (uint64_t fd = 0; fd < nfds; ++fd) {
    for (int set = 0; set < 3; ++set) {
      if ((s->fd_set_bits[set][fd / 64] >> (fd % 64)) & 1) {
        Add(out, static_cast<int>(fd), kEvents[set]);
      }
    }
  }
  return true;
}

// "tfd:        5 events:       19 data: ..." lines of an epoll's fdinfo.
bool ReadEpoll(pid_t pid, const unwind::TaskSyscall& call, WaitFdsScratch* s, WaitFds* out) {
  out->epoll_fd = static_cast<int32_t>(call.args[0]);
  out->timeout_ms = call.nr == SYS_epoll_pwait2
                        ? ReadTimeout(pid, call.args[3], false)
                        : static_cast<int64_t>(static_cast<int32_t>(call.args[3]));
  if (out->timeout_ms < -1 && call.nr != SYS_epoll_pwait2) out->timeout_ms = -1;
  char leaf[32];
  std::snprintf(leaf, sizeof leaf, "fdinfo/%d", out->epoll_fd);
  char path[64];
  unwind::ProcPath(pid, leaf, path, sizeof path);
  const ssize_t len = unwind::ReadProcFile(path, s->fdinfo, sizeof s->fdinfo);
  if (len < 0) return false;
  ForEachEpollEntry(s->fdinfo, [out](const EpollEntry& e) {
    Add(out, e.fd, e.events);
    return true;
  });
  return true;
}

}  // namespace

const char* WaitCallName(WaitCall call) {
  switch (call) {
    case WaitCall::kPoll:
      return "poll";
    case WaitCall::kSelect:
      return "select";
    case WaitCall::kEpoll:
      return "epoll_wait";
    case WaitCall::kNone:
      break;
  }
  return "";
}

WaitCall ClassifyWaitCall(int64_t nr) {
  switch (nr) {
#ifdef SYS_poll
    case SYS_poll:
#endif
    case SYS_ppoll:
      return WaitCall::kPoll;
#ifdef SYS_select
    case SYS_select:
#endif
    case SYS_pselect6:
      return WaitCall::kSelect;
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
    case SYS_epoll_pwait:
    case SYS_epoll_pwait2:
      return WaitCall::kEpoll;
    default:
      return WaitCall::kNone;
  }
}

bool DescribeWaitFds(pid_t pid, const unwind::TaskSyscall& call, const ScanBudget& budget,
                     WaitFdsScratch* scratch, WaitFds* out) {
  *out = WaitFds{};
  out->call = ClassifyWaitCall(call.nr);
  if (call.fields != 9) out->call = WaitCall::kNone;
  if (pid < 0 && out->call != WaitCall::kNone) {
    out->error = ESRCH;
    return false;
  }
  bool ok = false;
  switch (out->call) {
    case WaitCall::kNone:
      return false;
    case WaitCall::kPoll:
      ok = ReadPoll(pid, call, scratch, out);
      break;
    case WaitCall::kSelect:
      ok = ReadSelect(pid, call, scratch, out);
      break;
    case WaitCall::kEpoll:
      ok = ReadEpoll(pid, call, scratch, out);
      break;
  }
  if (!ok) {
    out->error = errno != 0 ? errno : EIO;
    out->total = 0;
    out->count = 0;
    return false;
  }
  for (uint32_t i = 0; i < out->count; ++i) {
    out->described[i].pid = pid;
    out->described[i].fd = out->fds[i].fd;
  }
  DescribeFds(out->described, out->count, budget, &scratch->peer);
  return true;
}

size_t FormatSummary(const WaitFds& w, char* buf, size_t n) {
  if (n == 0) return 0;
  size_t at = 0;
  auto advance = [&](int written) {
    if (written > 0) at = at + static_cast<size_t>(written) < n ? at + written : n - 1;
  };
  char timeout[32];
  if (w.timeout_ms == -1) {
    std::snprintf(timeout, sizeof timeout, "none");
  } else if (w.timeout_ms < 0) {
    std::snprintf(timeout, sizeof timeout, "unknown");
  } else {
    std::snprintf(timeout, sizeof timeout, "%lld ms", static_cast<long long>(w.timeout_ms));
  }
  if (w.error != 0) {
    const char* reason = strerrordesc_np(w.error);
    advance(std::snprintf(buf, n, "%s: arguments unreadable (%s)", WaitCallName(w.call),
                          reason != nullptr ? reason : "?"));
    return at;
  }
  if (w.total == 0) {
    advance(std::snprintf(buf, n, "%s with no descriptors (timeout %s)", WaitCallName(w.call),
                          timeout));
    return at;
  }
  advance(std::snprintf(buf, n, "%s on %u descriptor%s (timeout %s)", WaitCallName(w.call), w.total,
                        w.total == 1 ? "" : "s", timeout));
  for (uint32_t i = 0; i < w.count && at + 1 < n; ++i) {
    advance(std::snprintf(buf + at, n - at, i == 0 ? ": " : "; "));
    at += FormatSummary(w.described[i], buf + at, n - at);
  }
  if (w.count < w.total && at + 1 < n) advance(std::snprintf(buf + at, n - at, "; ..."));
  return at;
}

}  // namespace hangwatch::cause
