// The report codec: the bytes of each record type, and each decoded back to what was encoded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <type_traits>
#include <variant>

#include "report/cause_kinds.h"
#include "report/record_scan.h"
#include "report/report_decode.h"
#include "report/report_record.h"
#include "report/utf8.h"

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

// A frame's function_start and the culprit's stack: written when known, read back; absent,
// they are 0 (files of older agents).
TEST(ReportCodec, FunctionStartAndCulpritStackRoundTrip) {
  HangRecord in;
  in.pid = 3;
  in.samples = 2;
  Stack a, b;
  Frame f;
  f.addr = 0x5e45e2;
  f.module = "/usr/bin/python3.11";
  f.build_id = "571d";
  f.offset = 0x5e45e2;
  a.frames.push_back(f);
  f.function_start = 0x5e4493;
  b.frames.push_back(f);
  b.id = 1;
  in.stacks = {a, b};
  in.dominant_stack = 0;
  in.culprit.module = f.module;
  in.culprit.offset = f.offset;
  in.culprit.frame = 0;
  in.culprit.stack = 1;
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"("function_start":"0x5e4493")"), std::string::npos) << line;
  EXPECT_EQ(line.find("function_start", line.find("function_start") + 1), std::string::npos)
      << "written only when known: " << line;
  EXPECT_NE(line.find(R"("frame":0,"stack":1})"), std::string::npos) << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  ASSERT_EQ(out.stacks.size(), 2u);
  EXPECT_EQ(out.stacks[0].frames[0].function_start, 0u);
  EXPECT_EQ(out.stacks[1].frames[0].function_start, 0x5e4493u);
  EXPECT_EQ(out.culprit.stack, 1);
  EXPECT_EQ(Encode(out), line);
  in.culprit.stack = 0;
  EXPECT_EQ(Encode(in).find(R"("stack":)"), std::string::npos) << "the dominant stack: as before";
  // Bad values are errors, not zeros.
  std::string bad = line;
  bad.replace(bad.find(R"("0x5e4493")"), 10, "12");
  EXPECT_FALSE(DecodeHang(bad, &out, &error));
  bad = line;
  bad.replace(bad.find(R"("stack":1)"), 9, R"("stack":-1)");
  EXPECT_FALSE(DecodeHang(bad, &out, &error));
}

