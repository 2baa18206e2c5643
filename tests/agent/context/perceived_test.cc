// JudgePerceived's rules (agent/context/perceived.h), one row each.
#include "agent/context/perceived.h"

#include <gtest/gtest.h>

namespace hangwatch::agent {
namespace {

constexpr uint32_t kPerceivedMs = 100;
constexpr uint32_t kNotRespondingMs = 5000;

InputSnapshot Nothing() {
  InputSnapshot s;
  s.known = true;
  return s;
}
InputSnapshot Keys(bool age_known, uint32_t age) {
  InputSnapshot s = Nothing();
  s.pending = true;
  s.events = 2;
  s.kinds = kInputKey;
  s.oldest_known = age_known;
  s.oldest_ms = age;
  s.bytes = 64;
  return s;
}
InputSnapshot Ping(uint32_t age) {
  InputSnapshot s = Nothing();
  s.pending = true;
  s.ping = true;
  s.ping_age_known = true;
  s.ping_ms = age;
  s.kinds = kInputPing;
  s.bytes = 32;
  return s;
}

struct Expect {
  bool known, perceived, not_responding;
};
void Check(const InputSnapshot& s, bool display_triggered, Expect e) {
  const PerceivedVerdict v = JudgePerceived(s, kPerceivedMs, kNotRespondingMs, display_triggered);
  EXPECT_EQ(v.known, e.known);
  EXPECT_EQ(v.perceived, e.perceived);
  EXPECT_EQ(v.not_responding, e.not_responding);
}

TEST(JudgePerceivedTest, NoDisplayConnectionIsUnknown) {
  Check(InputSnapshot{}, false, {false, false, false});
  Check(InputSnapshot{}, true, {false, false, false});
}

TEST(JudgePerceivedTest, BytesThatCannotBeToldApartAreUnknown) {  // Wayland
  InputSnapshot s = Nothing();
  s.pending = true;
  s.lower_bound = true;
  s.bytes = 96;
  Check(s, false, {false, false, false});
}

TEST(JudgePerceivedTest, InputOlderThanTheThresholdWasPerceived) {
  Check(Keys(true, 101), false, {true, true, false});
  Check(Keys(true, 100), false, {true, false, false});
  Check(Keys(true, 20), true, {true, false, false});
}

TEST(JudgePerceivedTest, InputOfUnknownAgeWasPerceived) {
  Check(Keys(false, 0), false, {true, true, false});
}

TEST(JudgePerceivedTest, APingOlderThanTheThresholdsWasPerceivedAndNotResponding) {
  Check(Ping(50), false, {true, false, false});
  Check(Ping(150), false, {true, true, false});
  Check(Ping(5001), false, {true, true, true});
  InputSnapshot both = Keys(true, 10);
  both.ping = true;
  both.ping_age_known = true;
  both.ping_ms = 6000;
  both.kinds |= kInputPing;
  Check(both, false, {true, true, true});
}

TEST(JudgePerceivedTest, NothingWaitingIsNotPerceivedUnlessTheDisplayBeganThePass) {
  Check(Nothing(), false, {true, false, false});
  Check(Nothing(), true, {false, false, false});  // the toolkit may hold the input itself
}

TEST(JudgePerceivedTest, NothingReadableInBytesWaitingIsUnknown) {
  InputSnapshot s = Nothing();
  s.lower_bound = true;
  s.bytes = 40;
  Check(s, false, {false, false, false});
}

}  // namespace
}  // namespace hangwatch::agent
