// DescribeFds: identify each descriptor (/proc/PID/fd link and stat; a socket's family from
// getsockname for this process, else from sock_diag), then one /proc scan for the holders of
// every pipe, FIFO and peer socket found.
#include "cause/fd_peer.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "cause/append_format.h"
#include "unwind/proc_files.h"

namespace hangwatch::cause {
namespace {

inline constexpr size_t kMaxScanQueries = 16;

bool StartsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

void FdPath(pid_t pid, int fd, char* out, size_t n) {
  char leaf[32];
  std::snprintf(leaf, sizeof leaf, "fd/%d", fd);
  unwind::ProcPath(pid, leaf, out, n);
}

void EndpointFromSockaddr(const sockaddr_storage& ss, InetEndpoint* out) {
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    out->family = AF_INET;
    std::memcpy(out->addr, &a->sin_addr, 4);
    out->port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    out->family = AF_INET6;
    std::memcpy(out->addr, &a->sin6_addr, 16);
    out->port = ntohs(a->sin6_port);
  }
}

// A socket of this process, read directly: its family and protocol, and its ends. False when
// the descriptor is no longer the socket that was stat'ed.
bool IdentifyOwnSocket(FdDescription* d) {
  struct stat st {};
  if (fstat(d->fd, &st) != 0 || st.st_ino != d->inode) return false;
  int domain = 0, protocol = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(d->fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  len = sizeof protocol;
  getsockopt(d->fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len);
  if (domain == AF_UNIX) {
    d->kind = FdKind::kUnixSocket;
    return true;
  }
  if (domain != AF_INET && domain != AF_INET6) {
    d->kind = FdKind::kSocket;
    return true;
  }
  if (protocol != IPPROTO_TCP && protocol != IPPROTO_UDP) {
    d->kind = FdKind::kSocket;
    return true;
  }
  d->kind = protocol == IPPROTO_TCP ? FdKind::kTcp : FdKind::kUdp;
  sockaddr_storage ss{};
  socklen_t ss_len = sizeof ss;
  if (getsockname(d->fd, reinterpret_cast<sockaddr*>(&ss), &ss_len) == 0) {
    EndpointFromSockaddr(ss, &d->local);
  }
  ss = {};
  ss_len = sizeof ss;
  if (getpeername(d->fd, reinterpret_cast<sockaddr*>(&ss), &ss_len) == 0) {
    EndpointFromSockaddr(ss, &d->remote);
  }
  if (d->kind == FdKind::kTcp) {
    tcp_info info{};
    socklen_t info_len = sizeof info;
    if (getsockopt(d->fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0) {
      d->tcp_state = info.tcpi_state;
    }
  }
  return true;
}

// A socket of another process: which table it is in, through sock_diag.
void IdentifyOtherSocket(const ScanBudget& budget, FdPeerScratch* scratch, FdDescription* d) {
  UnixSocketInfo unix_info;
  if (QueryUnixSocket(d->inode, &scratch->diag, &unix_info)) {
    d->kind = FdKind::kUnixSocket;
    return;
  }
  for (uint8_t protocol : {uint8_t{IPPROTO_TCP}, uint8_t{IPPROTO_UDP}}) {
    InetSocketInfo info;
    bool complete = true;
    if (FindInetSocket(d->inode, protocol, budget, &scratch->diag, &info, &complete)) {
      d->kind = protocol == IPPROTO_TCP ? FdKind::kTcp : FdKind::kUdp;
      d->local = info.local;
      d->remote = info.remote;
      d->tcp_state = info.state;
      return;
    }
  }
  d->kind = FdKind::kSocket;
}

// The cached sock_diag answers for this socket, or nullptr.
const PeerIdentityCache::Entry* CachedIdentity(FdPeerScratch* scratch, const FdDescription& d) {
  for (const PeerIdentityCache::Entry& e : scratch->identities.entries) {
    if (e.used && e.inode == d.inode && e.dev == d.dev && e.kind == d.kind) return &e;
  }
  return nullptr;
}

void RememberIdentity(FdPeerScratch* scratch, const FdDescription& d, uint64_t peer_socket) {
  if (peer_socket == 0 || d.peer_is_listener) return;
  PeerIdentityCache& c = scratch->identities;
  PeerIdentityCache::Entry& e = c.entries[c.next++ % (sizeof c.entries / sizeof c.entries[0])];
  e.used = true;
  e.inode = d.inode;
  e.dev = d.dev;
  e.kind = d.kind;
  e.peer_socket = peer_socket;
  e.peer_inode = d.peer_inode;
  std::memcpy(e.socket_path, d.socket_path, sizeof e.socket_path);
}

// The peer socket's inode of a Unix socket (0: none), and the path to show. A connection the
// server has not accepted yet has a peer without an inode: then the listener it is queued on.
uint64_t UnixPeer(const ScanBudget& budget, FdPeerScratch* scratch, FdDescription* d) {
  if (const PeerIdentityCache::Entry* e = CachedIdentity(scratch, *d)) {
    std::memcpy(d->socket_path, e->socket_path, sizeof d->socket_path);
    d->peer_inode = e->peer_inode;
    return e->peer_socket;
  }
  UnixSocketInfo self_info;
  if (!QueryUnixSocket(d->inode, &scratch->diag, &self_info)) return 0;
  std::memcpy(d->socket_path, self_info.path, sizeof d->socket_path);
  d->peer_inode = self_info.peer_inode;
  UnixSocketInfo peer_info;
  if (d->peer_inode == 0 && self_info.state == TCP_ESTABLISHED &&
      FindUnixListenerOf(d->inode, budget, &scratch->diag, &peer_info)) {
    d->peer_is_listener = true;
    d->peer_inode = peer_info.inode;
    if (d->socket_path[0] == '\0')
      std::memcpy(d->socket_path, peer_info.path, sizeof d->socket_path);
    return d->peer_inode;
  }
  if (d->peer_inode != 0 && d->socket_path[0] == '\0' &&
      QueryUnixSocket(d->peer_inode, &scratch->diag, &peer_info)) {
    std::memcpy(d->socket_path, peer_info.path, sizeof d->socket_path);
  }
  RememberIdentity(scratch, *d, d->peer_inode);
  return d->peer_inode;
}

// The inode of the socket at the other end of a loopback TCP/UDP socket (0: none found).
uint64_t InetPeer(FdPeerScratch* scratch, FdDescription* d) {
  d->loopback = d->remote.family != 0 && d->remote.port != 0 && IsLoopback(d->remote);
  if (!d->loopback) return 0;
  if (const PeerIdentityCache::Entry* e = CachedIdentity(scratch, *d)) return e->peer_socket;
  const uint8_t protocol = d->kind == FdKind::kTcp ? IPPROTO_TCP : IPPROTO_UDP;
  InetSocketInfo peer;
  if (LookupInetSocket(protocol, d->remote, d->local, &scratch->diag, &peer) && peer.inode != 0) {
    d->peer_is_listener = peer.state == TCP_LISTEN || protocol == IPPROTO_UDP;
    RememberIdentity(scratch, *d, peer.inode);
    return peer.inode;
  }
  // Connected but not accepted yet: its server socket holds no descriptor; the listener does.
  InetEndpoint any;
  any.family = d->remote.family;
  if (LookupInetSocket(protocol, d->remote, any, &scratch->diag, &peer) && peer.inode != 0) {
    d->peer_is_listener = true;
    return peer.inode;
  }
  return 0;
}

// Reads the link and stat of the descriptor; sets kind (not yet the socket's family).
bool ReadLinkAndStat(FdDescription* d) {
  if (d->pid < 0 || d->fd < 0) {
    d->error = d->pid < 0 ? ESRCH : EBADF;
    return false;
  }
  char path[64];
  FdPath(d->pid, d->fd, path, sizeof path);
  const ssize_t n = readlink(path, d->path, sizeof d->path - 1);
  if (n < 0) {
    d->error = errno;
    d->path[0] = '\0';
    return false;
  }
  d->path[n] = '\0';
  struct stat st {};
  if (stat(path, &st) != 0) {
    d->error = errno;
    return false;
  }
  d->inode = st.st_ino;
  d->dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  if (S_ISREG(st.st_mode)) {
    d->kind = StartsWith(d->path, "anon_inode:") ? FdKind::kAnonInode : FdKind::kRegular;
  } else if (S_ISDIR(st.st_mode)) {
    d->kind = FdKind::kDirectory;
  } else if (S_ISBLK(st.st_mode)) {
    d->kind = FdKind::kBlockDevice;
  } else if (S_ISCHR(st.st_mode)) {
    d->kind = FdKind::kCharDevice;
  } else if (S_ISFIFO(st.st_mode)) {
    d->kind = StartsWith(d->path, "pipe:[") ? FdKind::kPipe : FdKind::kFifo;
  } else if (S_ISSOCK(st.st_mode)) {
    d->kind = FdKind::kSocket;
  } else {
    d->kind = FdKind::kAnonInode;
  }
  return true;
}

// Everything but the holders. Returns the inode of the socket whose holders are wanted (0:
// none, or the descriptor's own link for a pipe/FIFO: see NeedsScan).
uint64_t Identify(const ScanBudget& budget, FdPeerScratch* scratch, FdDescription* d) {
  if (!ReadLinkAndStat(d)) {
    d->kind = FdKind::kUnknown;
    return 0;
  }
  if (d->kind != FdKind::kSocket) return 0;
  const bool own = d->pid == 0 || d->pid == getpid();
  if (!own || !IdentifyOwnSocket(d)) IdentifyOtherSocket(budget, scratch, d);
  if (d->kind == FdKind::kUnixSocket) return UnixPeer(budget, scratch, d);
  if (d->kind == FdKind::kTcp || d->kind == FdKind::kUdp) return InetPeer(scratch, d);
  return 0;
}

// The description whose peer list is `peers`.
FdDescription* OwnerOf(FdDescription* out, size_t count, PeerList* peers) {
  for (size_t i = 0; i < count; ++i) {
    if (&out[i].peers == peers) return &out[i];
  }
  return out;
}

}  // namespace

const char* FdKindName(FdKind kind) {
  switch (kind) {
    case FdKind::kUnknown:
      return "unknown";
    case FdKind::kRegular:
      return "regular file";
    case FdKind::kDirectory:
      return "directory";
    case FdKind::kBlockDevice:
      return "block device";
    case FdKind::kCharDevice:
      return "character device";
    case FdKind::kPipe:
      return "pipe";
    case FdKind::kFifo:
      return "fifo";
    case FdKind::kUnixSocket:
      return "unix socket";
    case FdKind::kTcp:
      return "tcp";
    case FdKind::kUdp:
      return "udp";
    case FdKind::kSocket:
      return "socket";
    case FdKind::kAnonInode:
      return "anon inode";
  }
  return "unknown";
}

void ForgetPeers(FdPeerScratch* scratch) {
  scratch->cache.Clear();
  scratch->identities = PeerIdentityCache{};
}

void DescribeFds(FdDescription* out, size_t count, const ScanBudget& budget,
                 FdPeerScratch* scratch) {
  HolderQuery queries[kMaxScanQueries];
  char socket_links[kMaxScanQueries][32];
  size_t query_count = 0;
  const pid_t self = getpid();
  for (size_t i = 0; i < count; ++i) {
    FdDescription& d = out[i];
    const int32_t pid = d.pid, fd = d.fd;
    d = FdDescription{};
    d.pid = pid;
    d.fd = fd;
    const uint64_t peer_socket = Identify(budget, scratch, &d);
    if (query_count == kMaxScanQueries) continue;
    HolderQuery& q = queries[query_count];
    q.exclude_pid = pid > 0 ? pid : self;
    q.exclude_fd = fd;
    q.out = &d.peers;
    if (d.kind == FdKind::kPipe || d.kind == FdKind::kFifo) {
      q.link = d.path;
      q.link_size = std::strlen(d.path);
    } else if (peer_socket != 0) {
      char* link = socket_links[query_count];
      q.link_size = static_cast<size_t>(
          std::snprintf(link, 32, "socket:[%llu]", static_cast<unsigned long long>(peer_socket)));
      q.link = link;
      q.exclude_fd = -1;  // another socket: every holder is a peer
      q.first_holder_enough = true;
    } else {
      continue;
    }
    ++query_count;
  }
  // Holders remembered from an earlier scan and still holding the file need no scan.
  HolderQuery pending[kMaxScanQueries];
  size_t pending_count = 0;
  for (size_t i = 0; i < query_count; ++i) {
    ScanStats cached;
    FdDescription* d = OwnerOf(out, count, queries[i].out);
    if (scratch->cache.Lookup(queries[i], &scratch->holders, &cached)) {
      d->scan = cached;
    } else {
      pending[pending_count++] = queries[i];
    }
  }
  if (pending_count == 0) return;
  const ScanStats stats =
      FindHolders(out[0].pid, pending, pending_count, budget, &scratch->holders);
  for (size_t i = 0; i < pending_count; ++i) {
    OwnerOf(out, count, pending[i].out)->scan = stats;
    scratch->cache.Store(pending[i], stats);
  }
}

bool DescribeFd(pid_t pid, int fd, const ScanBudget& budget, FdPeerScratch* scratch,
                FdDescription* out) {
  out->pid = pid;
  out->fd = fd;
  DescribeFds(out, 1, budget, scratch);
  return out->kind != FdKind::kUnknown;
}

size_t FormatSummary(const FdDescription& d, char* buf, size_t n) {
  if (n == 0) return 0;
  size_t at = 0;
  AppendFormat(buf, n, &at, "fd %d: ", d.fd);
  switch (d.kind) {
    case FdKind::kUnknown: {
      const char* reason = d.error != 0 ? strerrordesc_np(d.error) : nullptr;
      AppendFormat(buf, n, &at, "unknown (%s)", reason != nullptr ? reason : "not described");
      return at;
    }
    case FdKind::kPipe:
      AppendFormat(buf, n, &at, "%s", d.path);
      break;
    case FdKind::kUnixSocket:
      AppendFormat(buf, n, &at, "unix socket %s",
                   d.socket_path[0] != '\0' ? d.socket_path : "(unnamed)");
      break;
    case FdKind::kTcp:
    case FdKind::kUdp: {
      char local[64], remote[64];
      AppendFormat(buf, n, &at, "%s %s", FdKindName(d.kind),
                   FormatEndpoint(d.local, local, sizeof local));
      if (d.remote.family != 0 && d.remote.port != 0) {
        AppendFormat(buf, n, &at, " -> %s", FormatEndpoint(d.remote, remote, sizeof remote));
      }
      break;
    }
    default:
      AppendFormat(buf, n, &at, "%s %s", FdKindName(d.kind), d.path);
      break;
  }
  const bool pipe_like = d.kind == FdKind::kPipe || d.kind == FdKind::kFifo;
  if (d.peers.count > 0) {
    AppendFormat(buf, n, &at,
                 pipe_like            ? ", other end held by"
                 : d.peer_is_listener ? ", listener"
                                      : ", peer");
    for (uint8_t i = 0; i < d.peers.count; ++i) {
      const PeerProcess& p = d.peers.peers[i];
      AppendFormat(buf, n, &at, "%s %d \"%s\" (fd %d)", i == 0 ? "" : ",", p.pid, p.name, p.fd);
    }
    if (d.peers.truncated) AppendFormat(buf, n, &at, ", ...");
  } else if (pipe_like || d.peer_inode != 0 || d.loopback) {
    AppendFormat(
        buf, n, &at,
        d.scan.complete ? ", peer process not found" : ", peer process not found (scan cut)");
    if (d.scan.unreadable > 0)
      AppendFormat(buf, n, &at, " (%u processes unreadable)", d.scan.unreadable);
  }
  return at;
}

}  // namespace hangwatch::cause
