#include "hang/open_hang/open_hang_cause.h"

#include <unistd.h>

#include <cstring>
#include <type_traits>

#include "hang/open_hang/open_hang_layout.h"
#include "report/cause_kinds.h"

namespace hangwatch::agent {
namespace {

static_assert(std::is_trivially_copyable_v<WaitCause>);

// One copy: generation, size of the WaitCause, the WaitCause, a checksum of all before it.
constexpr size_t kHead = 16;
constexpr size_t kCopyBytes = (kHead + sizeof(WaitCause) + sizeof(uint64_t) + 7) & ~size_t{7};

using open_hang_layout::Checksum;  // the file's one checksum

template <size_t N>
void Terminate(char (&s)[N]) {
  s[N - 1] = '\0';
}

FrameMethod SafeMethod(FrameMethod m) {
  return static_cast<uint8_t>(m) <= static_cast<uint8_t>(FrameMethod::kFramePointerScan)
             ? m
             : FrameMethod::kUnknown;
}

// Every count and string of a cause read from a file, made safe to use.
void Sanitize(WaitCause* c) {
  if (!report::IsKnownCauseKind(static_cast<uint8_t>(c->kind))) {
    *c = WaitCause{};
    return;
  }
  if (c->num_threads > kCauseMaxThreads) c->num_threads = kCauseMaxThreads;
  if (c->cycle_from >= static_cast<int8_t>(c->num_threads)) c->cycle_from = -1;
  if (c->cycle_from < -1) c->cycle_from = -1;
  if (c->num_fds > kCauseMaxFds) c->num_fds = kCauseMaxFds;
  if (c->num_peers > kCauseMaxPeers) c->num_peers = kCauseMaxPeers;
  Terminate(c->main_name);
  Terminate(c->call.text);
  Terminate(c->child.name);
  Terminate(c->path);
  Terminate(c->wchan);
  Terminate(c->mapping);
  Terminate(c->local_address);
  Terminate(c->remote_address);
  Terminate(c->pressure_resource);
  for (WaitProcess& p : c->peers) Terminate(p.name);
  for (WaitThread& t : c->threads) {
    Terminate(t.name);
    Terminate(t.call.text);
    if (t.num_frames > kCauseMaxFrames) t.num_frames = kCauseMaxFrames;
    for (FrameMethod& m : t.methods) m = SafeMethod(m);
  }
}

}  // namespace

size_t OpenHangCauseBytes() { return 2 * kCopyBytes; }

void WriteOpenHangCause(unsigned char* region, uint64_t generation, const WaitCause& cause) {
  unsigned char* p = region + (generation % 2) * kCopyBytes;
  const uint32_t size = sizeof(WaitCause);
  std::memset(p, 0, kHead);
  std::memcpy(p, &generation, sizeof(generation));
  std::memcpy(p + 8, &size, sizeof(size));
  std::memcpy(p + kHead, &cause, sizeof(cause));
  const uint64_t sum = Checksum(p, kHead + sizeof(WaitCause));
  std::memcpy(p + kHead + sizeof(WaitCause), &sum, sizeof(sum));
}

bool ReadOpenHangCause(int fd, uint64_t offset, WaitCause* out) {
  *out = WaitCause{};
  bool found = false;
  uint64_t best = 0;
  unsigned char buf[kCopyBytes];
  for (int copy = 0; copy < 2; ++copy) {
    const off_t at = static_cast<off_t>(offset + static_cast<uint64_t>(copy) * kCopyBytes);
    if (pread(fd, buf, sizeof(buf), at) != static_cast<ssize_t>(sizeof(buf))) continue;
    uint64_t generation = 0, sum = 0;
    uint32_t size = 0;
    std::memcpy(&generation, buf, sizeof(generation));
    std::memcpy(&size, buf + 8, sizeof(size));
    std::memcpy(&sum, buf + kHead + sizeof(WaitCause), sizeof(sum));
    if (size != sizeof(WaitCause) || sum != Checksum(buf, kHead + sizeof(WaitCause))) continue;
    if (found && generation <= best) continue;
    std::memcpy(out, buf + kHead, sizeof(WaitCause));
    best = generation;
    found = true;
  }
  if (found) Sanitize(out);
  return found;
}

}  // namespace hangwatch::agent
