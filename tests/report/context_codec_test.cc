// A hang's context, input and perceived in the report format (docs/report-format.md,
// "context" and "input"): their bytes, decoded back exactly, absent in older records (which
// keep their bytes and decode to the defaults), and a malformed member classed alike by the
// decoder and the scanner. Also the words and the key the readers give them
// (report/context_text.h).
#include <gtest/gtest.h>

#include <string>

#include "report/context_scan.h"
#include "report/context_text.h"
#include "report/record_scan.h"
#include "report/report_decode.h"
#include "report/report_record.h"

namespace hangwatch::report {
namespace {

HangRecord WithContext() {
  HangRecord h;
  h.pid = 4;
  h.tid = 4;
  h.duration_ms = 900;
  h.samples = 3;
  h.context.label = "thumbnail.decode";
  h.context.label_path = {"request", "thumbnail.decode"};
  h.context.label_depth = 2;
  h.context.has_trigger = true;
  h.context.trigger.kind = "socket";
  h.context.trigger.detail = "tcp";
  h.context.trigger.fd = 7;
  h.context.trigger.ready = 1;
  h.context.trigger.peer = "127.0.0.1:40312";
  h.context.trigger.pid = 1234;
  h.context.trigger.process = "python3";
  h.context.source = "GSource \"io\"";
  h.context.callback = "on_readable";
  h.input.known = true;
  h.input.pending = true;
  h.input.events = 3;
  h.input.oldest_known = true;
  h.input.oldest_ms = 1200;
  h.input.kinds = {"key", "motion"};
  h.input.ping = true;
  h.input.ping_ms = 800;
  h.perceived = true;
  h.not_responding = true;
  h.queued_ms = 40;
  return h;
}

// What follows "monitor_pause_us":0 in the line: the documented shape.
std::string Tail(const std::string& line) {
  const std::string marker = R"("monitor_pause_us":0)";
  const size_t at = line.find(marker);
  return at == std::string::npos ? "" : line.substr(at + marker.size());
}

TEST(ContextCodec, LineHasTheDocumentedShape) {
  EXPECT_EQ(Tail(Encode(WithContext())),
            R"(,"context":{"label":"thumbnail.decode","label_path":["request",)"
            R"("thumbnail.decode"],"trigger":{"kind":"socket","detail":"tcp","fd":7,"ready":1,)"
            R"("peer":"127.0.0.1:40312","pid":1234,"process":"python3"},)"
            R"("source":"GSource \"io\"","callback":"on_readable"},)"
            R"("input":{"pending":true,"events":3,"oldest_ms":1200,"kinds":["key","motion"],)"
            R"("ping":true,"ping_ms":800},"perceived":true,"not_responding":true,"queued_ms":40})");
}

TEST(ContextCodec, RoundTripsExactly) {
  HangRecord in = WithContext();
  in.context.label_depth = 11;  // deeper than the labels kept: written
  in.context.trigger = Trigger{};
  in.context.trigger.kind = "timeout";
  in.context.trigger.timeout_ms = 500;
  in.input.events_lower_bound = true;
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"("label_depth":11)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("trigger":{"kind":"timeout","timeout_ms":500})"), std::string::npos);
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  EXPECT_EQ(Encode(out), line);
  EXPECT_EQ(out.context.label, "thumbnail.decode");
  EXPECT_EQ(out.context.label_path, in.context.label_path);
  EXPECT_EQ(out.context.label_depth, 11u);
  EXPECT_TRUE(out.context.has_trigger);
  EXPECT_EQ(out.context.trigger.kind, "timeout");
  EXPECT_EQ(out.context.trigger.fd, -1);
  EXPECT_EQ(out.context.trigger.timeout_ms, 500u);
  EXPECT_EQ(out.context.source, in.context.source);
  EXPECT_EQ(out.context.callback, "on_readable");
  EXPECT_TRUE(out.input.known);
  EXPECT_TRUE(out.input.events_lower_bound);
  EXPECT_TRUE(out.input.oldest_known);
  EXPECT_EQ(out.input.oldest_ms, 1200u);
  EXPECT_EQ(out.input.kinds, in.input.kinds);
  EXPECT_EQ(out.input.ping_ms, 800u);
  EXPECT_EQ(out.perceived, std::optional<bool>(true));
  EXPECT_TRUE(out.not_responding);
  EXPECT_EQ(out.queued_ms, 40);

  // The scanner fills the same context and input.
  ScannedLine s;
  ASSERT_EQ(ScanLine(line, &s), LineKind::kHang);
  Context scanned;
  ASSERT_TRUE(ScanContext(s[KeyIndex("context")], &scanned));
  EXPECT_EQ(scanned.label_path, out.context.label_path);
  EXPECT_EQ(scanned.label_depth, 11u);
  EXPECT_EQ(scanned.trigger.timeout_ms, 500u);
  EXPECT_EQ(scanned.source, out.context.source);
  Input input;
  ASSERT_TRUE(ScanInput(s[KeyIndex("input")], &input));
  EXPECT_EQ(input.kinds, in.input.kinds);
  EXPECT_TRUE(input.oldest_known);
}

