// The X11 server-to-client stream read as x11_event_scan.h says.
#include "agent/context/x11_event_scan.h"

#include <cstring>

namespace hangwatch::agent {
namespace {

constexpr size_t kUnitBytes = 32;

// Message codes (byte 0; events with bit 0x80 set came from SendEvent).
constexpr uint8_t kError = 0;
constexpr uint8_t kReply = 1;
constexpr uint8_t kSentBit = 0x80;
constexpr uint8_t kKeyPress = 2;
constexpr uint8_t kKeyRelease = 3;
constexpr uint8_t kButtonPress = 4;
constexpr uint8_t kButtonRelease = 5;
constexpr uint8_t kMotionNotify = 6;
constexpr uint8_t kKeymapNotify = 11;  // the one event without a sequence number
constexpr uint8_t kClientMessage = 33;
constexpr uint8_t kLastCoreEvent = 34;  // MappingNotify
constexpr uint8_t kGenericEvent = 35;
constexpr uint8_t kFirstExtensionEvent = 64;

// XInput2 event types (GenericEvent's evtype at offset 8).
constexpr uint16_t kXiKeyPress = 2;
constexpr uint16_t kXiKeyRelease = 3;
constexpr uint16_t kXiButtonPress = 4;
constexpr uint16_t kXiButtonRelease = 5;
constexpr uint16_t kXiMotion = 6;
constexpr uint16_t kXiTouchBegin = 18;
constexpr uint16_t kXiTouchEnd = 20;
constexpr uint16_t kXiGestureFirst = 27;  // GesturePinchBegin
constexpr uint16_t kXiGestureLast = 32;   // GestureSwipeEnd
// An XInput2 device event: 80 bytes before its button mask (buttons_len words, at offset 48)
// and valuator mask (valuators_len words, at 50).
constexpr uint32_t kXiDeviceEventWords = (80 - kUnitBytes) / 4;

// Lengths beyond these are not a message's start.
constexpr uint32_t kMaxReplyWords = 1u << 24;  // 64 MiB (a whole-screen GetImage fits)
constexpr uint32_t kMaxGenericWords = 4096;
// Consecutive messages' sequence numbers (mod 2^16) never go back, and a client that stopped
// reading sent few requests between two of them: a larger step is a misreading.
constexpr uint16_t kMaxSequenceStep = 0x4000;

uint16_t Card16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint32_t Card32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The size of the message whose first 32 bytes are at `p`, 0 when they are not a message's.
size_t MessageSize(const uint8_t* p) {
  const uint8_t code = p[0];
  if (code == kError) return kUnitBytes;
  if (code == kReply) {
    const uint32_t words = Card32(p + 4);
    return words > kMaxReplyWords ? 0 : kUnitBytes + size_t{4} * words;
  }
  const uint8_t type = static_cast<uint8_t>(code & ~kSentBit);
  if (type == kGenericEvent) {
    const uint32_t words = Card32(p + 4);
    return words > kMaxGenericWords ? 0 : kUnitBytes + size_t{4} * words;
  }
  if (type >= kKeyPress && type <= kMotionNotify) {
    return p[30] <= 1 ? kUnitBytes : 0;  // same-screen, a BOOL
  }
  if (type == kClientMessage) {
    return (p[1] == 8 || p[1] == 16 || p[1] == 32) ? kUnitBytes : 0;  // format
  }
  if (type > kKeyPress && type <= kLastCoreEvent) return kUnitBytes;
  if (type >= kFirstExtensionEvent) return kUnitBytes;
  return 0;
}

uint8_t EventType(const uint8_t* p) { return static_cast<uint8_t>(p[0] & ~kSentBit); }

bool HasSequence(const uint8_t* p) { return EventType(p) != kKeymapNotify; }

// One input event (or ping) found: counted into `out`.
void CountInput(uint32_t kind, uint32_t server_ms, uint32_t now_ms, InputSnapshot* out) {
  ++out->events;
  out->kinds |= kind;
  uint32_t age = 0;
  if (ServerTimeAge(server_ms, now_ms, &age)) {
    if (!out->oldest_known || age > out->oldest_ms) out->oldest_ms = age;
    out->oldest_known = true;
  }
}

uint32_t CoreInputKind(uint8_t type) {
  switch (type) {
    case kKeyPress:
    case kKeyRelease:
      return kInputKey;
    case kButtonPress:
    case kButtonRelease:
      return kInputButton;
    case kMotionNotify:
      return kInputMotion;
    default:
      return 0;
  }
}

// An XInput2 event's kind, 0 when it is not input addressed to a window (or not XInput2's).
uint32_t XiInputKind(const uint8_t* p, size_t size) {
  const uint16_t evtype = Card16(p + 8);
  uint32_t kind = 0;
  if (evtype == kXiKeyPress || evtype == kXiKeyRelease) {
    kind = kInputKey;
  } else if (evtype == kXiButtonPress || evtype == kXiButtonRelease) {
    kind = kInputButton;
  } else if (evtype == kXiMotion) {
    kind = kInputMotion;
  } else if (evtype >= kXiTouchBegin && evtype <= kXiTouchEnd) {
    kind = kInputTouch;
  } else if (evtype >= kXiGestureFirst && evtype <= kXiGestureLast) {
    return size >= kUnitBytes + 4 * kXiDeviceEventWords ? static_cast<uint32_t>(kInputOther) : 0u;
  } else {
    return 0;
  }
  if (size < kUnitBytes + 4 * kXiDeviceEventWords) return 0;
  const uint32_t words = Card32(p + 4);
  const uint32_t masks = uint32_t{Card16(p + 48)} + Card16(p + 50);
  return words >= kXiDeviceEventWords + masks ? kind : 0;
}

// A _NET_WM_PING, by its signature (x11_event_scan.h); its age when it is one.
bool IsPing(const uint8_t* p, uint32_t now_ms, uint32_t* age) {
  const uint32_t window = Card32(p + 4);
  const uint32_t type_atom = Card32(p + 8);
  const uint32_t protocol_atom = Card32(p + 12);
  if (p[1] != 32 || window == 0 || Card32(p + 20) != window) return false;
  if (protocol_atom == 0 || protocol_atom == type_atom) return false;
  return ServerTimeAge(Card32(p + 16), now_ms, age);
}

// Reads the message of `size` bytes at `p` (all of it peeked) into `out`.
void ReadMessage(const uint8_t* p, size_t size, uint32_t now_ms, InputSnapshot* out) {
  if (p[0] == kError || p[0] == kReply) return;
  const uint8_t type = EventType(p);
  if (const uint32_t kind = CoreInputKind(type); kind != 0) {
    CountInput(kind, Card32(p + 4), now_ms, out);
  } else if (type == kGenericEvent) {
    if (const uint32_t xi_kind = XiInputKind(p, size); xi_kind != 0) {
      CountInput(xi_kind, Card32(p + 12), now_ms, out);
    }
  } else if (type == kClientMessage) {
    uint32_t age = 0;
    if (IsPing(p, now_ms, &age)) {
      out->kinds |= kInputPing;
      if (!out->ping || age > out->ping_ms) out->ping_ms = age;
      out->ping = true;
      out->ping_age_known = true;
    }
  }
}

// Walks the messages from `start` into `out`: false when one does not look like a message.
// Sets out->lower_bound when the walk ends inside a message the peek cut.
bool WalkFrom(const uint8_t* data, size_t start, size_t peeked, size_t available, uint32_t now_ms,
              InputSnapshot* out) {
  size_t pos = start;
  bool have_sequence = false;
  uint16_t sequence = 0;
  while (pos < peeked) {
    if (peeked - pos < kUnitBytes) {
      // A message's head cut by the peek: only when more than the peek waits.
      if (available <= peeked) return false;
      out->lower_bound = true;
      return true;
    }
    const uint8_t* p = data + pos;
    const size_t size = MessageSize(p);
    if (size == 0 || size > available - pos) return false;
    if (HasSequence(p)) {
      const uint16_t s = Card16(p + 2);
      if (have_sequence && static_cast<uint16_t>(s - sequence) >= kMaxSequenceStep) return false;
      have_sequence = true;
      sequence = s;
    }
    if (size > peeked - pos) {  // runs past the peek: seen in part, not counted
      out->lower_bound = true;
      return true;
    }
    ReadMessage(p, size, now_ms, out);
    pos += size;
  }
  return true;
}

}  // namespace

bool ServerTimeAge(uint32_t server_ms, uint32_t now_ms, uint32_t* age_ms) {
  const uint32_t age = now_ms - server_ms;
  if (age < kMaxInputAgeMs) {
    *age_ms = age;
    return true;
  }
  if (server_ms - now_ms <= kServerClockSlackMs) {
    *age_ms = 0;
    return true;
  }
  return false;
}

void ScanX11Stream(const uint8_t* data, size_t peeked, size_t available, uint32_t now_ms,
                   InputSnapshot* out) {
  if (available < peeked) available = peeked;
  for (size_t start = 0; start < peeked; start += 4) {
    InputSnapshot walk = *out;
    if (WalkFrom(data, start, peeked, available, now_ms, &walk)) {
      walk.lower_bound = walk.lower_bound || start > 0 || available > peeked;
      walk.pending = walk.events > 0 || walk.ping;
      *out = walk;
      return;
    }
  }
  out->lower_bound = out->lower_bound || peeked > 0;  // nothing in it could be read
  out->pending = out->events > 0 || out->ping;
}

}  // namespace hangwatch::agent
