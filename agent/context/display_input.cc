// DisplayInput: finding the display connection among /proc/self/fd and peeking at it
// (display_input.h).
#include "agent/context/display_input.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "agent/context/raw_fd_calls.h"
#include "agent/context/x11_event_scan.h"

namespace hangwatch::agent {
namespace {

constexpr char kX11SocketPrefix[] = "/tmp/.X11-unix/X";
constexpr char kWaylandPrefix[] = "wayland-";

bool AllDigits(const char* s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool StartsWith(const char* s, size_t n, const char* prefix) {
  const size_t p = std::strlen(prefix);
  return n >= p && std::memcmp(s, prefix, p) == 0;
}

// getdents64's record (the kernel's struct linux_dirent64).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// A descriptor's number from its /proc/self/fd name, -1 for "." and "..".
int DescriptorNumber(const char* name) {
  int fd = 0;
  if (*name == '\0') return -1;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || fd > 100'000'000) return -1;
    fd = fd * 10 + (*c - '0');
  }
  return fd;
}

}  // namespace

DisplayProtocol ProtocolOfPeer(const char* path, size_t length, const char* wayland_socket) {
  if (length == 0) return DisplayProtocol::kNone;  // unnamed (socketpair)
  const bool abstract = path[0] == '\0';
  if (abstract) {
    ++path;
    --length;
  }
  length = strnlen(path, length);  // a path's trailing NULs
  if (StartsWith(path, length, kX11SocketPrefix)) {
    const size_t prefix = sizeof(kX11SocketPrefix) - 1;
    return AllDigits(path + prefix, length - prefix) ? DisplayProtocol::kX11
                                                     : DisplayProtocol::kNone;
  }
  if (abstract) return DisplayProtocol::kNone;
  if (wayland_socket[0] != '\0' && std::strlen(wayland_socket) == length &&
      std::memcmp(path, wayland_socket, length) == 0) {
    return DisplayProtocol::kWayland;
  }
  size_t base = length;
  while (base > 0 && path[base - 1] != '/') --base;
  const size_t prefix = sizeof(kWaylandPrefix) - 1;
  if (StartsWith(path + base, length - base, kWaylandPrefix) &&
      AllDigits(path + base + prefix, length - base - prefix)) {
    return DisplayProtocol::kWayland;
  }
  return DisplayProtocol::kNone;
}

DisplayInput::DisplayInput() : peek_(new uint8_t[kPeekBytes]), dirents_(new uint8_t[kDirentBytes]) {
  const char* display = std::getenv("WAYLAND_DISPLAY");
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (display == nullptr || display[0] == '\0') display = "wayland-0";
  const size_t display_length = std::strlen(display);
  if (display[0] == '/') {
    if (display_length < kPathBytes) std::memcpy(wayland_socket_, display, display_length + 1);
  } else if (runtime != nullptr && runtime[0] == '/') {
    const size_t runtime_length = std::strlen(runtime);
    if (runtime_length + 1 + display_length < kPathBytes) {
      std::memcpy(wayland_socket_, runtime, runtime_length);
      wayland_socket_[runtime_length] = '/';
      std::memcpy(wayland_socket_ + runtime_length + 1, display, display_length + 1);
    }
  }
}

DisplayInput::~DisplayInput() = default;

void DisplayInput::set_display_fd(int fd, DisplayProtocol protocol) {
  if (fd < 0) {
    hint_.store(0, std::memory_order_release);
    return;
  }
  const uint64_t generation = hint_generation_.fetch_add(1, std::memory_order_relaxed) + 1;
  hint_.store(uint64_t{static_cast<uint32_t>(fd)} |
                  (uint64_t{static_cast<uint8_t>(protocol)} << 32) |
                  ((generation & 0xffffffu) << 40),
              std::memory_order_release);
}