TEST(ContextCodec, PerceivedFalseAndUnknownAreTold) {
  HangRecord in;
  in.perceived = false;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(Encode(in), &out, &error)) << error;
  EXPECT_EQ(out.perceived, std::optional<bool>(false));
  in.perceived.reset();
  ASSERT_TRUE(DecodeHang(Encode(in), &out, &error)) << error;
  EXPECT_FALSE(out.perceived.has_value());
}

// A record without them keeps the bytes it had before they existed, and an older line decodes
// to the defaults.
TEST(ContextCodec, OlderRecordsKeepTheirBytesAndReadAsDefaults) {
  const std::string line = Encode(HangRecord{});
  for (const char* key : {"context", "input", "perceived", "not_responding", "queued_ms"}) {
    EXPECT_EQ(line.find(std::string("\"") + key + "\""), std::string::npos) << key;
  }
  EXPECT_EQ(line.substr(line.size() - 22), R"(,"monitor_pause_us":0})");
  const std::string old =
      R"({"pid":1,"tid":1,"start_unix_ms":0,"duration_ms":1,"cpu_ms":0,"samples":0,"stacks":[]})";
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(old, &out, &error)) << error;
  EXPECT_TRUE(out.context.empty());
  EXPECT_FALSE(out.context.has_trigger);
  EXPECT_FALSE(out.input.known);
  EXPECT_FALSE(out.perceived.has_value());
  EXPECT_FALSE(out.not_responding);
  EXPECT_EQ(out.queued_ms, -1);
}

// A member of the wrong type or range: the decoder names it, the scanner calls the line bad.
TEST(ContextCodec, MalformedMembersAreBadForEveryReader) {
  const std::string head =
      R"({"pid":1,"tid":1,"start_unix_ms":0,"duration_ms":1,"cpu_ms":0,"samples":0,"stacks":[],)";
  const std::pair<const char*, const char*> bad[] = {
      {R"("context":"x")", "field 'context': is not an object"},
      {R"("context":{"label":5})", "field 'context': field 'label' is not a string"},
      {R"("context":{"label_path":["a",2]})",
       "field 'context': field 'label_path' is not an array of strings"},
      {R"("context":{"label_depth":-1})", "field 'context': field 'label_depth' is not in range"},
      {R"("context":{"trigger":[]})", "field 'context': field 'trigger' is not an object"},
      {R"("context":{"trigger":{"fd":4294967296}})", "field 'context': field 'fd' is not in range"},
      {R"("context":{"trigger":{"peer":1}})", "field 'context': field 'peer' is not a string"},
      {R"("input":{"events":"3"})", "field 'input': field 'events' is not an integer"},
      {R"("input":{"kinds":"key"})", "field 'input': field 'kinds' is not an array of strings"},
      {R"("input":{"oldest_ms":1.5})", "field 'input': field 'oldest_ms' is not an integer"},
      {R"("input":[])", "field 'input': is not an object"},
      {R"("perceived":null)", "field 'perceived' is not a boolean"},
      {R"("not_responding":1)", "field 'not_responding' is not a boolean"},
      {R"("queued_ms":"5")", "field 'queued_ms' is not an integer"},
  };
  for (const auto& [member, message] : bad) {
    const std::string line = head + member + "}";
    HangRecord out;
    std::string error;
    EXPECT_FALSE(DecodeHang(line, &out, &error)) << line;
    EXPECT_EQ(error, message) << line;
    ScannedLine s;
    EXPECT_EQ(ScanLine(line, &s), LineKind::kBad) << line;
  }
  // Members this build does not know are ignored by both.
  const std::string line = head + R"("context":{"future":[1],"trigger":{"x":{}}}})";
  HangRecord out;
  std::string error;
  EXPECT_TRUE(DecodeHang(line, &out, &error)) << error;
  ScannedLine s;
  EXPECT_EQ(ScanLine(line, &s), LineKind::kHang);
}

