// HotSpot's attach protocol, client side (attach_client.h).
#include "jvm/attach_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hangwatch::jvm {
namespace {

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Milliseconds left before `deadline` (0 when past), for poll.
int MsLeft(uint64_t deadline) {
  const uint64_t now = NowNs();
  if (now >= deadline) return 0;
  return static_cast<int>(std::min<uint64_t>((deadline - now + 999999) / 1000000, 1 << 30));
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The JVM dropped the connection (before or after reading the request) without a status.
constexpr char kClosedWithoutAnswer[] =
    "the JVM closed the connection without an answer (its attach listener answers only its own "
    "user and root; in a user namespace, root outside is neither)";

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Whether a socket of the JVM's attach listener is at `path` (as jcmd checks it: owned by the
// JVM's user, no access for others).
enum class SocketState { kMissing, kOk, kForeign };
SocketState CheckSocket(const std::string& path, const JvmProcessFacts& facts, std::string* why,
                        ino_t* inode = nullptr) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return SocketState::kMissing;
  if (inode != nullptr) *inode = st.st_ino;
  if (!S_ISSOCK(st.st_mode)) {
    *why = path + " is not a socket";
    return SocketState::kForeign;
  }
  if (st.st_uid != facts.uid || (st.st_mode & 077) != 0) {
    *why = path + " is not the JVM's own socket (owner uid " + std::to_string(st.st_uid) +
           ", mode " + std::to_string(st.st_mode & 0777) + "): not used";
    return SocketState::kForeign;
  }
  return SocketState::kOk;
}

// The trigger file, created in the JVM's working directory, else its /tmp. Returns the path
// created ("" when none could be) and whether it was created by us.
std::string CreateTrigger(const JvmProcessFacts& facts, bool* ours, std::string* why) {
  const std::string name = "/.attach_pid" + std::to_string(facts.ns_pid);
  const std::string proc = "/proc/" + std::to_string(facts.pid);
  for (const std::string& dir : {proc + "/cwd", proc + "/root/tmp"}) {
    const std::string path = dir + name;
    const int fd =
        open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd >= 0) {
      // HotSpot accepts a trigger file of its own user or root's; a root client makes it the
      // JVM's anyway, so that it is never a file only root may remove.
      if (geteuid() == 0 && facts.uid != 0 && fchown(fd, facts.uid, facts.gid) != 0) {
        // Root's file is still accepted.
      }
      close(fd);
      *ours = true;
      return path;
    }
    if (errno == EEXIST) {
      struct stat st {};
      if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        *ours = false;  // another client's attach in progress: use it, leave it
        return path;
      }
    }
    *why = Errno(("cannot create " + path).c_str());
  }
  return "";
}

// Whether the process listening on connected socket `fd` is the JVM itself: the socket file's
// owner was checked before connecting, but the path is looked up again by connect(), and a
// listener of the JVM's user that is not the JVM would be handed the request and trusted.
bool PeerIsJvm(int fd, const JvmProcessFacts& facts, const std::string& path, std::string* why) {
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
    *why = Errno(("cannot check who listens on " + path).c_str());
    return false;
  }
  if (peer.pid == facts.pid && peer.uid == facts.uid) return true;
  *why = path + " is served by process " + std::to_string(peer.pid) + " (uid " +
         std::to_string(peer.uid) + "), not the JVM: not used";
  return false;
}

// Connects a stream socket to `path` before `deadline`; -1 with *why on failure (*refused: no
// one listens there; *foreign: someone other than the JVM does).
int Connect(const std::string& path, const JvmProcessFacts& facts, uint64_t deadline,
            std::string* why, bool* timed_out, bool* refused, bool* foreign) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *why = path + ": path too long for a socket";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  for (;;) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *why = Errno("socket");
      return -1;
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      if (PeerIsJvm(fd, facts, path, why)) return fd;
      close(fd);
      *foreign = true;
      return -1;
    }
    const int err = errno;
    close(fd);
    // A full backlog: the listener is busy with another client.
    if (err == EAGAIN && MsLeft(deadline) > 0) {
      SleepMs(std::min(5, MsLeft(deadline)));
      continue;
    }
    if (err == EAGAIN) *timed_out = true;
    *refused = err == ECONNREFUSED;
    errno = err;
    *why = Errno(("cannot connect to " + path).c_str());
    return -1;
  }
}