// A Python frame: kind "python", the code object, the instruction, name, file and line; none
// of a native frame's module fields. It reads back as written, between native frames.
TEST(ReportCodec, PythonFramesRoundTripBetweenNativeOnes) {
  HangRecord in;
  in.pid = 3;
  in.samples = 1;
  Stack s;
  Frame native;
  native.addr = 0x7f0012345678;
  native.module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  native.offset = 0x12345678;
  s.frames.push_back(native);
  Frame py;
  py.language = FrameLanguage::kPython;
  py.addr = 0x7f00aabbcc00;
  py.offset = 42;
  py.symbol = "Handler.handle_request";
  py.file = "/srv/app.py";
  py.line = 42;
  s.frames.push_back(py);
  s.frames.push_back(native);
  in.stacks = {s};
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"({"kind":"python","code":"0x7f00aabbcc00","instr":42,)"
                      R"("symbol":"Handler.handle_request","file":"/srv/app.py","line":42})"),
            std::string::npos)
      << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  ASSERT_EQ(out.stacks.size(), 1u);
  ASSERT_EQ(out.stacks[0].frames.size(), 3u);
  EXPECT_EQ(out.stacks[0].frames[0].language, FrameLanguage::kNative);
  const Frame& back = out.stacks[0].frames[1];
  EXPECT_EQ(back.language, FrameLanguage::kPython);
  EXPECT_EQ(back.addr, py.addr);
  EXPECT_EQ(back.offset, 42u);
  EXPECT_EQ(back.symbol, py.symbol);
  EXPECT_EQ(back.line, 42);
  EXPECT_TRUE(back.module.empty());
  EXPECT_EQ(Encode(out), line);
  // A Python culprit says so ("kind": "python"), so readers name it as a Python function.
  in.culprit.symbol = py.symbol;
  in.culprit.file = py.file;
  in.culprit.line = py.line;
  in.culprit.offset = py.offset;
  in.culprit.frame = 1;
  in.culprit.language = FrameLanguage::kPython;
  const std::string with_culprit = Encode(in);
  EXPECT_NE(with_culprit.find(R"("culprit":{"kind":"python","symbol":"Handler.handle_request",)"),
            std::string::npos)
      << with_culprit;
  ASSERT_TRUE(DecodeHang(with_culprit, &out, &error)) << error;
  EXPECT_EQ(out.culprit.language, FrameLanguage::kPython);
  EXPECT_EQ(out.culprit.line, 42);
  EXPECT_EQ(Encode(out), with_culprit);
  std::string bad_culprit = with_culprit;
  bad_culprit.replace(bad_culprit.find(R"("kind":"python","symbol")"), 15, R"("kind":"perl00")");
  EXPECT_FALSE(DecodeHang(bad_culprit, &out, &error));
  // A kind this reader does not know is an error, not a native frame without an address.
  std::string bad = line;
  bad.replace(bad.find(R"("kind":"python")"), 15, R"("kind":"perl0")");
  EXPECT_FALSE(DecodeHang(bad, &out, &error));
  EXPECT_NE(error.find("kind"), std::string::npos) << error;
  // A stack whose Python chain was read in part says so; a whole one writes nothing more.
  EXPECT_EQ(line.find("partial"), std::string::npos) << line;
  in.stacks[0].partial = true;
  const std::string partial = Encode(in);
  EXPECT_NE(partial.find(R"("partial":true,"frames":[)"), std::string::npos) << partial;
  ASSERT_TRUE(DecodeHang(partial, &out, &error)) << error;
  EXPECT_TRUE(out.stacks[0].partial);
  EXPECT_EQ(Encode(out), partial);
}

// JavaScript and Ruby frames and culprits: "kind": "js" / "ruby", with Python's fields, and
// "line_is_definition" when the line is the function's first (absent otherwise).
TEST(ReportCodec, JsAndRubyFramesRoundTrip) {
  HangRecord in;
  in.pid = 3;
  in.samples = 1;
  Stack s;
  Frame js;
  js.language = FrameLanguage::kJs;
  js.addr = 0x3a2b00001000;
  js.symbol = "crunch";
  js.file = "/srv/app.js";
  js.line = 7;
  js.line_is_definition = true;
  Frame rb;
  rb.language = FrameLanguage::kRuby;
  rb.addr = 0x7f0000005000;
  rb.offset = 3;
  rb.symbol = "Worker#crunch";
  rb.file = "/srv/app.rb";
  rb.line = 12;
  s.frames = {js, rb};
  in.stacks = {s};
  in.culprit.symbol = js.symbol;
  in.culprit.file = js.file;
  in.culprit.line = js.line;
  in.culprit.frame = 0;
  in.culprit.language = FrameLanguage::kJs;
  in.culprit.line_is_definition = true;
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"({"kind":"js","code":"0x3a2b00001000","instr":0,"symbol":"crunch",)"
                      R"("file":"/srv/app.js","line":7,"line_is_definition":true})"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"({"kind":"ruby","code":"0x7f0000005000","instr":3,)"
                      R"("symbol":"Worker#crunch","file":"/srv/app.rb","line":12})"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("culprit":{"kind":"js","symbol":"crunch",)"), std::string::npos) << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  ASSERT_EQ(out.stacks[0].frames.size(), 2u);
  EXPECT_EQ(out.stacks[0].frames[0].language, FrameLanguage::kJs);
  EXPECT_TRUE(out.stacks[0].frames[0].line_is_definition);
  EXPECT_EQ(out.stacks[0].frames[1].language, FrameLanguage::kRuby);
  EXPECT_FALSE(out.stacks[0].frames[1].line_is_definition);
  EXPECT_EQ(out.culprit.language, FrameLanguage::kJs);
  EXPECT_TRUE(out.culprit.line_is_definition);
  EXPECT_EQ(Encode(out), line);
  // The scanning readers (top, the exporter) accept the same culprit, and no kind they don't know.
  report::ScannedLine scanned;
  EXPECT_EQ(report::ScanLine(line, &scanned), report::LineKind::kHang);
  std::string bad = line;
  bad.replace(bad.find(R"("culprit":{"kind":"js")"), 22, R"("culprit":{"kind":"jz")");
  EXPECT_EQ(report::ScanLine(bad, &scanned), report::LineKind::kBad);
}

