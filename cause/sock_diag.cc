// sock_diag queries: one netlink socket per call, a request, the replies read with a receive
// timeout and parsed in place in the caller's buffer.
#include "cause/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "cause/holder_scan.h"

namespace hangwatch::cause {
namespace {

// A netlink socket for sock_diag, closed by the destructor.
class DiagSocket {
 public:
  DiagSocket() {
    fd_ = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd_ < 0) return;
    timeval tv = {0, 100'000};  // a reply takes microseconds; never wait long for a lost one
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~DiagSocket() {
    if (fd_ >= 0) close(fd_);
  }
  DiagSocket(const DiagSocket&) = delete;
  DiagSocket& operator=(const DiagSocket&) = delete;

  bool Send(const void* request, size_t size) {
    if (fd_ < 0) return false;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    return sendto(fd_, request, size, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) ==
           static_cast<ssize_t>(size);
  }

  // Reads replies and calls on_message(const nlmsghdr*) for each sock_diag message until
  // NLMSG_DONE, an error, a non-dump reply, or on_message returns false. False on an error or
  // a timeout before the end.
  template <typename F>
  bool ForEachReply(SockDiagBuffer* buf, bool dump, F&& on_message) {
    while (true) {
      const ssize_t n = recv(fd_, buf->data, sizeof buf->data, 0);
      if (n <= 0) return false;
      // The datagram's messages, each starting at a 4-byte boundary: NLMSG_OK and NLMSG_NEXT
      // spelled out in sizes (the macros compare the unsigned nlmsg_len with an int length).
      size_t left = static_cast<size_t>(n);
      for (size_t at = 0; left >= sizeof(nlmsghdr);) {
        auto* h = reinterpret_cast<nlmsghdr*>(buf->data + at);
        if (h->nlmsg_len < sizeof(nlmsghdr) || h->nlmsg_len > left) break;
        if (h->nlmsg_type == NLMSG_DONE) return true;
        if (h->nlmsg_type == NLMSG_ERROR) return false;
        if (!on_message(h)) return true;
        if (!dump) return true;
        const size_t step = NLMSG_ALIGN(h->nlmsg_len);
        if (step >= left) break;
        at += step;
        left -= step;
      }
    }
  }

 private:
  int fd_ = -1;
};

void CopyEndpoint(uint8_t family, const __be32* addr, __be16 port, InetEndpoint* out) {
  out->family = family;
  std::memcpy(out->addr, addr, family == AF_INET ? 4 : 16);
  out->port = ntohs(port);
}

void FromDiagMsg(const inet_diag_msg* m, uint8_t protocol, InetSocketInfo* out) {
  out->inode = m->idiag_inode;
  out->protocol = protocol;
  out->state = m->idiag_state;
  CopyEndpoint(m->idiag_family, m->id.idiag_src, m->id.idiag_sport, &out->local);
  CopyEndpoint(m->idiag_family, m->id.idiag_dst, m->id.idiag_dport, &out->remote);
}

struct InetRequest {
  nlmsghdr header;
  inet_diag_req_v2 req;
};

InetRequest MakeInetRequest(uint8_t family, uint8_t protocol, bool dump) {
  InetRequest r{};
  r.header.nlmsg_len = sizeof r;
  r.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  r.header.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
  r.req.sdiag_family = family;
  r.req.sdiag_protocol = protocol;
  r.req.idiag_states = ~0u;
  r.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  r.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  return r;
}

void SetId(const InetEndpoint& src, const InetEndpoint& dst, inet_diag_sockid* id) {
  std::memcpy(id->idiag_src, src.addr, sizeof id->idiag_src);
  std::memcpy(id->idiag_dst, dst.addr, sizeof id->idiag_dst);
  id->idiag_sport = htons(src.port);
  id->idiag_dport = htons(dst.port);
}

// One exact lookup with the endpoints in this order in the request.
bool ExactLookup(uint8_t protocol, const InetEndpoint& src, const InetEndpoint& dst,
                 SockDiagBuffer* buf, InetSocketInfo* out) {
  InetRequest r = MakeInetRequest(src.family, protocol, false);
  SetId(src, dst, &r.req.id);
  DiagSocket s;
  if (!s.Send(&r, sizeof r)) return false;
  bool found = false;
  s.ForEachReply(buf, false, [&](const nlmsghdr* h) {
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) return false;
    FromDiagMsg(static_cast<const inet_diag_msg*>(NLMSG_DATA(h)), protocol, out);
    found = true;
    return false;
  });
  return found;
}

// A UNIX_DIAG_NAME attribute into out->path; an abstract name (leading NUL) is shown with '@'
// for each NUL, as ss shows it.
void CopyUnixName(const rtattr* a, UnixSocketInfo* out) {
  const size_t payload = RTA_PAYLOAD(a);
  const size_t n = payload < sizeof out->path - 1 ? payload : sizeof out->path - 1;
  std::memcpy(out->path, RTA_DATA(a), n);
  out->path[n] = '\0';
  if (n > 0 && out->path[0] == '\0') {
    for (size_t i = 0; i < n; ++i) {
      if (out->path[i] == '\0') out->path[i] = '@';
    }
  }
}

}  // namespace

bool QueryUnixSocket(uint64_t inode, SockDiagBuffer* buf, UnixSocketInfo* out) {
  struct {
    nlmsghdr header;
    unix_diag_req req;
  } r{};
  r.header.nlmsg_len = sizeof r;
  r.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  r.header.nlmsg_flags = NLM_F_REQUEST;
  r.req.sdiag_family = AF_UNIX;
  r.req.udiag_states = ~0u;
  r.req.udiag_ino = static_cast<uint32_t>(inode);
  r.req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER;
  r.req.udiag_cookie[0] = INET_DIAG_NOCOOKIE;
  r.req.udiag_cookie[1] = INET_DIAG_NOCOOKIE;
  DiagSocket s;
  if (!s.Send(&r, sizeof r)) return false;
  bool found = false;
  s.ForEachReply(buf, false, [&](const nlmsghdr* h) {
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) return false;
    const auto* m = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
    if (m->udiag_ino != inode) return false;
    *out = UnixSocketInfo{};
    out->inode = m->udiag_ino;
    out->type = m->udiag_type;
    out->state = m->udiag_state;
    int attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (auto* a = reinterpret_cast<rtattr*>(const_cast<unix_diag_msg*>(m) + 1);
         RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
      const size_t payload = RTA_PAYLOAD(a);
      if (a->rta_type == UNIX_DIAG_PEER && payload >= sizeof(uint32_t)) {
        uint32_t peer;
        std::memcpy(&peer, RTA_DATA(a), sizeof peer);
        out->peer_inode = peer;
      } else if (a->rta_type == UNIX_DIAG_NAME && payload > 0) {
        CopyUnixName(a, out);
      }
    }
    found = true;
    return false;
  });
  return found;
}

