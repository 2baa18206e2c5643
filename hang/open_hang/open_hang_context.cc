#include "hang/open_hang/open_hang_context.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hang/open_hang/open_hang_region.h"

namespace hangwatch::agent {
namespace {

static_assert(std::is_trivially_copyable_v<HangContext> && std::is_standard_layout_v<HangContext>);
// Sanitize() checks every field of this HangContext: a field added to it must be checked there
// (a flag listed in kFlagOffsets, a count clamped, a string terminated) before this size changes.
static_assert(sizeof(HangContext) == 896, "a new HangContext field: check it in Sanitize()");

constexpr size_t kCopyBytes = open_hang_region::CopyBytes(sizeof(HangContext));

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
  if (c.queued_ms < -1) c.queued_ms = -1;
}

}  // namespace

size_t OpenHangContextBytes() { return 2 * kCopyBytes; }

void WriteOpenHangContext(unsigned char* region, uint64_t generation, const HangContext& context) {
  open_hang_region::WriteCopy(region, generation, &context, sizeof(HangContext));
}

bool ReadOpenHangContext(int fd, uint64_t offset, HangContext* out) {
  *out = HangContext{};
  // As bytes first: a flag byte read from a file may hold any value, which a bool may not.
  unsigned char newest[sizeof(HangContext)];
  if (!open_hang_region::ReadNewest(fd, offset, newest, sizeof(HangContext))) return false;
  Sanitize(newest, out);
  return true;
}

}  // namespace hangwatch::agent
