#include "agent/context/context_probe.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent/context/perceived.h"
#include "hang/model/source_choice.h"
#include "unwind/self_memory.h"

#if defined(__linux__)
#include <sys/socket.h>

#include "agent/context/display_input.h"
#include "agent/context/raw_fd_calls.h"
#include "cause/epoll_fdinfo.h"
#include "cause/fd_peer.h"
#include "cause/scan_budget.h"
#include "cause/sock_diag.h"
#include "unwind/proc_files.h"
#endif

namespace hangwatch::agent {
namespace {

void CopyText(const char* from, char* to, size_t n) {
  size_t len = strnlen(from, n - 1);
  memcpy(to, from, len);
  to[len] = '\0';
}

#if defined(__linux__)
// An anonymous inode's kind from its link text ("anon_inode:[timerfd]", "anon_inode:inotify").
const char* AnonKind(const char* link) {
  if (strstr(link, "timerfd") != nullptr) return "timerfd";
  if (strstr(link, "eventfd") != nullptr) return "eventfd";
  if (strstr(link, "signalfd") != nullptr) return "signalfd";
  if (strstr(link, "inotify") != nullptr) return "inotify";
  if (strstr(link, "eventpoll") != nullptr) return "epoll";
  if (strstr(link, "pidfd") != nullptr) return "pidfd";
  return "anon";
}

bool IsListening(int fd) {
  int on = 0;
  socklen_t len = sizeof on;
  return raw::GetSockOpt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on != 0;
}

// The descriptor of an epoll's interest list whose event data word is `data`, and its inode
// (cause/epoll_fdinfo.h).
bool EpollTarget(int epfd, uint64_t data, char* buf, size_t n, int* fd, uint64_t* ino) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
  if (unwind::ReadProcFile(path, buf, n) <= 0) return false;
  bool found = false;
  cause::ForEachEpollEntry(buf, [&](const cause::EpollEntry& e) {
    if (e.data != data) return true;
    *fd = e.fd;
    *ino = e.inode;
    found = true;
    return false;
  });
  return found;
}
#endif

}  // namespace

bool CopyForeignString(const char* addr, char* out, size_t n) {
  out[0] = '\0';
  if (addr == nullptr || n == 0) return false;
  iovec local{out, n - 1};
  iovec remote{const_cast<char*>(addr), n - 1};
  const ssize_t got = unwind::ReadSelfV(&local, 1, &remote, 1);
  if (got <= 0) {
    out[0] = '\0';
    return false;
  }
  out[got] = '\0';
  out[strnlen(out, static_cast<size_t>(got))] = '\0';
  return true;
}

ContextOptions ContextOptionsFor(bool context, bool input, uint32_t perceived_ms) {
  auto off = [](const char* name) {
  // As HANGWATCH_LABELS: not in a set-user-ID program.
#if defined(__APPLE__)
    const char* v = issetugid() ? nullptr : getenv(name);
#else
    const char* v = secure_getenv(name);
#endif
    return v != nullptr && strcmp(v, "0") == 0;
  };
  ContextOptions o;
  o.context = context && !off("HANGWATCH_CONTEXT");
  o.input = input && !off("HANGWATCH_INPUT");
  o.perceived_ms = perceived_ms;
  return o;
}

#if defined(__linux__)
struct ContextShared::Platform {
  cause::FdPeerScratch fd_scratch;
  static constexpr size_t kFdinfoBytes = 16384;
  char fdinfo[kFdinfoBytes];
  std::unique_ptr<DisplayInput> display;  // null with input off
};
#else
struct ContextShared::Platform {};
#endif

ContextShared::ContextShared(const ContextOptions& options)
    : options_(options), platform_(std::make_unique<Platform>()) {
#if defined(__linux__)
  // The guarded reads of the names: process_vm_readv, else /proc/self/mem (qemu-user has no
  // process_vm_readv); a forked child's agent opens its own.
  if (options.context) unwind::PrepareSelfMemory();
  if (options.input) platform_->display = std::make_unique<DisplayInput>();
#endif
}

