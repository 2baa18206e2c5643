// The few calls the watchdog makes on descriptors other threads own (the display connection, a
// socket found in a scan of /proc/self/fd), made as raw system calls. ThreadSanitizer's libc
// interceptors treat a descriptor as memory: an fstat() on a number another thread is creating
// or closing at that moment is reported as a data race, and a scan of every descriptor of the
// process meets such numbers by design (harmlessly: the kernel answers for whatever file the
// number names, or EBADF). Linux only, internal to agent/context/.
#ifndef HANGWATCH_AGENT_CONTEXT_RAW_FD_CALLS_H_
#define HANGWATCH_AGENT_CONTEXT_RAW_FD_CALLS_H_

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>

namespace hangwatch::agent::raw {

// The file's type bits, device and inode (statx: a layout the kernel fixes on every
// architecture); false when the number names no file.
inline bool FileIdentity(int fd, uint32_t* mode, uint64_t* dev, uint64_t* ino) {
  struct statx stx {};
  if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO, &stx) != 0) return false;
  *mode = stx.stx_mode;
  *dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  *ino = stx.stx_ino;
  return true;
}

inline bool IsSocket(int fd) {
  uint32_t mode = 0;
  uint64_t dev = 0, ino = 0;
  return FileIdentity(fd, &mode, &dev, &ino) && S_ISSOCK(mode);
}

inline int GetSockOpt(int fd, int level, int name, void* value, socklen_t* length) {
  return static_cast<int>(syscall(SYS_getsockopt, fd, level, name, value, length));
}

inline int GetPeerName(int fd, sockaddr* address, socklen_t* length) {
  return static_cast<int>(syscall(SYS_getpeername, fd, address, length));
}

inline int Ioctl(int fd, unsigned long request, int* value) {
  return static_cast<int>(syscall(SYS_ioctl, fd, request, value));
}

inline ssize_t Recv(int fd, void* buf, size_t n, int flags) {
  return static_cast<ssize_t>(syscall(SYS_recvfrom, fd, buf, n, flags, nullptr, nullptr));
}

}  // namespace hangwatch::agent::raw

#endif  // HANGWATCH_AGENT_CONTEXT_RAW_FD_CALLS_H_
