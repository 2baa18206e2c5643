// CountSourceSample (hang/model/source_choice.h) over fake samples: the hang names the source
// of its longest run of consecutive samples, the earlier of equal runs, never merely the last
// sample's (asio's location scope ends, the enclosing operation's source comes back, and a
// sample lands there before the pass ends).
#include "hang/model/source_choice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace hangwatch::agent {
namespace {

constexpr uint64_t kOperationCallback = 0x401000;  // the posted operation's completion function
constexpr char kOperation[] = "asio executor_op";
constexpr char kLocation[] = "decoder.cc:42 DecodeThumbnail";

void Samples(HangContext* c, const char* source, int n, uint64_t callback = kOperationCallback,
             int64_t queued_ms = -1) {
  for (int i = 0; i < n; ++i) CountSourceSample(source, callback, queued_ms, c);
}

TEST(SourceChoiceTest, ALastSampleAfterTheLocationScopeDoesNotRenameTheHang) {
  HangContext c;
  Samples(&c, kOperation, 1);  // the handler began
  Samples(&c, kLocation, 6);   // stalled inside ASIO_HANDLER_LOCATION's scope
  Samples(&c, kOperation, 1);  // the scope ended; the pass had not yet
  EXPECT_STREQ(c.source, kLocation);
  EXPECT_EQ(c.callback, kOperationCallback);
  EXPECT_EQ(c.source_samples, 6u);
  EXPECT_STREQ(c.run_source, kOperation);
  EXPECT_EQ(c.run_samples, 1u);
}

TEST(SourceChoiceTest, OfEqualRunsTheEarlierStaysAndALongerLaterRunWins) {
  HangContext c;
  Samples(&c, kLocation, 1);
  Samples(&c, kOperation, 1);
  EXPECT_STREQ(c.source, kLocation) << "a tie keeps the earlier";
  Samples(&c, "timer", 2, 0x402000, 250);
  EXPECT_STREQ(c.source, "timer") << "a longer run wins";
  EXPECT_EQ(c.callback, 0x402000u);
  EXPECT_EQ(c.queued_ms, 250);
  EXPECT_EQ(c.source_samples, 2u);
}

// Runs, not totals: the same source twice is two runs; a source that comes back after another
// counts again from one.
TEST(SourceChoiceTest, ARunIsConsecutiveSamplesOfOneSource) {
  HangContext c;
  Samples(&c, kOperation, 2);
  Samples(&c, kLocation, 3);
  Samples(&c, kOperation, 2);
  EXPECT_STREQ(c.source, kLocation) << "3 in a row beat 2 + 2";
  Samples(&c, kOperation, 2);
  EXPECT_STREQ(c.source, kOperation) << "its run reached 4";
  EXPECT_EQ(c.source_samples, 4u);
}

// The same name through another callback is another source (two timers both named "timer").
TEST(SourceChoiceTest, TheSameNameThroughAnotherCallbackIsAnotherSource) {
  HangContext c;
  Samples(&c, "timer", 2, 0x1000);
  Samples(&c, "timer", 3, 0x2000);
  EXPECT_EQ(c.callback, 0x2000u);
  EXPECT_EQ(c.source_samples, 3u);
}

// The chosen run's latest lateness: the pass's work was that late when its dispatch began.
TEST(SourceChoiceTest, TheChosenRunKeepsItsLatestQueuedTime) {
  HangContext c;
  Samples(&c, "timer", 1, 0x1000, -1);
  Samples(&c, "timer", 1, 0x1000, 120);
  EXPECT_EQ(c.queued_ms, 120);
  Samples(&c, "idle", 1, 0x2000, -1);
  EXPECT_EQ(c.queued_ms, 120) << "a shorter run does not touch the chosen one";
}

// Names longer than the buffer are cut alike, so the same long name is one run; an unreadable
// name ("") is a source of its own, with its callback.
TEST(SourceChoiceTest, LongNamesAreCutAndCompareAsCut) {
  HangContext c;
  const std::string longer(300, 'x');
  std::string cut = longer.substr(0, HangContext::kTextBytes - 1);
  Samples(&c, longer.c_str(), 2);
  Samples(&c, cut.c_str(), 1);
  EXPECT_EQ(std::string(c.source), cut);
  EXPECT_EQ(c.source_samples, 3u);
  Samples(&c, "", 4);
  EXPECT_STREQ(c.source, "");
  EXPECT_EQ(c.source_samples, 4u);
}

}  // namespace
}  // namespace hangwatch::agent