DisplayProtocol DisplayInput::Classify(int fd) const {
  if (!raw::IsSocket(fd)) return DisplayProtocol::kNone;
  int value = 0;
  socklen_t value_length = sizeof value;
  if (raw::GetSockOpt(fd, SOL_SOCKET, SO_DOMAIN, &value, &value_length) != 0 || value != AF_UNIX) {
    return DisplayProtocol::kNone;
  }
  value_length = sizeof value;
  if (raw::GetSockOpt(fd, SOL_SOCKET, SO_TYPE, &value, &value_length) != 0 ||
      value != SOCK_STREAM) {
    return DisplayProtocol::kNone;
  }
  sockaddr_un peer{};
  socklen_t peer_length = sizeof peer;
  if (raw::GetPeerName(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0 ||
      peer_length <= offsetof(sockaddr_un, sun_path) || peer_length > sizeof peer) {
    return DisplayProtocol::kNone;
  }
  return ProtocolOfPeer(peer.sun_path, peer_length - offsetof(sockaddr_un, sun_path),
                        wayland_socket_);
}

bool DisplayInput::Adopt(int fd, DisplayProtocol protocol) {
  uint32_t mode = 0;
  uint64_t dev = 0, ino = 0;
  if (protocol == DisplayProtocol::kNone || !raw::FileIdentity(fd, &mode, &dev, &ino) ||
      !S_ISSOCK(mode)) {
    return false;
  }
  int peek_offset = -1;
  socklen_t length = sizeof peek_offset;
  if (raw::GetSockOpt(fd, SOL_SOCKET, SO_PEEK_OFF, &peek_offset, &length) != 0) {
    peek_offset = -1;
  }
  fd_ = fd;
  protocol_ = protocol;
  can_peek_ = peek_offset < 0;
  dev_ = dev;
  ino_ = ino;
  return true;
}

bool DisplayInput::StillSameSocket() const {
  uint32_t mode = 0;
  uint64_t dev = 0, ino = 0;
  return raw::FileIdentity(fd_, &mode, &dev, &ino) && dev == dev_ && ino == ino_;
}

void DisplayInput::Forget() {
  fd_ = -1;
  protocol_ = DisplayProtocol::kNone;
  next_scan_ns_ = 0;  // look for it again at once
}

void DisplayInput::ScanDescriptors() {
  ++scans_;
  const int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  bool found = false;
  while (!found) {
    const long got = syscall(SYS_getdents64, dir, dirents_.get(), kDirentBytes);
    if (got <= 0) break;
    for (long offset = 0; offset < got && !found;) {
      const auto* entry = reinterpret_cast<const LinuxDirent64*>(dirents_.get() + offset);
      offset += entry->d_reclen;
      const int fd = DescriptorNumber(entry->d_name);
      if (fd < 0 || fd == dir) continue;
      found = Adopt(fd, Classify(fd));  // the lowest number first: /proc lists them in order
    }
  }
  close(dir);
}

bool DisplayInput::FindConnection(uint64_t now_ns) {
  const uint64_t hint = hint_.load(std::memory_order_acquire);
  if (hint != 0 && hint != hint_taken_) {  // a new hint
    hint_taken_ = hint;
    if (Adopt(static_cast<int>(static_cast<uint32_t>(hint)),
              static_cast<DisplayProtocol>((hint >> 32) & 0xff))) {
      return true;
    }
    Forget();
  }
  if (fd_ >= 0) {
    if (StillSameSocket()) return true;
    Forget();  // closed, or its number now names another file
  }
  if (now_ns < next_scan_ns_) return false;
  next_scan_ns_ = now_ns + kRescanIntervalNs;
  ScanDescriptors();
  return fd_ >= 0;
}

bool DisplayInput::Look(uint64_t now_ns, InputSnapshot* out) {
  *out = InputSnapshot{};
  if (!FindConnection(now_ns)) return false;
  int waiting = 0;
  if (raw::Ioctl(fd_, FIONREAD, &waiting) != 0 || waiting < 0) {
    Forget();
    return false;
  }
  out->known = true;
  out->bytes = static_cast<uint32_t>(waiting);
  if (waiting == 0) return true;
  if (protocol_ != DisplayProtocol::kX11 || !can_peek_) {
    out->pending = true;  // something waits; what, is not known
    out->lower_bound = true;
    return true;
  }
  const size_t want = static_cast<size_t>(waiting) < kPeekBytes ? waiting : kPeekBytes;
  const ssize_t peeked = raw::Recv(fd_, peek_.get(), want, MSG_PEEK | MSG_DONTWAIT);
  if (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    Forget();
    *out = InputSnapshot{};
    return false;
  }
  if (peeked <= 0) {
    // Read meanwhile by the program (EAGAIN), or the server hung up (0).
    out->bytes = 0;
    return true;
  }
  const size_t available =
      static_cast<size_t>(peeked) > static_cast<size_t>(waiting) ? peeked : waiting;
  ScanX11Stream(peek_.get(), static_cast<size_t>(peeked), available,
                static_cast<uint32_t>(now_ns / 1'000'000), out);
  return true;
}

}  // namespace hangwatch::agent
