// The report codec: the bytes of each record type, and each decoded back to what was encoded.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "report/report_decode.h"
#include "report/report_record.h"

namespace hangwatch::report {
namespace {

StartupStall Stall() {
  StartupStall s;
  s.pid = 7;
  s.process = "/usr/bin/x";
  s.start_unix_ms = 1763700000000;
  s.duration_ms = 3100;
  s.threshold_ms = 2000;
  return s;
}

TEST(ReportCodec, StartupStallLineIsTheDocumentedOne) {
  // Field for field and in the order the preload shim has always written them.
  EXPECT_EQ(Encode(Stall()),
            R"({"type":"startup_stall","format_version":1,"pid":7,"process":"/usr/bin/x",)"
            R"("start_unix_ms":1763700000000,"duration_ms":3100,"threshold_ms":2000})");
}

TEST(ReportCodec, StartupStallRoundTrips) {
  StartupStall in = Stall();
  in.process = "/opt/a \"quoted\"\\dir\n/x";
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<StartupStall>(out));
  const auto& s = std::get<StartupStall>(out);
  EXPECT_EQ(s.pid, in.pid);
  EXPECT_EQ(s.process, in.process);
  EXPECT_EQ(s.start_unix_ms, in.start_unix_ms);
  EXPECT_EQ(s.duration_ms, in.duration_ms);
  EXPECT_EQ(s.threshold_ms, in.threshold_ms);
}

TEST(ReportCodec, HangRoundTripsAndOtherTypesAreNotHangs) {
  HangRecord in;
  in.pid = 3;
  in.tid = 3;
  in.duration_ms = 500;
  in.samples = 1;
  in.hang_class = HangClass::kMixed;
  Record out;
  std::string error;
  const std::string line = Encode(in);
  ASSERT_TRUE(Decode(line, &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<HangRecord>(out));
  EXPECT_EQ(std::get<HangRecord>(out).duration_ms, 500u);
  EXPECT_EQ(std::get<HangRecord>(out).hang_class, HangClass::kMixed);
  EXPECT_EQ(Encode(std::get<HangRecord>(out)), line);

  HangRecord hang;
  EXPECT_TRUE(DecodeHang(line, &hang, &error)) << error;
  EXPECT_FALSE(DecodeHang(Encode(Stall()), &hang, &error));
  EXPECT_EQ(error, "not a hang record");
}

TEST(ReportCodec, UnknownTypesAndBrokenLines) {
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(R"({"type":"lag","format_version":1})", &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<UnknownRecord>(out));
  EXPECT_EQ(std::get<UnknownRecord>(out).type, "lag");

  EXPECT_FALSE(Decode(R"({"type":"startup_stall","pid":1)", &out, &error));
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(Decode(R"({"type":"startup_stall","pid":"1"})", &out, &error));
  EXPECT_EQ(error, "field 'pid' is not an integer");
}

}  // namespace
}  // namespace hangwatch::report
