#include "hang/open_hang/open_hang_cause.h"

#include <unistd.h>

#include <cstring>
#include <type_traits>

#include "hang/open_hang/open_hang_region.h"
#include "report/cause_kinds.h"

namespace hangwatch::agent {
namespace {

static_assert(std::is_trivially_copyable_v<WaitCause>);

constexpr size_t kCopyBytes = open_hang_region::CopyBytes(sizeof(WaitCause));

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
  open_hang_region::WriteCopy(region, generation, &cause, sizeof(WaitCause));
}

bool ReadOpenHangCause(int fd, uint64_t offset, WaitCause* out) {
  *out = WaitCause{};
  if (!open_hang_region::ReadNewest(fd, offset, out, sizeof(WaitCause))) return false;
  Sanitize(out);
  return true;
}

}  // namespace hangwatch::agent