// The trigger's kind is one of a fixed set, its precise name the detail; a record whose kind was
// the precise name (written before the two were split) reads as if written now, by both readers.
TEST(ContextCodec, TriggerKindIsOneOfTheSetAndOldPreciseKindsAreSplit) {
  struct Case {
    const char* written;
    const char* kind;
    const char* detail;
  } cases[] = {{"tcp", "socket", "tcp"},           {"unix", "socket", "unix"},
               {"fifo", "pipe", "fifo"},           {"timerfd", "timer", "timerfd"},
               {"signalfd", "signal", "signalfd"}, {"signal", "signal", "interrupted"},
               {"gone", "other", "gone"},          {"pidfd", "other", "pidfd"},
               {"device", "other", "device"},      {"eventfd", "eventfd", ""},
               {"timeout", "timeout", ""},         {"listen", "listen", ""}};
  for (const Case& c : cases) {
    HangRecord in = WithContext();
    in.context.trigger.kind = c.written;
    in.context.trigger.detail.clear();
    const std::string line = Encode(in);
    HangRecord out;
    std::string error;
    ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
    EXPECT_EQ(out.context.trigger.kind, c.kind) << c.written;
    EXPECT_EQ(out.context.trigger.detail, c.detail) << c.written;
    ScannedLine s;
    ASSERT_EQ(ScanLine(line, &s), LineKind::kHang);
    Context scanned;
    ASSERT_TRUE(ScanContext(s[KeyIndex("context")], &scanned)) << line;
    EXPECT_EQ(scanned.trigger.kind, c.kind) << c.written;
    EXPECT_EQ(scanned.trigger.detail, c.detail) << c.written;
    // Written again, the record is stable.
    EXPECT_EQ(Encode(out), Encode(HangRecord(out)));
  }
}

TEST(ContextText, KeyIsTheLabelElseTheSourceElseTheTriggerKind) {
  Context c;
  EXPECT_EQ(ContextKey(c), "");
  c.has_trigger = true;
  c.trigger.kind = "timer";
  c.trigger.detail = "timerfd";
  EXPECT_EQ(ContextKey(c), "timer");
  c.source = "idle";
  EXPECT_EQ(ContextKey(c), "idle");
  c.label_path = {"request", "thumbnail.decode"};
  EXPECT_EQ(ContextKey(c), "thumbnail.decode");
  c.label = "thumbnail.decode";
  EXPECT_EQ(ContextKey(c), "thumbnail.decode");
}

TEST(ContextText, ContextAndInputInWords) {
  HangRecord h = WithContext();
  EXPECT_EQ(DescribeContext(h.context),
            "request > thumbnail.decode; trigger tcp 127.0.0.1:40312 (python3, pid 1234); "
            "source GSource \"io\"; callback on_readable");
  h.input.ping = false;
  h.not_responding = false;
  EXPECT_EQ(DescribeInput(h), "3 input events waited (key, motion), oldest 1.2 s; perceived");
  h.input.events = 0;
  h.perceived = false;
  EXPECT_EQ(DescribeInput(h), "no input waited; perceived: no");
  h.input.known = false;
  h.perceived.reset();
  EXPECT_EQ(DescribeInput(h), "");
  h.not_responding = true;
  EXPECT_EQ(DescribeInput(h), "not responding");
  h.context.label_depth = 9;
  h.context.has_trigger = false;
  h.context.source.clear();
  h.context.callback.clear();
  EXPECT_EQ(DescribeContext(h.context), "request > thumbnail.decode > ...");
}

}  // namespace
}  // namespace hangwatch::report
