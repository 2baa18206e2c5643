// Crafted X11 server-to-client messages for the display input tests: core input events,
// replies, XInput2 GenericEvents, ClientMessages, laid out as the X11 protocol says, in this
// machine's byte order (what Xlib and xcb ask the server for). Header-only.
#ifndef HANGWATCH_TESTS_AGENT_CONTEXT_X11_BYTES_H_
#define HANGWATCH_TESTS_AGENT_CONTEXT_X11_BYTES_H_

#include <cstdint>
#include <cstring>
#include <vector>

namespace hangwatch::testing {

using Bytes = std::vector<uint8_t>;

inline void Put16(Bytes* b, size_t at, uint16_t v) { std::memcpy(b->data() + at, &v, sizeof v); }
inline void Put32(Bytes* b, size_t at, uint32_t v) { std::memcpy(b->data() + at, &v, sizeof v); }

inline void Append(Bytes* stream, const Bytes& message) {
  stream->insert(stream->end(), message.begin(), message.end());
}

inline constexpr uint32_t kRoot = 0x000003a5;
inline constexpr uint32_t kWindow = 0x00400007;

// KeyPress 2, KeyRelease 3, ButtonPress 4, ButtonRelease 5, MotionNotify 6; `time` in ms.
inline Bytes CoreInputEvent(uint8_t type, uint8_t detail, uint16_t sequence, uint32_t time) {
  Bytes e(32, 0);
  e[0] = type;
  e[1] = detail;
  Put16(&e, 2, sequence);
  Put32(&e, 4, time);
  Put32(&e, 8, kRoot);
  Put32(&e, 12, kWindow);
  Put16(&e, 20, 120);  // root x, y; event x, y
  Put16(&e, 22, 80);
  Put16(&e, 24, 20);
  Put16(&e, 26, 30);
  e[30] = 1;  // same screen
  return e;
}

// A reply of 32 + 4 * `words` bytes whose body is made of bytes that would read as KeyPress
// events (so a scan that does not skip it by its length counts them).
inline Bytes Reply(uint16_t sequence, uint32_t words) {
  Bytes r(32 + 4 * words, 0);
  r[0] = 1;
  Put16(&r, 2, sequence);
  Put32(&r, 4, words);
  for (size_t i = 32; i < r.size(); i += 32) r[i] = 2;
  return r;
}

// An XInput2 device event (GenericEvent, extension opcode 131): evtype XI_KeyPress 2 ...
// XI_Motion 6, XI_TouchBegin 18 ...; one word of button mask, one of valuator mask, one
// valuator value (8 bytes).
inline Bytes XiDeviceEvent(uint16_t evtype, uint16_t sequence, uint32_t time) {
  const uint16_t buttons_words = 1;
  const uint16_t valuators_words = 1;
  const uint32_t words = (80 - 32) / 4 + buttons_words + valuators_words + 2;
  Bytes e(32 + 4 * words, 0);
  e[0] = 35;
  e[1] = 131;
  Put16(&e, 2, sequence);
  Put32(&e, 4, words);
  Put16(&e, 8, evtype);
  Put16(&e, 10, 3);  // deviceid
  Put32(&e, 12, time);
  Put32(&e, 16, 38);  // detail
  Put32(&e, 20, kRoot);
  Put32(&e, 24, kWindow);
  Put16(&e, 48, buttons_words);
  Put16(&e, 50, valuators_words);
  Put16(&e, 52, 3);  // sourceid
  return e;
}

// A GenericEvent of another extension (Present's IdleNotify: evtype 2, 40 bytes), which must
// not be taken for XI_KeyPress.
inline Bytes PresentIdleNotify(uint16_t sequence) {
  Bytes e(40, 0);
  e[0] = 35;
  e[1] = 148;
  Put16(&e, 2, sequence);
  Put32(&e, 4, 2);
  Put16(&e, 8, 2);
  Put32(&e, 16, kWindow);
  return e;
}

// A ClientMessage of format 32 with data.l[0..2].
inline Bytes ClientMessage32(uint16_t sequence, uint32_t window, uint32_t type_atom, uint32_t l0,
                             uint32_t l1, uint32_t l2) {
  Bytes e(32, 0);
  e[0] = 33;
  e[1] = 32;
  Put16(&e, 2, sequence);
  Put32(&e, 4, window);
  Put32(&e, 8, type_atom);
  Put32(&e, 12, l0);
  Put32(&e, 16, l1);
  Put32(&e, 20, l2);
  return e;
}

// Atoms as a server might number them (the scan never needs to know them).
inline constexpr uint32_t kWmProtocolsAtom = 0x11d;
inline constexpr uint32_t kNetWmPingAtom = 0x1a2;
inline constexpr uint32_t kWmDeleteWindowAtom = 0x11e;

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_AGENT_CONTEXT_X11_BYTES_H_
