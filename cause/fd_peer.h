// What a file descriptor of a waiting thread is, and who is at its other end: the file's path
// for a regular file or a device (cause io); for a pipe or FIFO the processes holding it (the
// writer a reader waits for); for a Unix socket its path and the process holding the peer
// socket (sock_diag's UNIX_DIAG_PEER, then /proc/*/fd); for TCP/UDP the local and remote
// address and, for a loopback peer, the process holding the other end of the connection or
// listening there (cause ipc).
//
// Runs on the watchdog thread (or in `hangwatch snapshot`), never in a signal handler. libc and
// unwind/proc_files.h only; allocation-free after the caller has allocated one FdPeerScratch;
// every /proc and netlink scan is bounded by a ScanBudget; the target's memory is never read.
// A dead process, a closed descriptor or an unreadable /proc entry gives kind kUnknown with
// the errno, never a crash. Linux only.
#ifndef HANGWATCH_CAUSE_FD_PEER_H_
#define HANGWATCH_CAUSE_FD_PEER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "cause/holder_scan.h"
#include "cause/scan_budget.h"
#include "cause/sock_diag.h"

namespace hangwatch::cause {

enum class FdKind : uint8_t {
  kUnknown,      // could not be described: see FdDescription::error
  kRegular,      // a regular file
  kDirectory,    // a directory
  kBlockDevice,  // a block device
  kCharDevice,   // a character device (a tty, /dev/null...)
  kPipe,         // an anonymous pipe
  kFifo,         // a named pipe
  kUnixSocket,   // AF_UNIX
  kTcp,          // TCP over IPv4 or IPv6
  kUdp,          // UDP over IPv4 or IPv6
  kSocket,       // another socket (netlink, packet...)
  kAnonInode,    // eventfd, timerfd, signalfd, epoll, inotify...: `path` says which
};

// "regular file", "pipe", "unix socket", "tcp"...
const char* FdKindName(FdKind kind);

// One descriptor, described.
struct FdDescription {
  int32_t pid = 0;  // the process it belongs to (as given: 0 is this process)
  int32_t fd = -1;  // the descriptor
  FdKind kind = FdKind::kUnknown;
  int error = 0;  // errno of the failed step when kind is kUnknown (ENOENT: no such process/fd)

  // The link text of /proc/PID/fd/N: a file's path ("/var/lib/app/journal", " (deleted)"
  // kept), "pipe:[INODE]", "socket:[INODE]", "anon_inode:[eventfd]"; cut to fit.
  char path[256] = {};
  uint64_t inode = 0;  // the file's inode (a pipe's or socket's is its identity)
  uint64_t dev = 0;    // st_dev of the file (block device: st_rdev)

  // Unix socket: its bound path, else its peer's (a client socket is unbound; the server end
  // carries the listener's path); '@' starts an abstract name.
  char socket_path[108] = {};
  uint64_t peer_inode = 0;  // Unix socket: the peer socket's inode, the listener's while the
                            // connection is not accepted (0: not connected/unknown)

  // TCP/UDP: the two ends, and the state (linux/tcp.h numbering: 1 established, 10 listen).
  InetEndpoint local;
  InetEndpoint remote;
  uint8_t tcp_state = 0;
  bool loopback = false;          // the remote end is on this machine (127/8, ::1)
  bool peer_is_listener = false;  // TCP/UDP/Unix: the process found listens there; the
                                  // connection is not accepted yet (its peer socket has no fd)

  // Pipe/FIFO: the other processes holding it (the waiting descriptor itself excluded; a
  // process holding both ends shows too), up to kMaxPeers. Unix socket / loopback TCP or UDP:
  // the first process found holding the peer socket, or listening (the scan stops there).
  // Empty when unknown; see `scan`.
  PeerList peers;
  ScanStats scan;  // how far the /proc scan went (complete false: a bound stopped it)
};

// What sock_diag said about the sockets described lately, by their inode: a connected socket's
// peer does not change, so the next samples of the same hang skip the netlink queries. Not
// kept while the peer is a listener (the connection is not accepted yet). Fixed size.
struct PeerIdentityCache {
  struct Entry {
    bool used = false;
    uint64_t inode = 0;  // the described socket
    uint64_t dev = 0;
    FdKind kind = FdKind::kUnknown;
    uint64_t peer_socket = 0;  // the inode whose holders are the peers
    uint64_t peer_inode = 0;   // FdDescription::peer_inode
    char socket_path[108] = {};
  };
  Entry entries[8];
  uint32_t next = 0;
};

// Memory for DescribeFd / DescribeWaitFds, allocated once (about 60 KiB); one call at a time.
// The two caches make the next samples of a hang cheap (one readlink per peer instead of a
// /proc scan); ForgetPeers clears them: call it when a hang starts.
struct FdPeerScratch {
  HolderScanBuffers holders;
  SockDiagBuffer diag;
  HolderCache cache;
  PeerIdentityCache identities;
};

// Clears the scratch's caches.
void ForgetPeers(FdPeerScratch* scratch);

// Describes descriptor `fd` of process `pid` (0: this process). Returns false (and
// out->kind kUnknown, out->error set) when /proc/PID/fd/FD cannot be read.
bool DescribeFd(pid_t pid, int fd, const ScanBudget& budget, FdPeerScratch* scratch,
                FdDescription* out);

// The same for several descriptors of one process with a single /proc scan for all their
// peers (what DescribeWaitFds uses). `out` has `count` entries, each with pid/fd to describe
// already set.
void DescribeFds(FdDescription* out, size_t count, const ScanBudget& budget,
                 FdPeerScratch* scratch);

// One line for humans, into buf (NUL-terminated, cut to n). Examples:
//   fd 5: pipe:[81234], other end held by 4321 "python3" (fd 1)
//   fd 3: unix socket /tmp/app.sock, peer 1234 "postgres" (fd 9)
//   fd 7: tcp 127.0.0.1:40312 -> 127.0.0.1:8080, peer 1234 "python3.11" (fd 4)
//   fd 4: regular file /var/lib/app/journal
//   fd 9: unknown (No such file or directory)
// Returns the length written.
size_t FormatSummary(const FdDescription& d, char* buf, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_FD_PEER_H_
