// ScanX11Stream: what the bytes an X11 client has not read yet say about input kept waiting.
// The watchdog peeks at the display connection (display_input.h) and hands the bytes here: a
// pure function over a buffer, so the parsing is tested with crafted bytes alone.
//
// The server sends 32-byte units: errors (code 0), replies (code 1, 32 + 4 * length bytes),
// events (code & 0x7f: core 2..34, GenericEvent 35 with 32 + 4 * length bytes, extension
// events 64..127). Counted as input: core KeyPress, KeyRelease, ButtonPress, ButtonRelease and
// MotionNotify, and XInput2's key, button, motion, touch and gesture events. XInput2's raw events
// (XI_Raw*) are input anywhere on the screen, not addressed to this program: skipped, not
// counted. A window manager's _NET_WM_PING is told by its signature, the watchdog cannot intern
// atoms: a ClientMessage of format 32 whose data.l[2] is its own (non-zero) window and whose
// data.l[1] is a plausible recent server time, with data.l[0] (the ping atom) non-zero.
//
// Multi-byte fields are read in this machine's byte order: Xlib and xcb always ask the server
// for the client's own. The XInput2 extension's opcode is assigned by the server and unknown
// here: a GenericEvent is taken for an XInput2 device event by its layout (at least 80 bytes,
// with room for its button and valuator masks), which the other GenericEvents (Present's) lack.
//
// The peek may begin inside a message (the client's last read can end within one) and may end
// inside one (the peek buffer is smaller than what waits). The scan walks the messages only
// while they look valid (known codes, sane lengths that end within the bytes waiting, sequence
// numbers that do not go back); when the walk from the first byte does not hold, it starts at
// the next 4-byte boundary (every X11 message is a multiple of 4 bytes), and so on. Any bytes
// left unread that way make the result a lower bound.
#ifndef HANGWATCH_AGENT_CONTEXT_X11_EVENT_SCAN_H_
#define HANGWATCH_AGENT_CONTEXT_X11_EVENT_SCAN_H_

#include <cstddef>
#include <cstdint>

#include "hang/model/hang_context.h"

namespace hangwatch::agent {

// Server times older than this are taken for another clock's (a remote server's): no age.
inline constexpr uint32_t kMaxInputAgeMs = 10 * 60 * 1000;
// A server time up to this far ahead of `now` is age 0 (the caller's clock was read before
// the event came).
inline constexpr uint32_t kServerClockSlackMs = 1000;

// The age of an X server time (CARD32 ms; Xorg and Xvfb on Linux stamp CLOCK_MONOTONIC in ms,
// truncated to 32 bits) at `now_ms` (CLOCK_MONOTONIC in ms, truncated likewise): false when it
// is not in [0, kMaxInputAgeMs) (after the slack above).
bool ServerTimeAge(uint32_t server_ms, uint32_t now_ms, uint32_t* age_ms);

// Scans `peeked` bytes from the head of the stream, of `available` waiting in all
// (available >= peeked), into `out`'s pending, events, lower_bound, oldest_known, oldest_ms,
// kinds, ping, ping_age_known and ping_ms; `known` and `bytes` are the caller's. `now_ms` as
// above. No allocation, no system call.
void ScanX11Stream(const uint8_t* data, size_t peeked, size_t available, uint32_t now_ms,
                   InputSnapshot* out);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CONTEXT_X11_EVENT_SCAN_H_
