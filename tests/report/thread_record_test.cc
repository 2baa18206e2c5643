// The "thread" of hang and lag records (docs/report-format.md, issue 39): its bytes, the format
// version a record of each role gets (1 for main, 2 for any other role), how it decodes back,
// what a record without it reads as, and the types the decoder checks in it.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "report/record_scan.h"
#include "report/report_decode.h"
#include "report/report_record.h"

namespace hangwatch::report {
namespace {

HangRecord Hang(std::string role, std::string name) {
  HangRecord h;
  h.pid = 10;
  h.tid = 1234;
  h.thread_role = std::move(role);
  h.thread_name = std::move(name);
  h.duration_ms = 60;
  h.samples = 1;
  h.signature = "00000000000000aa";
  h.fingerprint = "00000000000000bb";
  return h;
}

TEST(ThreadRecord, MainThreadHangStaysVersionOneWithItsIdentity) {
  const std::string line = Encode(Hang("main", "demo"));
  EXPECT_EQ(line.rfind(R"({"type":"hang","format_version":1,"pid":10,"tid":1234,)"
                       R"("thread":{"tid":1234,"name":"demo","role":"main"},"process":)",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find(R"("fingerprint":"00000000000000bb","signature":"00000000000000aa")"),
            std::string::npos);
  // An empty role is the main thread's (agents that watched only it): version 1, role "main",
  // no name when there is none.
  EXPECT_NE(Encode(Hang("", ""))
                .find(R"("format_version":1,"pid":10,"tid":1234,)"
                      R"("thread":{"tid":1234,"role":"main"},)"),
            std::string::npos);
}

TEST(ThreadRecord, OtherRolesAreVersionTwoAndReadBack) {
  const std::string line = Encode(Hang("render", "RenderThread"));
  EXPECT_EQ(line.rfind(R"({"type":"hang","format_version":2,"pid":10,"tid":1234,)"
                       R"("thread":{"tid":1234,"name":"RenderThread","role":"render"},)",
                       0),
            0u)
      << line;
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(line, &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<HangRecord>(out));
  const auto& h = std::get<HangRecord>(out);
  EXPECT_EQ(h.tid, 1234);
  EXPECT_EQ(h.thread_role, "render");
  EXPECT_EQ(h.thread_name, "RenderThread");
  EXPECT_EQ(Encode(h), line);
  ScannedLine scanned;
  EXPECT_EQ(ScanLine(line, &scanned), LineKind::kHang);
  HangRecord decoded;
  EXPECT_TRUE(DecodeHang(line, &decoded, &error)) << error;
}

TEST(ThreadRecord, LagOfAnotherRoleIsVersionTwoAndCarriesItsThread) {
  Lag l;
  l.pid = 10;
  l.tid = 77;
  l.thread_name = "io-0";
  l.thread_role = "io";
  l.start_unix_ms = 1;
  l.end_unix_ms = 2;
  l.passes.Add(5'000'000);
  const std::string line = Encode(l);
  EXPECT_EQ(line.rfind(R"({"type":"lag","format_version":2,"pid":10,)", 0), 0u) << line;
  EXPECT_NE(line.find(R"("labels":{},"thread":{"tid":77,"name":"io-0","role":"io"},)"
                      R"("start_unix_ms":1,)"),
            std::string::npos)
      << line;
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(line, &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<Lag>(out));
  EXPECT_EQ(std::get<Lag>(out).tid, 77);
  EXPECT_EQ(std::get<Lag>(out).thread_role, "io");
  EXPECT_EQ(std::get<Lag>(out).thread_name, "io-0");
  EXPECT_EQ(Encode(std::get<Lag>(out)), line);
  ScannedLine scanned;
  EXPECT_EQ(ScanLine(line, &scanned), LineKind::kLag);
}

// The main thread's lag record says how many threads asked to be watched and were not; the
// field is written only when there were some, so other records keep their bytes.
TEST(ThreadRecord, LagSaysHowManyThreadsWereNotWatched) {
  Lag l;
  l.pid = 10;
  l.thread_role = "main";
  l.start_unix_ms = 1;
  l.end_unix_ms = 2;
  l.passes.Add(5'000'000);
  EXPECT_EQ(Encode(l).find("threads_not_watched"), std::string::npos);
  l.threads_not_watched = 3;
  const std::string line = Encode(l);
  EXPECT_NE(line.find(R"(]],"threads_not_watched":3})"), std::string::npos) << line;
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(line, &out, &error)) << error;
  EXPECT_EQ(std::get<Lag>(out).threads_not_watched, 3u);
  ScannedLine scanned;
  EXPECT_EQ(ScanLine(line, &scanned), LineKind::kLag);
  std::string bad = line;
  bad.replace(bad.find(":3}"), 3, R"(:"3"})");
  EXPECT_FALSE(Decode(bad, &out, &error));
  EXPECT_EQ(ScanLine(bad, &scanned), LineKind::kBad);
}

TEST(ThreadRecord, RecordsWithoutThreadAreTheMainThreads) {
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(R"({"pid":1,"tid":9,"start_unix_ms":0,"duration_ms":300,"cpu_ms":0,)"
                     R"("samples":0,"stacks":[]})",
                     &out, &error))
      << error;
  EXPECT_EQ(std::get<HangRecord>(out).thread_role, "main");
  EXPECT_EQ(std::get<HangRecord>(out).tid, 9);
  ASSERT_TRUE(Decode(R"({"type":"lag","format_version":1,"pid":1,"start_unix_ms":0,)"
                     R"("end_unix_ms":1,"busy_ms":0,"buckets":[]})",
                     &out, &error))
      << error;
  EXPECT_EQ(std::get<Lag>(out).thread_role, "main");
  EXPECT_EQ(std::get<Lag>(out).tid, 0);
}

TEST(ThreadRecord, MistypedThreadMakesTheLineBadForDecoderAndScanner) {
  const std::string head =
      R"({"type":"hang","format_version":2,"pid":1,"tid":9,"start_unix_ms":0,"duration_ms":3,)"
      R"("cpu_ms":0,"samples":0,"stacks":[],"thread":)";
  const char* bad[] = {R"("render")",
                       R"({"tid":"9","role":"render"})",
                       R"({"role":"render"})",
                       R"({"tid":9,"role":5})",
                       R"({"tid":9,"name":["x"]})",
                       R"({"tid":1.5,"role":"render"})",
                       "null"};
  for (const char* thread : bad) {
    SCOPED_TRACE(thread);
    const std::string line = head + thread + "}";
    Record out;
    std::string error;
    EXPECT_FALSE(Decode(line, &out, &error));
    EXPECT_NE(error.find("thread"), std::string::npos) << error;
    ScannedLine scanned;
    EXPECT_EQ(ScanLine(line, &scanned), LineKind::kBad);
  }
}

TEST(ThreadRecord, VersionsOneAndTwoAreReadOthersAreNot) {
  const std::string tail =
      R"(,"pid":1,"tid":9,"start_unix_ms":0,"duration_ms":3,"cpu_ms":0,"samples":0,"stacks":[]})";
  for (int v : {1, 2}) {
    Record out;
    std::string error;
    const std::string line = R"({"format_version":)" + std::to_string(v) + tail;
    ASSERT_TRUE(Decode(line, &out, &error)) << error;
    EXPECT_TRUE(std::holds_alternative<HangRecord>(out)) << v;
    ScannedLine scanned;
    EXPECT_EQ(ScanLine(line, &scanned), LineKind::kHang) << v;
  }
  for (int v : {0, 3}) {
    Record out;
    std::string error;
    const std::string line = R"({"format_version":)" + std::to_string(v) + tail;
    ASSERT_TRUE(Decode(line, &out, &error)) << error;
    ASSERT_TRUE(std::holds_alternative<UnknownRecord>(out)) << v;
    EXPECT_TRUE(std::get<UnknownRecord>(out).other_version);
    ScannedLine scanned;
    EXPECT_EQ(ScanLine(line, &scanned), LineKind::kOtherVersion) << v;
  }
}

}  // namespace
}  // namespace hangwatch::report