ContextShared::~ContextShared() = default;

void ContextProbe::Sample(uint64_t pass, uint64_t now_ns, HangContext* out) {
  // The display first: a trigger on its connection is named "display" once it is known.
  LookAtDisplay(now_ns, out);
  if (shared_->options().context) {
    ReadLabels(out);
    ReadSource(pass, out);
    DescribeTrigger(pass, out);
  }
}

void ContextProbe::ReadLabels(HangContext* out) const {
  const uint32_t depth = words_->label_depth.load(std::memory_order_acquire);
  // The labels of the last sample that found any: the thread may have left its labelled work
  // for the pass's last moments. Nor does a sample that found only the outer part of the labels
  // kept replace them: the pass's inner labelled work ended as the pass did (a scope closed
  // right before EndWork(), the thread descheduled in between).
  if (depth == 0 || depth > 1u << 20) return;
  const uint32_t kept = depth < internal::kMaxLabelDepth ? depth : internal::kMaxLabelDepth;
  char labels[internal::kMaxLabelDepth][HangContext::kLabelBytes];
  uint32_t n = 0;
  for (uint32_t i = 0; i < kept; ++i) {
    const char* name = words_->labels[i].load(std::memory_order_relaxed);
    if (!CopyForeignString(name, labels[n], HangContext::kLabelBytes)) continue;
    ++n;
  }
  if (n < out->label_count) {
    bool prefix = true;
    for (uint32_t i = 0; i < n && prefix; ++i) prefix = std::strcmp(labels[i], out->labels[i]) == 0;
    if (prefix) return;
  }
  std::memcpy(out->labels, labels, sizeof labels);
  out->label_count = n;
  out->label_depth = depth;
}

void ContextProbe::ReadSource(uint64_t pass, HangContext* out) const {
  if (words_->source_pass.load(std::memory_order_acquire) != pass) return;
  const char* source = words_->source.load(std::memory_order_relaxed);
  const void* callback = words_->callback.load(std::memory_order_relaxed);
  const int64_t queued_ns = words_->source_queued_ns.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (words_->source_pass.load(std::memory_order_relaxed) != pass) return;
  // A source cleared at the end of its dispatch (the GLib adapter does) leaves the last one the
  // hang saw: a sample in the moments between two dispatches does not erase it.
  if (source == nullptr && callback == nullptr) return;
  // The hang keeps the source of its longest run of samples (hang/model/source_choice.h): a
  // sample taken as the pass left the work it stalled in does not rename it.
  char name[HangContext::kTextBytes];
  CopyForeignString(source, name, sizeof name);
  CountSourceSample(name, reinterpret_cast<uintptr_t>(callback),
                    queued_ns < 0 ? -1 : queued_ns / 1'000'000, out);
}

void ContextProbe::DescribeTrigger(uint64_t pass, HangContext* out) {
  if (described_pass_ == pass) return;
  described_pass_ = pass;
  if (words_->trigger_pass.load(std::memory_order_acquire) != pass) return;
  const uint64_t word = words_->trigger.load(std::memory_order_relaxed);
  const uint64_t data = words_->trigger_data.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (words_->trigger_pass.load(std::memory_order_relaxed) != pass) return;

  out->has_trigger = true;
  out->trigger_kind = internal::TriggerKindOf(word);
  out->ready = internal::TriggerReadyOf(word);
  const int fd = internal::TriggerFdOf(word);
  switch (out->trigger_kind) {
    case internal::kTriggerTimeout:
      CopyText("timeout", out->trigger_name, sizeof out->trigger_name);
      out->timeout_ms = data;
      return;
    case internal::kTriggerInterrupted:
      CopyText("interrupted", out->trigger_name, sizeof out->trigger_name);
      return;
    case internal::kTriggerEpoll:
    case internal::kTriggerFd:
      DescribeDescriptor(fd, data, out);
      return;
    default:
      out->has_trigger = false;
      return;
  }
}

