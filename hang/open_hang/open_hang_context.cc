#include "hang/open_hang/open_hang_context.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hang/open_hang/open_hang_layout.h"

namespace hangwatch::agent {
namespace {

static_assert(std::is_trivially_copyable_v<HangContext> && std::is_standard_layout_v<HangContext>);
// Sanitize() checks every field of this HangContext: a field added to it must be checked there
// (a flag listed in kFlagOffsets, a count clamped, a string terminated) before this size changes.
static_assert(sizeof(HangContext) == 888, "a new HangContext field: check it in Sanitize()");

// One copy: generation, size of the HangContext, the HangContext, a checksum of all before it.
constexpr size_t kHead = 16;
constexpr size_t kCopyBytes = (kHead + sizeof(HangContext) + sizeof(uint64_t) + 7) & ~size_t{7};

using open_hang_layout::Checksum;  // the file's one checksum

// Where the HangContext's flags sit in its bytes: any byte but 0 or 1 there is not a bool, and
// is made one before the bytes become a HangContext.
constexpr size_t kInput = offsetof(HangContext, input);
constexpr size_t kFlagOffsets[] = {
    offsetof(HangContext, has_trigger),
    offsetof(HangContext, perceived_known),
    offsetof(HangContext, perceived),
    offsetof(HangContext, not_responding),
    kInput + offsetof(InputSnapshot, known),
    kInput + offsetof(InputSnapshot, pending),
    kInput + offsetof(InputSnapshot, lower_bound),
    kInput + offsetof(InputSnapshot, oldest_known),
    kInput + offsetof(InputSnapshot, ping),
    kInput + offsetof(InputSnapshot, ping_age_known),
};
static_assert(sizeof(bool) == 1);

constexpr uint32_t kAllInputKinds =
    kInputKey | kInputButton | kInputMotion | kInputTouch | kInputPing | kInputOther;

template <size_t N>
void Terminate(char (&s)[N]) {
  s[N - 1] = '\0';
}

// The bytes of a context read from a file (sizeof(HangContext) of them) as a HangContext safe
// to use.
void Sanitize(unsigned char* bytes, HangContext* out) {
  for (const size_t at : kFlagOffsets) bytes[at] = bytes[at] != 0 ? 1 : 0;
  std::memcpy(out, bytes, sizeof(HangContext));
  HangContext& c = *out;
  c.label_count = std::min<uint32_t>(c.label_count, internal::kMaxLabelDepth);
  c.label_depth = std::max(c.label_depth, c.label_count);  // it counts the labels kept too
  for (auto& label : c.labels) Terminate(label);
  if (c.trigger_kind > internal::kTriggerInterrupted) c.trigger_kind = internal::kTriggerNone;
  Terminate(c.trigger_name);
  Terminate(c.peer);
  Terminate(c.peer_process);
  Terminate(c.source);
  c.input.kinds &= kAllInputKinds;
}

}  // namespace

size_t OpenHangContextBytes() { return 2 * kCopyBytes; }

void WriteOpenHangContext(unsigned char* region, uint64_t generation, const HangContext& context) {
  unsigned char* p = region + (generation % 2) * kCopyBytes;
  const uint32_t size = sizeof(HangContext);
  std::memset(p, 0, kHead);
  std::memcpy(p, &generation, sizeof(generation));
  std::memcpy(p + 8, &size, sizeof(size));
  std::memcpy(p + kHead, &context, sizeof(context));
  const uint64_t sum = Checksum(p, kHead + sizeof(HangContext));
  std::memcpy(p + kHead + sizeof(HangContext), &sum, sizeof(sum));
}

bool ReadOpenHangContext(int fd, uint64_t offset, HangContext* out) {
  *out = HangContext{};
  bool found = false;
  uint64_t best = 0;
  unsigned char buf[kCopyBytes];
  unsigned char newest[sizeof(HangContext)];
  for (int copy = 0; copy < 2; ++copy) {
    const off_t at = static_cast<off_t>(offset + static_cast<uint64_t>(copy) * kCopyBytes);
    if (pread(fd, buf, sizeof(buf), at) != static_cast<ssize_t>(sizeof(buf))) continue;
    uint64_t generation = 0, sum = 0;
    uint32_t size = 0;
    std::memcpy(&generation, buf, sizeof(generation));
    std::memcpy(&size, buf + 8, sizeof(size));
    std::memcpy(&sum, buf + kHead + sizeof(HangContext), sizeof(sum));
    if (size != sizeof(HangContext) || sum != Checksum(buf, kHead + sizeof(HangContext))) continue;
    if (found && generation <= best) continue;
    std::memcpy(newest, buf + kHead, sizeof(HangContext));
    best = generation;
    found = true;
  }
  if (found) Sanitize(newest, out);
  return found;
}

}  // namespace hangwatch::agent