// A Java frame (the JVM's thread dump's: hang/model/java_callers.h) has no address of its own:
// "kind": "java" with the method, file and line only, and reads back as it was written.
TEST(ReportCodec, JavaFramesRoundTripWithoutAnAddress) {
  HangRecord in;
  in.pid = 3;
  in.samples = 1;
  Frame java;
  java.language = FrameLanguage::kJava;
  java.symbol = "SlowServer.nap";
  java.file = "SlowServer.java";
  java.line = 23;
  Stack s;
  s.frames = {java};
  in.stacks = {s};
  in.culprit.symbol = java.symbol;
  in.culprit.file = java.file;
  in.culprit.line = java.line;
  in.culprit.language = FrameLanguage::kJava;
  in.culprit.frame = 0;
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"("culprit":{"kind":"java","symbol":"SlowServer.nap",)"), std::string::npos)
      << line;
  EXPECT_NE(line.find(R"({"kind":"java","symbol":"SlowServer.nap","file":"SlowServer.java",)"
                      R"("line":23})"),
            std::string::npos)
      << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  ASSERT_EQ(out.stacks[0].frames.size(), 1u);
  EXPECT_EQ(out.stacks[0].frames[0].language, FrameLanguage::kJava);
  EXPECT_EQ(out.stacks[0].frames[0].symbol, "SlowServer.nap");
  EXPECT_EQ(out.culprit.language, FrameLanguage::kJava);
  EXPECT_EQ(Encode(out), line);
  report::ScannedLine scanned;
  EXPECT_EQ(report::ScanLine(line, &scanned), report::LineKind::kHang);
}

TEST(ReportCodec, UnknownTypesAndBrokenLines) {
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(R"({"type":"frame_rate","format_version":1})", &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<UnknownRecord>(out));
  EXPECT_EQ(std::get<UnknownRecord>(out).type, "frame_rate");

  EXPECT_FALSE(Decode(R"({"type":"startup_stall","pid":1)", &out, &error));
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(Decode(R"({"type":"startup_stall","pid":"1"})", &out, &error));
  EXPECT_EQ(error, "field 'pid' is not an integer");
}

TEST(ReportCodec, HangCarriesHostAndLabels) {
  HangRecord in;
  in.pid = 3;
  in.host = "web-7";
  in.labels = {{"region", "eu"}, {"app_version", "2.4.1"}};
  const std::string line = Encode(in);
  EXPECT_NE(line.find(R"("host":"web-7","labels":{"app_version":"2.4.1","region":"eu"})"),
            std::string::npos)
      << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  EXPECT_EQ(out.host, "web-7");
  EXPECT_EQ(out.labels, in.labels);
  EXPECT_FALSE(DecodeHang(R"({"pid":1,"tid":1,"start_unix_ms":0,"duration_ms":1,"cpu_ms":0,)"
                          R"("samples":0,"stacks":[],"labels":{"a":1}})",
                          &out, &error));
  EXPECT_EQ(error, "field 'labels' is not an object of strings");
}

