// DisplayInput: whether input waits, unread, on this process's display connection, so that a
// hang can say whether a person was kept waiting. Looked at from the watchdog thread (not a
// signal handler) while a pass is stuck: it never calls Xlib or xcb, never allocates after its
// constructor and never consumes a byte (a peek, MSG_PEEK, with no control buffer).
//
// Finding the connection: among this process's descriptors (/proc/self/fd, read with
// getdents64 into a fixed buffer), the lowest-numbered connected AF_UNIX stream socket whose
// peer (getpeername) is an X server, "/tmp/.X11-unix/X<n>" (a path, or the abstract name
// Xlib/xcb use first on Linux), or a Wayland compositor: a socket named "wayland-<n>", or
// $XDG_RUNTIME_DIR/$WAYLAND_DISPLAY (read once, by the constructor). A socket merely under
// $XDG_RUNTIME_DIR is not taken: D-Bus, PulseAudio and PipeWire live there too. Not found: an
// X server reached over TCP (ssh's X forwarding) or a Wayland socket handed over as
// WAYLAND_SOCKET; an adapter that knows its connection says so with set_display_fd(). The
// connection found is kept (its st_dev/st_ino) and found again once it is closed or its number
// names another file; while none is found, /proc/self/fd is read at most once a second.
//
// One look (Look()): FIONREAD for the bytes waiting, then, on X11, a peek of at most
// kPeekBytes read by x11_event_scan.h (input events, their kinds and the oldest one's age, a
// window manager's ping). On Wayland only the byte count is known (the wire has no type codes
// without the client's object map): any bytes make `pending` true with no events and no kinds,
// and `lower_bound`, since input cannot be told from other messages there (JudgePerceived,
// perceived.h, then says "unknown").
#ifndef HANGWATCH_AGENT_CONTEXT_DISPLAY_INPUT_H_
#define HANGWATCH_AGENT_CONTEXT_DISPLAY_INPUT_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "agent/context/perceived.h"  // JudgePerceived, the rule over a look
#include "hang/model/hang_context.h"

namespace hangwatch::agent {

enum class DisplayProtocol : uint8_t { kNone = 0, kX11 = 1, kWayland = 2 };

// What the peer address of a connected AF_UNIX socket names (getpeername's `path`, `length`
// bytes, the abstract namespace's leading NUL included): kNone when it is no display server.
// `wayland_socket` is $XDG_RUNTIME_DIR/$WAYLAND_DISPLAY, or empty.
DisplayProtocol ProtocolOfPeer(const char* path, size_t length, const char* wayland_socket);

class DisplayInput {
 public:
  static constexpr size_t kPeekBytes = 8192;
  static constexpr uint64_t kRescanIntervalNs = 1'000'000'000;

  DisplayInput();
  ~DisplayInput();
  DisplayInput(const DisplayInput&) = delete;
  DisplayInput& operator=(const DisplayInput&) = delete;

  // A hint from whoever knows the connection (an adapter, a test): `fd` is taken as the
  // display connection at the next look, for as long as it names the same socket. -1 clears
  // it. Any thread.
  void set_display_fd(int fd, DisplayProtocol protocol = DisplayProtocol::kX11);

  // One look at the connection, `now_ns` being CLOCK_MONOTONIC now. False (out->known false)
  // when there is no display connection. Watchdog thread only.
  bool Look(uint64_t now_ns, InputSnapshot* out);

  // The connection of the last look, -1 when none.
  int display_fd() const { return fd_; }
  bool is_x11() const { return protocol_ == DisplayProtocol::kX11; }
  // How many times /proc/self/fd was read (tests: the once-a-second bound).
  uint32_t scans() const { return scans_; }

 private:
  static constexpr size_t kDirentBytes = 4096;
  static constexpr size_t kPathBytes = 108;  // sockaddr_un's sun_path

  bool FindConnection(uint64_t now_ns);
  bool Adopt(int fd, DisplayProtocol protocol);
  bool StillSameSocket() const;
  void Forget();
  void ScanDescriptors();
  DisplayProtocol Classify(int fd) const;

  std::unique_ptr<uint8_t[]> peek_;
  std::unique_ptr<uint8_t[]> dirents_;
  char wayland_socket_[kPathBytes] = {};

  int fd_ = -1;
  DisplayProtocol protocol_ = DisplayProtocol::kNone;
  bool can_peek_ = false;  // false when the socket has SO_PEEK_OFF set (a peek would move it)
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t next_scan_ns_ = 0;
  uint32_t scans_ = 0;

  // The hint: fd (bits 0-31), protocol (32-39), a generation (40-63) so that the same number
  // given again is taken again; 0 when none. hint_taken_ is the word last acted on.
  std::atomic<uint64_t> hint_{0};
  std::atomic<uint32_t> hint_generation_{0};
  uint64_t hint_taken_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CONTEXT_DISPLAY_INPUT_H_