// Writes all of `data` before `deadline`.
bool WriteAll(int fd, const std::string& data, uint64_t deadline) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    pollfd p{fd, POLLOUT, 0};
    const int left = MsLeft(deadline);
    if (left == 0 || poll(&p, 1, left) <= 0) {
      errno = ETIMEDOUT;
      return false;
    }
  }
  return true;
}

}  // namespace

const char* AttachStatusName(AttachStatus s) {
  switch (s) {
    case AttachStatus::kOk:
      return "ok";
    case AttachStatus::kRefused:
      return "refused";
    case AttachStatus::kTimeout:
      return "timeout";
    case AttachStatus::kFailed:
      return "failed";
    case AttachStatus::kError:
      break;
  }
  return "error";
}

std::string AttachSocketPath(const JvmProcessFacts& facts) {
  return "/proc/" + std::to_string(facts.pid) + "/root/tmp/.java_pid" +
         std::to_string(facts.ns_pid);
}

std::string WhyNoSignal(const JvmProcessFacts& facts) {
  if (!facts.catches_sigquit) {
    return "the JVM does not handle SIGQUIT (run with -Xrs?): no signal sent, it would end the "
           "process";
  }
  if (facts.attach_disabled) {
    return "the JVM's attach mechanism is off (-XX:+DisableAttachMechanism in " +
           facts.attach_disabled_in +
           "): no signal sent, it would print a thread dump into "
           "the program's output";
  }
  if (!facts.environ_readable) {
    return "cannot read the JVM's environment (its option variables may disable attaching): "
           "no signal sent";
  }
  if (facts.state == 'T' || facts.state == 't') {
    return "the JVM is stopped (state " + std::string(1, facts.state) +
           "): it cannot start its attach listener; no signal sent";
  }
  return "";
}

AttachReply RunAttachCommand(pid_t pid, const std::string& command,
                             const std::vector<std::string>& args, const AttachOptions& options) {
  JvmProcessFacts facts;
  AttachReply reply;
  if (!ReadJvmProcessFacts(pid, &facts, &reply.why)) {
    reply.status = AttachStatus::kError;
    return reply;
  }
  return RunAttachCommandWith(facts, command, args, options);
}