// "phase": written for the start-up and shutdown phases only; absent (older files, and the run
// phase) and unknown values read as the run phase; not a string, the line is bad.
TEST(ReportCodec, HangPhaseIsAdditive) {
  const std::string minimal =
      R"({"pid":1,"tid":1,"start_unix_ms":0,"duration_ms":1,"cpu_ms":0,"samples":0,"stacks":[])";
  HangRecord out;
  std::string error;
  for (HangPhase p : {HangPhase::kRun, HangPhase::kStartup, HangPhase::kShutdown}) {
    HangRecord in;
    in.phase = p;
    const std::string line = Encode(in);
    EXPECT_EQ(line.find("\"phase\"") != std::string::npos, p != HangPhase::kRun) << line;
    ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
    EXPECT_EQ(out.phase, p) << line;
  }
  ASSERT_TRUE(DecodeHang(minimal + "}", &out, &error)) << error;
  EXPECT_EQ(out.phase, HangPhase::kRun);
  ASSERT_TRUE(DecodeHang(minimal + R"(,"phase":"teardown"})", &out, &error)) << error;
  EXPECT_EQ(out.phase, HangPhase::kRun);
  EXPECT_FALSE(DecodeHang(minimal + R"(,"phase":2})", &out, &error));
}

// Bytes that are not UTF-8 (a program path, argv[0], a label, a host name, a symbol) become
// U+FFFD each (report/utf8.h): the line stays one JSON document any reader accepts. A line an
// older agent wrote with the raw bytes is read with the same rule.
TEST(ReportCodec, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string kBad = "\xff\xfe";                             // never UTF-8
  const std::string kCut = "\xc3";                                 // a sequence cut short
  const std::string kOverlong = "\xc0\xaf";                        // '/' in two bytes: not allowed
  const std::string kFffd = "\xef\xbf\xbd", kUmlaut = "\xc3\xa4";  // U+FFFD, valid 'a-umlaut'
  HangRecord in;
  in.pid = 3;
  in.process = "/opt/" + kBad + "/app";
  in.process_name = "app" + kCut;
  in.host = "h" + kOverlong;
  in.labels = {{"team" + kBad, kUmlaut + kBad}};
  Stack s;
  Frame f;
  f.module = in.process;
  f.symbol = "Load" + kBad + "(int)";
  s.frames.push_back(f);
  s.count = 1;
  in.stacks.push_back(s);
  const std::string line = Encode(in);
  EXPECT_TRUE(IsValidUtf8(line)) << line;
  HangRecord out;
  std::string error;
  ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
  EXPECT_EQ(out.process, "/opt/" + kFffd + kFffd + "/app");
  EXPECT_EQ(out.process_name, "app" + kFffd);
  EXPECT_EQ(out.host, "h" + kFffd + kFffd);
  EXPECT_EQ(
      out.labels,
      (std::map<std::string, std::string>{{"team" + kFffd + kFffd, kUmlaut + kFffd + kFffd}}));
  EXPECT_EQ(out.stacks[0].frames[0].symbol, "Load" + kFffd + kFffd + "(int)");

  // The same record as agents before this rule wrote it: raw bytes inside the strings.
  HangRecord plain = in;
  plain.process_name = "app@";
  std::string raw = Encode(plain);
  raw.replace(raw.find("app@"), 4, "app" + kBad);
  ASSERT_FALSE(IsValidUtf8(raw));
  ASSERT_TRUE(DecodeHang(raw, &out, &error)) << error;
  EXPECT_EQ(out.process_name, "app" + kFffd + kFffd);
  Record record;
  ASSERT_TRUE(Decode(raw, &record, &error)) << error;
  EXPECT_TRUE(std::holds_alternative<HangRecord>(record));
}

// The pass lengths of the lag contract's example: 1,900 x 1 ms, 80 x 20 ms, 20 x 40 ms.
Lag KnownLag() {
  Lag l;
  l.pid = 42;
  l.process_name = "app";
  l.host = "h1";
  l.labels = {{"build", "17"}};
  l.start_unix_ms = 1763700000000;
  l.end_unix_ms = 1763700060000;
  for (int i = 0; i < 1900; ++i) l.passes.Add(1'000'000);
  for (int i = 0; i < 80; ++i) l.passes.Add(20'000'000);
  for (int i = 0; i < 20; ++i) l.passes.Add(40'000'000);
  return l;
}

