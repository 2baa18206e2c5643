// The kernel's socket tables through the NETLINK_SOCK_DIAG interface (what `ss` reads): a Unix
// socket's bound path and its peer's inode by the socket's inode, a TCP/UDP socket's addresses
// by its inode (a dump, bounded) and the socket at the other end of a connection (an exact
// lookup: the established peer, else the listener on that address).
//
// Each call opens its own netlink socket (a descriptor kept between calls could be closed by
// the application and its number reused) with a receive timeout, so a call never blocks for
// long. Sockets of another network namespace are not visible. Allocation-free: the caller
// provides the receive buffer. Linux only; not for a signal handler.
#ifndef HANGWATCH_CAUSE_SOCK_DIAG_H_
#define HANGWATCH_CAUSE_SOCK_DIAG_H_

#include <cstddef>
#include <cstdint>

#include "cause/scan_budget.h"

namespace hangwatch::cause {

// What sock_diag says about a Unix socket.
struct UnixSocketInfo {
  uint64_t inode = 0;
  uint64_t peer_inode = 0;  // the connected peer's inode; 0 when not connected
  uint8_t type = 0;         // SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET
  uint8_t state = 0;        // TCP_ESTABLISHED, TCP_LISTEN... (the kernel reuses TCP's numbers)
  char path[108] = {};      // the bound name; an abstract name starts with '@'; "" when unbound
};

// An address and port (host order), IPv4 or IPv6.
struct InetEndpoint {
  uint8_t family = 0;     // AF_INET or AF_INET6; 0: none
  uint8_t addr[16] = {};  // network order; IPv4 in the first 4 bytes
  uint16_t port = 0;
};

// What sock_diag says about a TCP or UDP socket.
struct InetSocketInfo {
  uint64_t inode = 0;    // 0 for a connection not yet accepted (no descriptor holds it)
  uint8_t protocol = 0;  // IPPROTO_TCP or IPPROTO_UDP
  uint8_t state = 0;     // TCP_ESTABLISHED, TCP_LISTEN... (linux/tcp.h numbering)
  InetEndpoint local;
  InetEndpoint remote;
};

// Receive buffer of one query.
struct SockDiagBuffer {
  alignas(8) char data[32768];
};

// The Unix socket with this inode. False when unknown (no such socket, another namespace,
// netlink refused).
bool QueryUnixSocket(uint64_t inode, SockDiagBuffer* buf, UnixSocketInfo* out);

// The listening Unix socket whose accept queue holds the connection of client socket
// `client_inode` (a connection not accepted yet has a peer without an inode), from a dump of
// the listeners (UDIAG_SHOW_ICONS), bounded by budget. False when none was found.
bool FindUnixListenerOf(uint64_t client_inode, const ScanBudget& budget, SockDiagBuffer* buf,
                        UnixSocketInfo* out);

// The TCP or UDP socket (`protocol`) with this inode, searched in the IPv4 then IPv6 tables,
// at most budget.max_sockets entries and budget.max_ns. False when not found; *complete is
// false when a bound stopped the search.
bool FindInetSocket(uint64_t inode, uint8_t protocol, const ScanBudget& budget, SockDiagBuffer* buf,
                    InetSocketInfo* out, bool* complete);

// The socket whose local end is `local` and remote end `remote` (a connection's other side:
// pass its remote as `local`), else the listening or unconnected socket bound to `local`.
// False when none.
bool LookupInetSocket(uint8_t protocol, const InetEndpoint& local, const InetEndpoint& remote,
                      SockDiagBuffer* buf, InetSocketInfo* out);

// True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool IsLoopback(const InetEndpoint& e);

// "127.0.0.1:5432" or "[::1]:5432" into out (NUL-terminated, cut to n). Returns out.
const char* FormatEndpoint(const InetEndpoint& e, char* out, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_SOCK_DIAG_H_