void ContextProbe::DescribeDescriptor(int fd, uint64_t data, HangContext* out) {
#if defined(__linux__)
  ContextShared::Platform* p = shared_->platform();
  uint64_t inode = 0;
  // The event's data word names an epoll's descriptor only through its interest list; the
  // inode there says whether the descriptor still is that file.
  if (out->trigger_kind == internal::kTriggerEpoll &&
      !EpollTarget(fd, data, p->fdinfo, sizeof p->fdinfo, &fd, &inode)) {
    CopyText("gone", out->trigger_name, sizeof out->trigger_name);
    return;
  }
  out->fd = fd;
  cause::FdDescription d;
  cause::ForgetPeers(&p->fd_scratch);
  cause::ScanBudget budget;
  budget.max_ns = shared_->options().describe_max_ns;
  if (!cause::DescribeFd(0, fd, budget, &p->fd_scratch, &d) || (inode != 0 && d.inode != inode)) {
    CopyText("gone", out->trigger_name, sizeof out->trigger_name);
    return;
  }
  const char* name = "unknown";
  char endpoint[64] = {};
  switch (d.kind) {
    case cause::FdKind::kTcp:
    case cause::FdKind::kUdp: {
      const bool listening = d.tcp_state == 10;
      name = listening ? "listen" : d.kind == cause::FdKind::kTcp ? "tcp" : "udp";
      cause::FormatEndpoint(listening ? d.local : d.remote, endpoint, sizeof endpoint);
      CopyText(endpoint, out->peer, sizeof out->peer);
      break;
    }
    case cause::FdKind::kUnixSocket:
      name = IsListening(fd) ? "listen" : "unix";
      if (p->display != nullptr && p->display->display_fd() == fd) name = "display";
      CopyText(d.socket_path, out->peer, sizeof out->peer);
      break;
    case cause::FdKind::kSocket:
      name = "socket";
      break;
    case cause::FdKind::kPipe:
      name = "pipe";
      break;
    case cause::FdKind::kFifo:
      name = "fifo";
      CopyText(d.path, out->peer, sizeof out->peer);
      break;
    case cause::FdKind::kRegular:
    case cause::FdKind::kDirectory:
      name = "file";
      CopyText(d.path, out->peer, sizeof out->peer);
      break;
    case cause::FdKind::kBlockDevice:
    case cause::FdKind::kCharDevice:
      name = "device";
      CopyText(d.path, out->peer, sizeof out->peer);
      break;
    case cause::FdKind::kAnonInode:
      name = AnonKind(d.path);
      break;
    case cause::FdKind::kUnknown:
      name = "gone";
      break;
  }
  CopyText(name, out->trigger_name, sizeof out->trigger_name);
  if (d.peers.count > 0) {
    out->peer_pid = d.peers.peers[0].pid;
    CopyText(d.peers.peers[0].name, out->peer_process, sizeof out->peer_process);
  }
#else
  (void)data;
  out->fd = fd;
  CopyText("unknown", out->trigger_name, sizeof out->trigger_name);
#endif
}

void ContextProbe::LookAtDisplay(uint64_t now_ns, HangContext* out) {
#if defined(__linux__)
  DisplayInput* display = shared_->platform()->display.get();
  InputSnapshot s;
  if (display == nullptr || !display->Look(now_ns, &s)) return;
  // Input seen waiting stays in the hang: the last look that found some, with the largest ages.
  if (s.pending || !out->input.pending) {
    const InputSnapshot before = out->input;
    out->input = s;
    if (before.pending && before.oldest_known && s.oldest_known && before.oldest_ms > s.oldest_ms) {
      out->input.oldest_ms = before.oldest_ms;
    }
  }
#else
  (void)now_ns;
  (void)out;
#endif
}

void ContextProbe::HangEnded(HangContext* out) const {
  const bool display_began_it = strcmp(out->trigger_name, "display") == 0;
  const PerceivedVerdict v = JudgePerceived(out->input, shared_->options().perceived_ms,
                                            shared_->options().not_responding_ms, display_began_it);
  out->perceived_known = v.known;
  out->perceived = v.perceived;
  out->not_responding = v.not_responding;
}

}  // namespace hangwatch::agent
