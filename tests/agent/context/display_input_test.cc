// DisplayInput over a socketpair standing in for the display connection (set_display_fd):
// crafted X11 bytes written by the "server" end are read by Look() as input events, their
// kinds and ages, a window manager's ping; a peek consumes nothing. Also the peer names taken
// for display servers, the server-time ages, and the look without any display connection.
#include "agent/context/display_input.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "agent/context/x11_event_scan.h"
#include "tests/agent/context/x11_bytes.h"

namespace hangwatch::agent {
namespace {

using testing::Append;
using testing::Bytes;
using testing::ClientMessage32;
using testing::CoreInputEvent;
using testing::kNetWmPingAtom;
using testing::kWindow;
using testing::kWmDeleteWindowAtom;
using testing::kWmProtocolsAtom;
using testing::PresentIdleNotify;
using testing::Reply;
using testing::XiDeviceEvent;

constexpr uint8_t kKeyPress = 2, kKeyRelease = 3, kButtonPress = 4, kMotionNotify = 6;
constexpr uint16_t kXiKeyPress = 2, kXiMotion = 6, kXiTouchBegin = 18, kXiRawKeyPress = 13;

// Our clock, 5000 s after boot: server times are `kNowMs - age`.
constexpr uint64_t kNowMs = 5'000'000;
constexpr uint64_t kNowNs = kNowMs * 1'000'000;
uint32_t Ago(uint32_t ms) { return static_cast<uint32_t>(kNowMs - ms); }

class DisplayInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    display_.set_display_fd(client());
  }
  void TearDown() override {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  int client() const { return fds_[0]; }
  void ServerWrites(const Bytes& bytes) {
    ASSERT_EQ(write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  InputSnapshot LookNow(uint64_t now_ns = kNowNs) {
    InputSnapshot s;
    EXPECT_TRUE(display_.Look(now_ns, &s));
    return s;
  }

  int fds_[2] = {-1, -1};
  DisplayInput display_;
};

TEST_F(DisplayInputTest, KeyPressesAndMotionAreCountedWithTheirKindsAndTheOldestAge) {
  Bytes stream;
  Append(&stream, CoreInputEvent(kMotionNotify, 0, 10, Ago(400)));
  Append(&stream, CoreInputEvent(kKeyPress, 38, 10, Ago(300)));
  Append(&stream, CoreInputEvent(kKeyRelease, 38, 10, Ago(250)));
  Append(&stream, CoreInputEvent(kKeyPress, 56, 11, Ago(200)));
  Append(&stream, CoreInputEvent(kKeyRelease, 56, 11, Ago(150)));
  ServerWrites(stream);

  const InputSnapshot s = LookNow();
  EXPECT_TRUE(s.known);
  EXPECT_TRUE(s.pending);
  EXPECT_EQ(s.events, 5u);
  EXPECT_FALSE(s.lower_bound);
  EXPECT_EQ(s.kinds, kInputKey | kInputMotion);
  EXPECT_TRUE(s.oldest_known);
  EXPECT_EQ(s.oldest_ms, 400u);
  EXPECT_FALSE(s.ping);
  EXPECT_EQ(s.bytes, stream.size());
  EXPECT_EQ(display_.display_fd(), client());
  EXPECT_TRUE(display_.is_x11());
}

TEST_F(DisplayInputTest, AReplyBetweenEventsIsSkippedByItsLength) {
  Bytes stream;
  Append(&stream, CoreInputEvent(kButtonPress, 1, 20, Ago(900)));
  Append(&stream, Reply(21, 64));  // its body would read as 8 KeyPress events
  Append(&stream, CoreInputEvent(kKeyPress, 38, 21, Ago(500)));
  ServerWrites(stream);

  const InputSnapshot s = LookNow();
  EXPECT_EQ(s.events, 2u);
  EXPECT_FALSE(s.lower_bound);
  EXPECT_EQ(s.kinds, kInputButton | kInputKey);
  EXPECT_EQ(s.oldest_ms, 900u);
}

TEST_F(DisplayInputTest, XInput2KeyMotionAndTouchAreCountedOtherGenericEventsAreNot) {
  Bytes stream;
  Append(&stream, XiDeviceEvent(kXiMotion, 30, Ago(700)));
  Append(&stream, PresentIdleNotify(30));  // evtype 2 too, but not XInput2's layout
  Append(&stream, XiDeviceEvent(kXiKeyPress, 30, Ago(600)));
  Append(&stream, XiDeviceEvent(kXiRawKeyPress, 30, Ago(650)));  // input anywhere: skipped
  Append(&stream, XiDeviceEvent(kXiTouchBegin, 31, Ago(100)));
  ServerWrites(stream);

  const InputSnapshot s = LookNow();
  EXPECT_EQ(s.events, 3u);
  EXPECT_FALSE(s.lower_bound);
  EXPECT_EQ(s.kinds, kInputMotion | kInputKey | kInputTouch);
  EXPECT_EQ(s.oldest_ms, 700u);
}

TEST_F(DisplayInputTest, SentEventsCount) {
  Bytes key = CoreInputEvent(kKeyPress, 38, 5, Ago(120));
  key[0] |= 0x80;  // SendEvent
  ServerWrites(key);
  const InputSnapshot s = LookNow();
  EXPECT_EQ(s.events, 1u);
  EXPECT_EQ(s.kinds, kInputKey);
}

TEST_F(DisplayInputTest, AMessageCutAtTheStartIsSkippedAndMakesALowerBound) {
  Bytes stream;
  const Bytes cut = CoreInputEvent(kKeyRelease, 38, 40, Ago(800));
  stream.insert(stream.end(), cut.begin() + 12, cut.end());  // its last 20 bytes
  Append(&stream, CoreInputEvent(kKeyPress, 39, 40, Ago(700)));
  Append(&stream, CoreInputEvent(kKeyRelease, 39, 40, Ago(650)));
  Append(&stream, CoreInputEvent(kMotionNotify, 0, 41, Ago(600)));
  ServerWrites(stream);

  const InputSnapshot s = LookNow();
  EXPECT_TRUE(s.pending);
  EXPECT_EQ(s.events, 3u);
  EXPECT_TRUE(s.lower_bound);
  EXPECT_EQ(s.kinds, kInputKey | kInputMotion);
  EXPECT_EQ(s.oldest_ms, 700u);
}

TEST_F(DisplayInputTest, MoreThanThePeekBufferIsALowerBound) {
  Bytes stream;
  const size_t events = DisplayInput::kPeekBytes / 32 + 40;
  for (size_t i = 0; i < events; ++i) {
    Append(&stream, CoreInputEvent(kMotionNotify, 0, 50, Ago(300)));
  }
  ServerWrites(stream);

  const InputSnapshot s = LookNow();
  EXPECT_EQ(s.bytes, stream.size());
  EXPECT_EQ(s.events, DisplayInput::kPeekBytes / 32);
  EXPECT_TRUE(s.lower_bound);
}

TEST_F(DisplayInputTest, APingIsRecognisedByItsSignatureWithItsAge) {
  ServerWrites(ClientMessage32(60, kWindow, kWmProtocolsAtom, kNetWmPingAtom, Ago(6000), kWindow));
  const InputSnapshot s = LookNow();
  EXPECT_TRUE(s.pending);
  EXPECT_TRUE(s.ping);
  EXPECT_TRUE(s.ping_age_known);
  EXPECT_EQ(s.ping_ms, 6000u);
  EXPECT_EQ(s.events, 0u);  // a ping is not input
  EXPECT_EQ(s.kinds, kInputPing);
}

TEST_F(DisplayInputTest, OtherClientMessagesAreIgnored) {
  Bytes stream;
  // WM_DELETE_WINDOW (l[2] 0), a ping-like message for another window, one with no time.
  Append(&stream, ClientMessage32(61, kWindow, kWmProtocolsAtom, kWmDeleteWindowAtom, Ago(50), 0));
  Append(&stream,
         ClientMessage32(61, kWindow, kWmProtocolsAtom, kNetWmPingAtom, Ago(50), kWindow + 1));
  Append(&stream, ClientMessage32(61, kWindow, kWmProtocolsAtom, kNetWmPingAtom, 0, kWindow));
  ServerWrites(stream);
  const InputSnapshot s = LookNow();
  EXPECT_TRUE(s.known);
  EXPECT_FALSE(s.pending);
  EXPECT_FALSE(s.ping);
  EXPECT_EQ(s.events, 0u);
  EXPECT_FALSE(s.lower_bound);
  EXPECT_EQ(s.bytes, stream.size());
}

TEST_F(DisplayInputTest, NoBytesIsNothingPending) {
  const InputSnapshot s = LookNow();
  EXPECT_TRUE(s.known);
  EXPECT_FALSE(s.pending);
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.events, 0u);
  EXPECT_FALSE(s.lower_bound);
}

TEST_F(DisplayInputTest, AServerClockFarFromOursGivesNoAge) {
  ServerWrites(CoreInputEvent(kKeyPress, 38, 1, Ago(20 * 60 * 1000)));  // 20 min "ago"
  const InputSnapshot s = LookNow();
  EXPECT_EQ(s.events, 1u);
  EXPECT_FALSE(s.oldest_known);
}

TEST_F(DisplayInputTest, TheLookConsumesNothing) {
  Bytes stream;
  Append(&stream, CoreInputEvent(kKeyPress, 38, 70, Ago(100)));
  Append(&stream, Reply(71, 3));
  Append(&stream, ClientMessage32(72, kWindow, kWmProtocolsAtom, kNetWmPingAtom, Ago(10), kWindow));
  ServerWrites(stream);
  LookNow();
  LookNow();

  Bytes read_back(stream.size() + 64);
  const ssize_t got = recv(client(), read_back.data(), read_back.size(), MSG_DONTWAIT);
  ASSERT_EQ(got, static_cast<ssize_t>(stream.size()));
  read_back.resize(static_cast<size_t>(got));
  EXPECT_EQ(read_back, stream);
}

TEST_F(DisplayInputTest, AWaylandConnectionSaysOnlyThatBytesWait) {
  display_.set_display_fd(client(), DisplayProtocol::kWayland);
  ServerWrites(CoreInputEvent(kKeyPress, 38, 1, Ago(300)));  // whatever the bytes are
  const InputSnapshot s = LookNow();
  EXPECT_FALSE(display_.is_x11());
  EXPECT_TRUE(s.pending);
  EXPECT_EQ(s.events, 0u);
  EXPECT_EQ(s.kinds, 0u);
  EXPECT_TRUE(s.lower_bound);
  EXPECT_EQ(s.bytes, 32u);
  EXPECT_FALSE(JudgePerceived(s, 100, 5000, false).known);
}

// The process has no display connection once the hinted socket is closed: /proc/self/fd is
// read again at once, then at most once a second.
TEST_F(DisplayInputTest, WithoutADisplayConnectionLookIsFalseAndRescansOnceASecond) {
  LookNow();
  close(fds_[0]);
  fds_[0] = -1;
  const uint32_t scans = display_.scans();

  InputSnapshot s;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(display_.Look(kNowNs, &s));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s.known);
  EXPECT_EQ(display_.display_fd(), -1);
  EXPECT_EQ(display_.scans(), scans + 1);
  EXPECT_LT(took, std::chrono::milliseconds(200));

  EXPECT_FALSE(display_.Look(kNowNs + DisplayInput::kRescanIntervalNs - 1, &s));
  EXPECT_EQ(display_.scans(), scans + 1);
  EXPECT_FALSE(display_.Look(kNowNs + DisplayInput::kRescanIntervalNs, &s));
  EXPECT_EQ(display_.scans(), scans + 2);
}

TEST(DisplayInputDiscoveryTest, AFreshLookWithNoDisplayFindsNone) {
  DisplayInput display;
  InputSnapshot s;
  EXPECT_FALSE(display.Look(kNowNs, &s));
  EXPECT_FALSE(s.known);
  EXPECT_EQ(display.scans(), 1u);
}

DisplayProtocol Peer(const std::string& name, const char* wayland_socket = "") {
  return ProtocolOfPeer(name.data(), name.size(), wayland_socket);
}

TEST(ProtocolOfPeerTest, NamesTakenForDisplayServers) {
  using std::string_literals::operator""s;
  EXPECT_EQ(Peer("/tmp/.X11-unix/X0"), DisplayProtocol::kX11);
  EXPECT_EQ(Peer("/tmp/.X11-unix/X12\0\0"s), DisplayProtocol::kX11);
  EXPECT_EQ(Peer("\0/tmp/.X11-unix/X99"s), DisplayProtocol::kX11);
  EXPECT_EQ(Peer("/tmp/.X11-unix/X"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/tmp/.X11-unix/Xfoo"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/tmp/.ICE-unix/123"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/run/user/1000/wayland-0"), DisplayProtocol::kWayland);
  EXPECT_EQ(Peer("/run/user/1000/wayland-1"), DisplayProtocol::kWayland);
  EXPECT_EQ(Peer("/run/user/1000/wayland-0.lock"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("\0wayland-0"s), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/run/user/1000/bus"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/run/user/1000/pulse/native"), DisplayProtocol::kNone);
  EXPECT_EQ(Peer("/run/user/1000/my-compositor", "/run/user/1000/my-compositor"),
            DisplayProtocol::kWayland);
  EXPECT_EQ(Peer(""), DisplayProtocol::kNone);
}

TEST(ServerTimeAgeTest, AgesAcrossTheWrapAndWithinTheirBounds) {
  uint32_t age = 0;
  EXPECT_TRUE(ServerTimeAge(1000, 1250, &age));
  EXPECT_EQ(age, 250u);
  EXPECT_TRUE(ServerTimeAge(0xfffffff0u, 50, &age));  // the 32-bit ms clock wrapped (49.7 days)
  EXPECT_EQ(age, 66u);
  EXPECT_TRUE(ServerTimeAge(1300, 1250, &age));  // a little ahead of our (earlier) reading
  EXPECT_EQ(age, 0u);
  EXPECT_FALSE(ServerTimeAge(1250 + kServerClockSlackMs + 1, 1250, &age));
  EXPECT_TRUE(ServerTimeAge(1, kMaxInputAgeMs, &age));
  EXPECT_EQ(age, kMaxInputAgeMs - 1);
  EXPECT_FALSE(ServerTimeAge(0, kMaxInputAgeMs, &age));
}

}  // namespace
}  // namespace hangwatch::agent