TEST(ReportCodec, LagLineHasTheFiguresOfItsPasses) {
  const std::string line = Encode(KnownLag());
  EXPECT_EQ(line.rfind(R"({"type":"lag","format_version":1,"pid":42,"process_name":"app",)"
                       R"("host":"h1","labels":{"build":"17"},"thread":{"tid":0,"role":"main"},)"
                       R"("start_unix_ms":1763700000000,)"
                       R"("end_unix_ms":1763700060000,"passes":2000,"busy_ms":4300.000,)",
                       0),
            0u)
      << line;
  // Midpoints of the buckets holding 1, 20 and 40 ms.
  EXPECT_NE(line.find(R"("p50_ms":1.004,"p90_ms":1.004,"p95_ms":20.054,"p99_ms":40.108,)"
                      R"("max_ms":40.108,)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("slow_passes":{"16":100,"33":20,"50":0,"100":0,"250":0,"500":0,)"
                      R"("1000":0})"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("buckets":[[1007.616,1900],[20185.088,80],[40370.176,20]]})"),
            std::string::npos)
      << line;
}

TEST(ReportCodec, LagRoundTripsAndRecordsMergeByAddition) {
  const Lag in = KnownLag();
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<Lag>(out));
  const Lag& l = std::get<Lag>(out);
  EXPECT_EQ(Encode(l), Encode(in));
  EXPECT_EQ(l.labels, in.labels);

  PassHistogram all = l.passes;
  all.Merge(l.passes);
  const LagFigures f = all.Figures();
  EXPECT_EQ(f.passes, 4000u);
  EXPECT_EQ(f.slow_passes[0], 200u);
  EXPECT_DOUBLE_EQ(f.busy_ms, 8600.0);
  EXPECT_NEAR(f.p95_ms, 20.0, 0.2);

  EXPECT_FALSE(Decode(R"({"type":"lag","pid":1,"start_unix_ms":0,"end_unix_ms":1,"busy_ms":0,)"
                      R"("buckets":[[10,"x"]]})",
                      &out, &error));
  EXPECT_EQ(error, "a bucket is not [upper_bound_us, count]");
  EXPECT_FALSE(Decode(R"({"type":"lag","pid":1,"start_unix_ms":0,"end_unix_ms":1,"busy_ms":0})",
                      &out, &error));
  EXPECT_EQ(error, "field 'buckets' is missing");
}

// Each kind of cause is one row of kCauseKinds: its key reads back as the kind, a cause of it
// encodes the evidence its row names and decodes back with its text, and its resolver exists.
TEST(ReportCodec, EveryCauseKindIsOneRowThatEveryReaderFollows) {
  std::string root = __FILE__;  // .../tests/report/report_codec_test.cc
  root.resize(root.rfind("/tests/report/"));
  EXPECT_EQ(CauseKindFromKey("no-such-kind"), CauseKind::kNone);
  EXPECT_EQ(FindCauseKind(CauseKind::kNone), nullptr);
  EXPECT_EQ(FindCauseKind(static_cast<CauseKind>(kNumCauseKinds + 1)), nullptr);
  EXPECT_FALSE(IsKnownCauseKind(kNumCauseKinds + 1));
  for (const CauseKindRow& row : kCauseKinds) {
    SCOPED_TRACE(std::string(row.key));
    EXPECT_EQ(CauseKindFromKey(row.key), row.kind);
    EXPECT_TRUE(IsKnownCauseKind(static_cast<uint8_t>(row.kind)));
    const std::string resolver(row.resolver.substr(0, row.resolver.find_first_of(" ,")));
    if (resolver.find('/') != std::string::npos) {
      EXPECT_EQ(access((root + "/" + resolver).c_str(), R_OK), 0) << resolver;
    }
    HangRecord in;
    in.pid = 1;
    in.cause.kind = row.kind;
    in.cause.syscall = "nanosleep(...)";
    in.cause.summary = DescribeCause(in.cause, 300);
    EXPECT_FALSE(in.cause.summary.empty());
    const std::string line = Encode(in);
    EXPECT_NE(line.find("\"kind\":\"" + std::string(row.key) + "\""), std::string::npos);
    EXPECT_EQ(line.find("\"cycle\"") != std::string::npos, (row.evidence & kEvidenceCycle) != 0);
    EXPECT_EQ(line.find("\"chain\"") != std::string::npos, (row.evidence & kEvidenceLocks) != 0);
    EXPECT_EQ(line.find("\"child\"") != std::string::npos, (row.evidence & kEvidenceChild) != 0);
    EXPECT_EQ(line.find("\"sleep_ms\"") != std::string::npos, (row.evidence & kEvidenceSleep) != 0);
    EXPECT_EQ(line.find("\"wchan\"") != std::string::npos, (row.evidence & kEvidenceFiles) != 0);
    EXPECT_EQ(line.find("\"run_delay_ms\"") != std::string::npos,
              (row.evidence & kEvidenceScheduling) != 0);
    HangRecord out;
    std::string error;
    ASSERT_TRUE(DecodeHang(line, &out, &error)) << error;
    EXPECT_EQ(out.cause.kind, row.kind);
    EXPECT_EQ(DescribeCause(out.cause, 300), in.cause.summary);
  }
}