bool FindUnixListenerOf(uint64_t client_inode, const ScanBudget& budget, SockDiagBuffer* buf,
                        UnixSocketInfo* out) {
  struct {
    nlmsghdr header;
    unix_diag_req req;
  } r{};
  r.header.nlmsg_len = sizeof r;
  r.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  r.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  r.req.sdiag_family = AF_UNIX;
  r.req.udiag_states = 1u << TCP_LISTEN;
  r.req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_ICONS;
  DiagSocket s;
  if (!s.Send(&r, sizeof r)) return false;
  const int64_t deadline = MonotonicNs() + budget.max_ns;
  uint32_t seen = 0;
  bool found = false;
  s.ForEachReply(buf, true, [&](const nlmsghdr* h) {
    if (++seen > budget.max_sockets || ((seen & 255) == 0 && MonotonicNs() > deadline)) {
      return false;
    }
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) return true;
    const auto* m = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
    int attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    bool queued_here = false;
    const rtattr* name = nullptr;
    for (auto* a = reinterpret_cast<rtattr*>(const_cast<unix_diag_msg*>(m) + 1);
         RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
      if (a->rta_type == UNIX_DIAG_NAME) name = a;
      if (a->rta_type != UNIX_DIAG_ICONS) continue;
      const size_t n = RTA_PAYLOAD(a) / sizeof(uint32_t);
      for (size_t i = 0; i < n; ++i) {
        uint32_t ino;
        std::memcpy(&ino, static_cast<const char*>(RTA_DATA(a)) + i * sizeof ino, sizeof ino);
        queued_here |= ino == client_inode;
      }
    }
    if (!queued_here) return true;
    *out = UnixSocketInfo{};
    out->inode = m->udiag_ino;
    out->type = m->udiag_type;
    out->state = m->udiag_state;
    if (name != nullptr) CopyUnixName(name, out);
    found = true;
    return false;
  });
  return found;
}

bool FindInetSocket(uint64_t inode, uint8_t protocol, const ScanBudget& budget, SockDiagBuffer* buf,
                    InetSocketInfo* out, bool* complete) {
  *complete = true;
  const int64_t deadline = MonotonicNs() + budget.max_ns;
  uint32_t seen = 0;
  for (uint8_t family : {uint8_t{AF_INET}, uint8_t{AF_INET6}}) {
    InetRequest r = MakeInetRequest(family, protocol, true);
    DiagSocket s;
    if (!s.Send(&r, sizeof r)) continue;
    bool found = false;
    const bool ended = s.ForEachReply(buf, true, [&](const nlmsghdr* h) {
      if (++seen > budget.max_sockets || ((seen & 255) == 0 && MonotonicNs() > deadline)) {
        *complete = false;
        return false;
      }
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) return true;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      if (m->idiag_inode != inode) return true;
      FromDiagMsg(m, protocol, out);
      found = true;
      return false;
    });
    if (found) return true;
    if (!ended) *complete = false;
    if (!*complete) return false;
  }
  return false;
}

bool LookupInetSocket(uint8_t protocol, const InetEndpoint& local, const InetEndpoint& remote,
                      SockDiagBuffer* buf, InetSocketInfo* out) {
  if (local.family == 0 || local.family != remote.family) return false;
  // TCP's lookup takes the local end as the source; UDP's (udp_diag) the other way round. The
  // answer's local port tells which one matched.
  InetSocketInfo found;
  if (ExactLookup(protocol, local, remote, buf, &found) && found.local.port == local.port) {
    *out = found;
    return true;
  }
  if (ExactLookup(protocol, remote, local, buf, &found) && found.local.port == local.port) {
    *out = found;
    return true;
  }
  return false;
}

bool IsLoopback(const InetEndpoint& e) {
  if (e.family == AF_INET) return e.addr[0] == 127;
  if (e.family != AF_INET6) return false;
  static const uint8_t kLoop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(e.addr, kLoop6, 16) == 0) return true;
  return std::memcmp(e.addr, kMapped, 12) == 0 && e.addr[12] == 127;
}

const char* FormatEndpoint(const InetEndpoint& e, char* out, size_t n) {
  if (n == 0) return out;
  char addr[INET6_ADDRSTRLEN] = "?";
  if (e.family == AF_INET || e.family == AF_INET6) {
    inet_ntop(e.family, e.addr, addr, sizeof addr);
  }
  std::snprintf(out, n, e.family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr,
                static_cast<unsigned>(e.port));
  return out;
}

}  // namespace hangwatch::cause