AttachReply RunAttachCommandWith(const JvmProcessFacts& facts, const std::string& command,
                                 const std::vector<std::string>& args,
                                 const AttachOptions& options) {
  AttachReply reply;
  const uint64_t start = NowNs();
  const uint64_t deadline = start + static_cast<uint64_t>(options.timeout_ms) * 1000000u;
  const auto finish = [&](AttachStatus status, std::string why) {
    reply.status = status;
    reply.why = std::move(why);
    reply.total_ns = NowNs() - start;
    return reply;
  };
  if (args.size() > 3) return finish(AttachStatus::kError, "at most three arguments");
  const std::string socket_path = AttachSocketPath(facts);
  std::string why;
  ino_t stale = 0;  // the inode of a socket no one listens on (an earlier process's, same pid)
  SocketState socket = CheckSocket(socket_path, facts, &why, &stale);
  if (socket == SocketState::kForeign) return finish(AttachStatus::kRefused, why);
  int fd = -1;
  bool timed_out = false;
  bool refused = false;
  bool foreign = false;
  if (socket == SocketState::kOk) {
    fd = Connect(socket_path, facts, deadline, &why, &timed_out, &refused, &foreign);
    if (foreign) return finish(AttachStatus::kRefused, why);
    if (fd < 0 && !refused) {
      return finish(timed_out ? AttachStatus::kTimeout : AttachStatus::kError, why);
    }
  }
  if (fd < 0) {
    // No socket, or a stale one: the handshake, then a socket of another inode (the JVM binds
    // its listener under another name and renames it over the path).
    const std::string no = WhyNoSignal(facts);
    if (!no.empty()) return finish(AttachStatus::kRefused, no);
    bool ours = false;
    const std::string trigger = CreateTrigger(facts, &ours, &why);
    if (trigger.empty()) return finish(AttachStatus::kError, why);
    if (kill(facts.pid, SIGQUIT) != 0) {
      const std::string err = Errno("cannot signal the JVM");
      if (ours) unlink(trigger.c_str());
      return finish(AttachStatus::kError, err);
    }
    reply.signalled = true;
    // The listener starts on the JVM's signal thread: poll for its socket, more often first.
    const auto pending = [&] {
      ino_t inode = 0;
      socket = CheckSocket(socket_path, facts, &why, &inode);
      return socket == SocketState::kMissing || (socket == SocketState::kOk && inode == stale);
    };
    int pause_ms = 1;
    bool waiting = true;
    while ((waiting = pending()) && MsLeft(deadline) > 0) {
      SleepMs(std::min(pause_ms, MsLeft(deadline)));
      pause_ms = std::min(pause_ms * 2, 20);
    }
    if (ours) unlink(trigger.c_str());
    if (socket == SocketState::kForeign) return finish(AttachStatus::kRefused, why);
    if (waiting) {
      return finish(AttachStatus::kTimeout, "the JVM did not start its attach listener within " +
                                                std::to_string(options.timeout_ms) +
                                                " ms of SIGQUIT");
    }
    fd = Connect(socket_path, facts, deadline, &why, &timed_out, &refused, &foreign);
    if (foreign) return finish(AttachStatus::kRefused, why);
    if (fd < 0) return finish(timed_out ? AttachStatus::kTimeout : AttachStatus::kError, why);
  }
  reply.handshake_ns = NowNs() - start;
  std::string request("1", 2);  // protocol version 1, NUL-terminated
  request += command;
  request.push_back('\0');
  for (size_t i = 0; i < 3; ++i) {
    if (i < args.size()) request += args[i];
    request.push_back('\0');
  }
  if (!WriteAll(fd, request, deadline)) {
    if (errno == EPIPE || errno == ECONNRESET) {
      close(fd);
      return finish(AttachStatus::kError, kClosedWithoutAnswer);
    }
    const bool late = errno == ETIMEDOUT;
    const std::string err = Errno("cannot send the request");
    close(fd);
    return finish(late ? AttachStatus::kTimeout : AttachStatus::kError, err);
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      const size_t keep = std::min(static_cast<size_t>(n),
                                   options.max_reply - std::min(options.max_reply, text.size()));
      text.append(buf, keep);
      reply.truncated |= keep < static_cast<size_t>(n);
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) break;  // closed with the request unread: a refusal, below
    if (errno != EAGAIN) {
      const std::string err = Errno("reading the JVM's reply");
      close(fd);
      return finish(AttachStatus::kError, err);
    }
    pollfd p{fd, POLLIN, 0};
    const int left = MsLeft(deadline);
    if (left == 0 || poll(&p, 1, left) <= 0) {
      close(fd);
      return finish(AttachStatus::kTimeout, std::string("the JVM did not answer within ") +
                                                std::to_string(options.timeout_ms) +
                                                " ms (a thread dump waits for a safepoint)" +
                                                (text.empty() ? "" : "; its reply was cut short"));
    }
  }
  close(fd);
  // "0\n" then the output; another number then the JVM's message.
  if (text.empty()) return finish(AttachStatus::kError, kClosedWithoutAnswer);
  const size_t eol = text.find('\n');
  const std::string code = text.substr(0, eol);
  if (code.empty() || code.size() > 10 ||
      code.find_first_not_of("-0123456789") != std::string::npos) {
    return finish(AttachStatus::kError, "the JVM's reply does not start with a status");
  }
  reply.text = eol == std::string::npos ? "" : text.substr(eol + 1);
  if (code != "0") {
    std::string message = reply.text.substr(0, reply.text.find('\n'));
    reply.text.clear();
    return finish(AttachStatus::kFailed, "the JVM refused the command (status " + code +
                                             (message.empty() ? "" : ": " + message) + ")");
  }
  return finish(AttachStatus::kOk, "");
}

}  // namespace hangwatch::jvm
