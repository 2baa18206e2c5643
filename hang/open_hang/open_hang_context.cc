#include "hang/open_hang/open_hang_context.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "hang/open_hang/open_hang_region.h"

namespace hangwatch::agent {
namespace {

static_assert(std::is_trivially_copyable_v<HangContext> && std::is_standard_layout_v<HangContext>);
// Sanitize() checks every field of this HangContext: a field added to it must be checked there
// (a flag listed in kFlagOffsets, a count clamped, a string terminated) before this size changes.
static_assert(sizeof(HangContext) == 1048, "a new HangContext field: check it in Sanitize()");
// Format 8's copies are the fields before the source's run (the run appended in format 9).
static_assert(offsetof(HangContext, source_samples) == kOpenHangContextFormat8Bytes,
              "format 8's HangContext is this one's first bytes");

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
  Terminate(c.run_source);
  c.input.kinds &= kAllInputKinds;
  if (c.queued_ms < -1) c.queued_ms = -1;
  if (c.run_queued_ms < -1) c.run_queued_ms = -1;
}

}  // namespace

size_t OpenHangContextPayload(uint32_t version) {
  return version >= 9 ? sizeof(HangContext) : kOpenHangContextFormat8Bytes;
}

size_t OpenHangContextBytes(uint32_t version) {
  return 2 * open_hang_region::CopyBytes(OpenHangContextPayload(version));
}

void WriteOpenHangContext(unsigned char* region, uint64_t generation, const HangContext& context,
                          uint32_t version) {
  open_hang_region::WriteCopy(region, generation, &context,
                              static_cast<uint32_t>(OpenHangContextPayload(version)));
}

bool ReadOpenHangContext(int fd, uint64_t offset, uint32_t version, HangContext* out) {
  *out = HangContext{};
  // As bytes first: a flag byte read from a file may hold any value, which a bool may not. A
  // format 8 copy fills the first bytes; the run after them stays empty.
  unsigned char newest[sizeof(HangContext)];
  std::memcpy(newest, out, sizeof newest);
  if (!open_hang_region::ReadNewest(fd, offset, newest,
                                    static_cast<uint32_t>(OpenHangContextPayload(version)))) {
    return false;
  }
  Sanitize(newest, out);
  return true;
}

}  // namespace hangwatch::agent