// The queued + running histogram ("delay") is written only when a pass had a known wait, and
// reads back as written; records merge by addition, one without it counting its passes' time.
TEST(ReportCodec, LagDelayRoundTripsAndMerges) {
  Lag plain;
  plain.pid = 3;
  for (int i = 0; i < 10; ++i) plain.passes.Add(1'000'000);
  EXPECT_EQ(Encode(plain).find("delay"), std::string::npos);
  Lag queued = plain;
  queued.queued_passes = 1;
  queued.queued_passes_lost = 2;
  for (int i = 0; i < 9; ++i) queued.delay.Add(1'000'000);
  queued.delay.Add(80'000'000);
  const std::string line = Encode(queued);
  EXPECT_NE(line.find(R"("delay":{"queued_passes":1,"lost":2,"p50_ms":)"), std::string::npos)
      << line;
  Record r;
  std::string error;
  ASSERT_TRUE(Decode(line, &r, &error)) << error;
  const Lag& back = std::get<Lag>(r);
  EXPECT_EQ(back.queued_passes, 1u);
  EXPECT_EQ(back.queued_passes_lost, 2u);
  EXPECT_EQ(back.delay.passes(), 10u);
  EXPECT_NEAR(back.delay.Figures().max_ms, 80, 1);
  EXPECT_EQ(Encode(back), line);

  Lag total;
  AddLag(&total, plain);
  EXPECT_EQ(total.delay.passes(), 0u);  // nothing waited yet: no second histogram kept
  AddLag(&total, back);
  AddLag(&total, plain);
  EXPECT_EQ(total.passes.passes(), 30u);
  EXPECT_EQ(total.delay.passes(), 30u);
  EXPECT_EQ(total.queued_passes, 1u);
  EXPECT_NEAR(DelayOf(total).Figures().max_ms, 80, 1);
  EXPECT_NEAR(DelayOf(plain).Figures().max_ms, 1, 0.1);
}

TEST(ReportCodec, TheLagRecordOfCallbacksIsTheRecordWritten) {
  // AddLagCallback()'s LagRecord and the codec's Lag are one type: a record read back from a
  // file is what a callback receives, with no copy between two look-alike structs to go stale.
  static_assert(std::is_same_v<Lag, hangwatch::LagRecord>);
  hangwatch::LagRecord in = KnownLag();
  Record out;
  std::string error;
  ASSERT_TRUE(Decode(Encode(in), &out, &error)) << error;
  ASSERT_TRUE(std::holds_alternative<hangwatch::LagRecord>(out));
  const hangwatch::LagRecord& read = std::get<hangwatch::LagRecord>(out);
  EXPECT_EQ(read.process_name, "app");
  EXPECT_EQ(read.passes.passes(), 2000u);
}

}  // namespace
}  // namespace hangwatch::report
