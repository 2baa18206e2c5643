// The OTLP log record of a hang with context (tools/export/otlp_encode.h): what the pass
// served and whether a person waited as attributes, hang.perceived a boolean in both
// encodings, and the trigger's other end only with OtlpOptions::with_peers
// (`hangwatch export --with-peers`).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tools/export/otlp_encode.h"

namespace hangwatch {
namespace {

using nlohmann::json;

HangRecord WithContext() {
  HangRecord h;
  h.pid = 7;
  h.process = "/srv/app";
  h.duration_ms = 900;
  h.context.label = "thumbnail.decode";
  h.context.label_path = {"request", "thumbnail.decode"};
  h.context.has_trigger = true;
  h.context.trigger.kind = "socket";
  h.context.trigger.detail = "tcp";
  h.context.trigger.fd = 7;
  h.context.trigger.peer = "10.0.0.8:40312";
  h.context.trigger.pid = 1234;
  h.context.trigger.process = "python3";
  h.context.source = "GSource io";
  h.input.known = true;
  h.input.events = 3;
  h.perceived = false;
  h.not_responding = true;
  return h;
}

// The attributes of the one log record, each value as JSON ({"stringValue": ...}, ...).
std::map<std::string, json> Attributes(const HangRecord& h, bool with_peers) {
  tools::OtlpOptions options;
  options.with_peers = with_peers;
  const json request = json::parse(
      tools::EncodeOtlpJson(tools::HangsToOtlpLogs(std::vector<HangRecord>{h}, 1, options)));
  std::map<std::string, json> out;
  for (const json& kv : request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["attributes"]) {
    out[kv["key"]] = kv["value"];
  }
  return out;
}

TEST(OtlpContext, ContextAndPerceivedAreAttributes) {
  auto a = Attributes(WithContext(), false);
  EXPECT_EQ(a["hang.context.label"], json({{"stringValue", "thumbnail.decode"}}));
  EXPECT_EQ(a["hang.context.source"], json({{"stringValue", "GSource io"}}));
  EXPECT_EQ(a["hang.trigger.kind"], json({{"stringValue", "socket"}}));
  EXPECT_EQ(a["hang.trigger.detail"], json({{"stringValue", "tcp"}}));
  EXPECT_EQ(a["hang.perceived"], json({{"boolValue", false}}));
  EXPECT_EQ(a["hang.not_responding"], json({{"boolValue", true}}));
  EXPECT_EQ(a["hang.input.events"], json({{"intValue", "3"}}));
  // The other end only when asked.
  for (const char* key : {"hang.trigger.peer", "hang.trigger.pid", "hang.trigger.process"}) {
    EXPECT_EQ(a.count(key), 0u) << key;
  }
  a = Attributes(WithContext(), true);
  EXPECT_EQ(a["hang.trigger.peer"], json({{"stringValue", "10.0.0.8:40312"}}));
  EXPECT_EQ(a["hang.trigger.pid"], json({{"intValue", "1234"}}));
  EXPECT_EQ(a["hang.trigger.process"], json({{"stringValue", "python3"}}));
}

TEST(OtlpContext, UnknownIsLeftOut) {
  HangRecord h;
  h.pid = 7;
  const auto a = Attributes(h, true);
  for (const char* key :
       {"hang.context.label", "hang.context.source", "hang.trigger.kind", "hang.perceived",
        "hang.not_responding", "hang.input.events", "hang.trigger.peer"}) {
    EXPECT_EQ(a.count(key), 0u) << key;
  }
}

// AnyValue.bool_value is field 2, a varint: "hang.perceived" then {0x10 0x01} for true.
TEST(OtlpContext, PerceivedIsABooleanInProtobuf) {
  HangRecord h = WithContext();
  h.perceived = true;
  const std::string bytes =
      tools::EncodeOtlpProtobuf(tools::HangsToOtlpLogs(std::vector<HangRecord>{h}, 1));
  const std::string key = "hang.perceived";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  // key, then value = 2 (a message of 2 bytes): 0x12 0x02 0x10 0x01.
  EXPECT_EQ(bytes.substr(at + key.size(), 4), std::string("\x12\x02\x10\x01", 4));
}

}  // namespace
}  // namespace hangwatch
