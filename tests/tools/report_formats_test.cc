// The output formats on known records: what each section and line says, and that the machine
// formats are valid (SVG well-formed XML, trace-event structure, JUnit against the schema).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/report_record.h"
#include "tools/reader/report_reader.h"
#include "tools/report/formats/report_formats.h"
#include "tools/run/junit.h"
#include "trace_check.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::CountLines;
using hangwatch::testing::Has;
using hangwatch::testing::ReadFile;
using hangwatch::testing::RunCommand;
using hangwatch::testing::TempDir;
using hangwatch::testing::WriteFile;

Report Load(const std::string& name) {
  Report r;
  std::string error;
  EXPECT_TRUE(ParseJsonLines(ReadFile(std::string(FUZZ_CORPUS_DIR) + "/" + name), &r, &error))
      << error;
  return r;
}

TEST(ReportFormats, TextHasTheSectionsOfAHangReport) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("startup_stall.jsonl"), &r);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Process:          /bin/a [1]")) << t;
  EXPECT_TRUE(Has(t, "Culprit:          Load(int) (a.cc:12) in a\n")) << t;
  EXPECT_TRUE(Has(t, "Date/Time:        2025-11-21 04:40:00.123 UTC")) << t;
  EXPECT_TRUE(Has(t, "FATAL")) << t;
  EXPECT_TRUE(Has(t, "Duration:         412 ms or more (threshold 250 ms)")) << t;
  EXPECT_TRUE(Has(t, "Stopped:          5 ms")) << t;
  EXPECT_TRUE(Has(t, "CPU:              10 ms (2%)")) << t;
  EXPECT_TRUE(Has(t, "Class:            blocked")) << t;
  EXPECT_TRUE(Has(t, "Dominant stack: 2 of 3 samples")) << t;
  // Per-frame sample counts: both frames of the dominant stack are in its 2 samples.
  EXPECT_TRUE(Has(t, "      2  #0  libc.so.6")) << t;
  EXPECT_TRUE(Has(t, "Load(int)  a.cc:12")) << t;
  EXPECT_TRUE(Has(t, "Other stacks")) << t;
  // What the watchdog saw of this blocked pass: never "first seen busy".
  EXPECT_TRUE(Has(t, "Timeline of the blocked pass (ms since it began;")) << t;
  EXPECT_FALSE(Has(t, "busy")) << t;
  EXPECT_TRUE(Has(t, "Phase:            run\n")) << t << "no \"phase\" in the file: the run phase";
  EXPECT_TRUE(Has(t, "Thread state:     ? 25%, D 25%, S 50%")) << t;
  EXPECT_TRUE(Has(t, "Binary Images:")) << t;
  EXPECT_TRUE(Has(t, "<aa>  /lib/libc.so.6")) << t;
  EXPECT_TRUE(Has(t, "Start-up stall:   /usr/bin/x [7] took 3100 ms")) << t;
}

// The timeline's header names what the watchdog saw of the pass (the hang's class), and the
// header the phase; the summary line says when a hang is not of the run phase.
TEST(ReportFormats, TimelineHeaderAndPhaseFollowTheHang) {
  Report r = Load("small_fatal.jsonl");
  ASSERT_EQ(r.hangs.size(), 1u);
  r.hangs.push_back(r.hangs[0]);
  r.hangs[1].hang_class = HangClass::kBusy;
  r.hangs[1].phase = HangPhase::kShutdown;
  r.hangs.push_back(r.hangs[0]);
  r.hangs[2].hang_class = HangClass::kUnknown;
  r.hangs[2].phase = HangPhase::kStartup;
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Timeline of the blocked pass (ms since it began;")) << t;
  EXPECT_TRUE(Has(t, "Timeline of the busy pass (ms since it began;")) << t;
  EXPECT_TRUE(Has(t, "Timeline of the pass (ms since it began;")) << t;
  EXPECT_TRUE(Has(t, "Phase:            shutdown (a pass the process's exit ended)")) << t;
  EXPECT_TRUE(Has(t, "Phase:            startup (before the run loop's first wait)")) << t;
  const std::string s = FormatSummary(r, 8);
  EXPECT_TRUE(Has(s, "hangwatch: FATAL shutdown-phase 412 ms hang in")) << s;
  EXPECT_TRUE(Has(s, "hangwatch: FATAL startup-phase 412 ms hang in")) << s;
}

// What the pass was serving and whether a person waited: a Context: and an Input: line when
// known, nothing when not (docs/report-format.md, "Context and input").
TEST(ReportFormats, TextSaysWhatThePassServedAndWhetherAPersonWaited) {
  Report r = Load("small_fatal.jsonl");
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_FALSE(Has(FormatText(r), "Context:")) << "no context in the file";
  EXPECT_FALSE(Has(FormatText(r), "Input:"));
  r.hangs.push_back(r.hangs[0]);
  HangRecord& h = r.hangs[0];
  h.context.label = "thumbnail.decode";
  h.context.label_path = {"request", "thumbnail.decode"};
  h.context.has_trigger = true;
  h.context.trigger.kind = "tcp";
  h.context.trigger.peer = "127.0.0.1:40312";
  h.context.trigger.pid = 1234;
  h.context.trigger.process = "python3";
  h.input.known = true;
  h.input.events = 3;
  h.input.kinds = {"key", "motion"};
  h.input.oldest_known = true;
  h.input.oldest_ms = 1200;
  h.perceived = true;
  HangRecord& other = r.hangs[1];
  other.context.source = "timer";
  other.input.known = true;
  other.perceived = false;
  other.not_responding = true;
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t,
                  "Context:          request > thumbnail.decode; trigger tcp 127.0.0.1:40312 "
                  "(python3, pid 1234)\n"))
      << t;
  EXPECT_TRUE(Has(t,
                  "Input:            3 input events waited (key, motion), oldest 1.2 s; "
                  "perceived\n"))
      << t;
  EXPECT_TRUE(Has(t, "Context:          source timer\n")) << t;
  EXPECT_TRUE(Has(t, "Input:            no input waited; perceived: no; not responding\n")) << t;
  const std::string s = FormatSummary(r, 8);
  EXPECT_TRUE(Has(s, "Context: request > thumbnail.decode;")) << s;
  EXPECT_TRUE(Has(s, "Input: 3 input events waited")) << s;
}

TEST(ReportFormats, PerFrameCountsFollowTheDominantPath) {
  // Three stacks: A<-B<-main (5), C<-B<-main (3), D<-main (2). The dominant path's frames are
  // on the stack in 5 (A), 8 (B) and 10 (main) samples.
  HangRecord h;
  auto frame = [](const char* name, uint64_t off) {
    Frame f;
    f.module = "/bin/x";
    f.build_id = "ab";
    f.offset = off;
    f.addr = 0x1000 + off;
    f.symbol = name;
    return f;
  };
  h.stacks.resize(3);
  h.stacks[0].count = 5;
  h.stacks[0].frames = {frame("A", 1), frame("B", 2), frame("main", 3)};
  h.stacks[1].count = 3;
  h.stacks[1].frames = {frame("C", 4), frame("B", 2), frame("main", 3)};
  h.stacks[2].count = 2;
  h.stacks[2].frames = {frame("D", 5), frame("main", 3)};
  h.dominant_stack = 0;
  h.samples = 10;
  Report r;
  r.hangs.push_back(h);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "      5  #0 ")) << t;
  EXPECT_TRUE(Has(t, "      8  #1 ")) << t;
  EXPECT_TRUE(Has(t, "     10  #2 ")) << t;
  EXPECT_EQ(FormatFolded(r), "main;B;A 5\nmain;B;C 3\nmain;D 2\n");
}

// JavaScript and Ruby frames print like Python's: their kind, name and file:line; a JS line that
// is the function's first (not the running one) says so.
TEST(ReportFormats, TextNamesJsAndRubyFramesAndMarksADefinitionLine) {
  HangRecord h;
  h.stacks.resize(1);
  h.stacks[0].count = 1;
  Frame js;
  js.language = FrameLanguage::kJs;
  js.symbol = "crunch";
  js.file = "/srv/app.js";
  js.line = 4;
  js.line_is_definition = true;
  Frame rb;
  rb.language = FrameLanguage::kRuby;
  rb.symbol = "handle";
  rb.file = "/srv/app.rb";
  rb.line = 12;
  h.stacks[0].frames = {js, rb};
  h.dominant_stack = 0;
  h.samples = 1;
  Report r;
  r.hangs.push_back(h);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "app.js:4  [the function's first line]")) << t;
  EXPECT_TRUE(Has(t, "ruby")) << t;
  EXPECT_TRUE(Has(t, "app.rb:12\n")) << t;
}

TEST(ReportFormats, TextSaysHowSamplesWereTakenAndMarksGuessedFrames) {
  HangRecord h;
  h.stacks.resize(1);
  h.stacks[0].count = 3;
  h.stacks[0].frames.resize(3);
  const char* names[] = {"nanosleep", "Caller", "main"};
  const FrameMethod methods[] = {FrameMethod::kPc, FrameMethod::kCfi,
                                 FrameMethod::kFramePointerScan};
  for (size_t i = 0; i < 3; ++i) {
    h.stacks[0].frames[i].symbol = names[i];
    h.stacks[0].frames[i].method = methods[i];
  }
  h.dominant_stack = 0;
  h.samples = 3;
  for (SampleMethod m : {SampleMethod::kProc, SampleMethod::kProc, SampleMethod::kSignal}) {
    TimelineEntry t;
    t.stack = 0;
    t.state = m == SampleMethod::kProc ? 'S' : 'R';
    t.method = m;
    h.timeline.push_back(t);
  }
  Report r;
  r.hangs.push_back(h);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Sampled by:       signal 1, proc 2")) << t;
  EXPECT_TRUE(Has(t, "main  [found by stack scan]")) << t;
  EXPECT_FALSE(Has(t, "Caller  [found")) << t;
}

CauseThread CauseThreadOf(int64_t tid, const char* name, const char* leaf) {
  CauseThread t;
  t.tid = tid;
  t.name = name;
  t.syscall = "fsync(fd 3)";
  t.frames.resize(2);
  t.frames[0].symbol = "fsync";
  t.frames[1].symbol = leaf;
  return t;
}

TEST(ReportFormats, TextPrintsAnIoWaitsKernelStack) {
  HangRecord h;
  h.samples = 1;
  h.cause.kind = CauseKind::kIo;
  h.cause.summary = "waiting for I/O on /mnt/slow.txt in read(fd 4)";
  h.cause.kernel_stack = "request_wait_answer <- fuse_simple_request";
  Report r;
  r.hangs.push_back(h);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Waiting for:      waiting for I/O on /mnt/slow.txt")) << t;
  EXPECT_TRUE(Has(t, "Kernel stack:     request_wait_answer <- fuse_simple_request\n")) << t;
}

TEST(ReportFormats, TextSaysWhatTheHangWaitedForAndPrintsTheOwnersStack) {
  HangRecord h;
  h.tid = 100;
  h.stacks.resize(1);
  h.stacks[0].count = 1;
  h.stacks[0].frames.resize(1);
  h.stacks[0].frames[0].symbol = "futex_wait";
  h.dominant_stack = 0;
  h.samples = 1;
  h.monitor_pause_us = 42;
  h.cause.kind = CauseKind::kLock;
  h.cause.summary = "waiting for mutex 0x10 held by thread 1636 \"db-writer\", which is in fsync";
  h.cause.lock = CauseLock{"mutex", 0x10};
  h.cause.has_owner = true;
  h.cause.owner = CauseThreadOf(1636, "db-writer", "Journal::Flush");
  h.cause.owner.holds = h.cause.lock;
  h.cause.chain.push_back(h.cause.owner);
  Report r;
  r.hangs.push_back(h);
  std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Waiting for:      waiting for mutex 0x10 held by thread 1636")) << t;
  EXPECT_TRUE(Has(t, "Monitor pause:    42 us")) << t;
  EXPECT_TRUE(Has(t, "Thread 1636 \"db-writer\", holds mutex 0x10, in fsync(fd 3):")) << t;
  EXPECT_TRUE(Has(t, "Journal::Flush")) << t;
  EXPECT_FALSE(Has(t, "Kernel stack:")) << t;

  // A deadlock prints every thread of the cycle.
  r.hangs[0].cause.kind = CauseKind::kDeadlock;
  CauseThread main_thread = CauseThreadOf(100, "app", "Main::Save");
  main_thread.wants = CauseLock{"mutex", 0x10};
  main_thread.holds = CauseLock{"mutex", 0x20};
  CauseThread worker = CauseThreadOf(1636, "db-writer", "Journal::Flush");
  worker.wants = CauseLock{"mutex", 0x20};
  worker.holds = CauseLock{"mutex", 0x10};
  r.hangs[0].cause.cycle = {main_thread, worker};
  t = FormatText(r);
  EXPECT_TRUE(Has(t, "Deadlock: 2 threads wait for each other")) << t;
  EXPECT_TRUE(Has(t, "Thread 100 \"app\" (main thread), holds mutex 0x20, wants mutex 0x10")) << t;
  EXPECT_TRUE(Has(t, "Thread 1636 \"db-writer\", holds mutex 0x10, wants mutex 0x20")) << t;
  EXPECT_TRUE(Has(t, "Main::Save")) << t;
}

TEST(ReportFormats, FoldedStacksAreOuterFirstWithCounts) {
  const std::string f = FormatFolded(Load("small_fatal.jsonl"));
  EXPECT_TRUE(Has(f, "Load(int);read 2\n")) << f;
  EXPECT_TRUE(Has(f, "0x401100 1\n")) << f;
  EXPECT_EQ(hangwatch::testing::CountLines(f), 2u);
}

TEST(ReportFormats, JsonRoundTrips) {
  const Report r = Load("small_fatal.jsonl");
  Report again;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(FormatJsonLines(r), &again, &error)) << error;
  ASSERT_EQ(again.hangs.size(), 1u);
  EXPECT_EQ(again.hangs[0].fingerprint, r.hangs[0].fingerprint);
  EXPECT_EQ(again.hangs[0].stacks[0].frames[1].line, 12);
  EXPECT_EQ(again.hangs[0].timeline.size(), r.hangs[0].timeline.size());
}

TEST(ReportFormats, TraceIsValidTraceEventJsonWithOneSlicePerHang) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("valid_hang.jsonl"), &r);
  const std::string text = FormatTrace(r);
  EXPECT_EQ(hangwatch::testing::CheckTraceEvents(text), "") << text;
  const auto trace = nlohmann::json::parse(text);
  int hangs = 0, samples = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "hang") ++hangs;
    if (e["ph"] == "X" && e["cat"] == "sample") ++samples;
  }
  EXPECT_EQ(hangs, 2);
  EXPECT_GT(samples, 2);
  EXPECT_TRUE(Has(text, "\"name\":\"StallTheMainThread\"")) << text;
  // Not libc's read: the application's frame that called it, with its line.
  EXPECT_TRUE(Has(text, "\"culprit\":\"Load(int) (a.cc:12)\"")) << text;
  EXPECT_TRUE(Has(text, "in Load(int)\"")) << "the hang's slice is named after it: " << text;
}

TEST(ReportFormats, TraceHangSliceNamesItsCause) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("valid_hang.jsonl"), &r);
  r.hangs[0].cause.kind = CauseKind::kSleep;
  r.hangs[0].cause.summary = "slept 400 ms on the main thread (nanosleep(...))";
  const auto trace = nlohmann::json::parse(FormatTrace(r));
  std::vector<nlohmann::json> args;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "hang") args.push_back(e["args"]);
  }
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0]["cause"], "sleep");
  EXPECT_EQ(args[0]["cause_summary"], r.hangs[0].cause.summary);
  EXPECT_FALSE(args[1].contains("cause")) << args[1].dump();
}

TEST(ReportFormats, SvgIsWellFormedAndSelfContained) {
  TempDir dir;
  const std::string svg = FormatSvg(Load("small_fatal.jsonl"), "a <title> & more");
  WriteFile(dir / "f.svg", svg);
  const auto lint = RunCommand({"/usr/bin/xmllint", "--noout", dir / "f.svg"});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_TRUE(Has(svg, "<title>Load(int) (2 samples, 66.7%), culprit</title>")) << svg;
  EXPECT_TRUE(Has(svg, "<title>read (2 samples, 66.7%)</title>")) << svg;
  EXPECT_TRUE(Has(svg, "samples) in Load(int)</text>")) << "the title names the culprit: " << svg;
  EXPECT_TRUE(Has(svg, "a &lt;title&gt; &amp; more")) << svg;
  EXPECT_FALSE(Has(svg, "href")) << "no external references";
}

// A Python hang read back from its JSON Lines line: every format names its Python
// frames as py-spy does, by function, file and line, never by the code object's address.
Report PythonReport() {
  Report r;
  std::string error;
  EXPECT_TRUE(ParseJsonLines(report::Encode(hangwatch::testing::PythonHang()) + "\n", &r, &error))
      << error;
  return r;
}

TEST(ReportFormats, TextShowsPythonFramesByNameFileAndLine) {
  const Report r = PythonReport();
  ASSERT_EQ(r.hangs.size(), 1u);
  const std::string t = FormatText(r);
  EXPECT_TRUE(Has(t, "Culprit:          Handler.handle_request (/srv/app.py:42)\n")) << t;
  // The frame line: "python" where a module would be, no address.
  EXPECT_TRUE(Has(t,
                  "#3  python                                          Handler.handle_request  "
                  "/srv/app.py:42\n"))
      << t;
  EXPECT_TRUE(Has(t, "BaseServer.serve_forever  /usr/lib/python3.11/socketserver.py:233\n")) << t;
  // Per-frame counts: the JSON stack's Handler.handle_request is at another line (another
  // instruction of the same code object), so only the 6 samples at line 42 pass through #3.
  EXPECT_TRUE(Has(t, "      6  #3  python ")) << t;
  EXPECT_TRUE(Has(t, "      8  #4  python ")) << t;
  EXPECT_FALSE(Has(t, "0x7f3a1")) << "no code object's address: " << t;
  // The native frames around them stay as they are.
  EXPECT_TRUE(Has(t, "python3.11+0x5d64b4")) << t;
  EXPECT_TRUE(Has(t, "clock_nanosleep")) << t;
  // Other stacks: the short names.
  EXPECT_TRUE(Has(t, "JSONEncoder.iterencode (encoder.py:258)")) << t;
  const std::string summary = FormatSummary(r, 8);
  EXPECT_TRUE(Has(summary, "Handler.handle_request (/srv/app.py:42)")) << summary;
}

TEST(ReportFormats, FoldedSvgAndTraceNamePythonFramesAsTheCulpritIsNamed) {
  const Report r = PythonReport();
  const std::string f = FormatFolded(r);
  EXPECT_TRUE(Has(f,
                  ";<module> (app.py:99);BaseServer.serve_forever (socketserver.py:233);"
                  "Server.serve (app.py:80);Handler.handle_request (app.py:42);"
                  "python3.11+0x52b9e0;python3.11+0x5d64b4;clock_nanosleep 6\n"))
      << f;
  EXPECT_FALSE(Has(f, "0x7f3a1")) << f;
  // The culprit's frame is outlined in the flame graph: the same name.
  const std::string svg = FormatSvg(r, "py");
  EXPECT_TRUE(Has(svg,
                  "<title>Handler.handle_request (app.py:42) (6 samples, 75.0%), culprit"
                  "</title>"))
      << svg;
  EXPECT_TRUE(Has(svg, "samples) in Handler.handle_request (app.py:42)</text>")) << svg;
  TempDir dir;
  WriteFile(dir / "f.svg", svg);
  EXPECT_EQ(RunCommand({"/usr/bin/xmllint", "--noout", dir / "f.svg"}).exit_code, 0);
  const std::string text = FormatTrace(r);
  EXPECT_EQ(hangwatch::testing::CheckTraceEvents(text), "") << text;
  const auto trace = nlohmann::json::parse(text);
  bool python_slice = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "hang") {
      EXPECT_EQ(e["args"]["culprit"], "Handler.handle_request (/srv/app.py:42)") << e.dump();
      EXPECT_TRUE(Has(e["name"], "in Handler.handle_request (app.py:42)")) << e.dump();
    }
    if (e["ph"] == "X" && e["name"] == "Server.serve (app.py:80)") {
      python_slice = true;
      EXPECT_EQ(e["args"]["kind"], "python") << e.dump();
      EXPECT_EQ(e["args"]["location"], "/srv/app.py:80") << e.dump();
      EXPECT_FALSE(e["args"].contains("offset")) << e.dump();
    }
  }
  EXPECT_TRUE(python_slice) << text;
}

TEST(ReportFormats, PythonHangRoundTripsThroughJsonLines) {
  const Report r = PythonReport();
  Report again;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(FormatJsonLines(r), &again, &error)) << error;
  ASSERT_EQ(again.hangs.size(), 1u);
  EXPECT_EQ(again.hangs[0].culprit.language, FrameLanguage::kPython);
  EXPECT_EQ(again.hangs[0].signature, r.hangs[0].signature);
  EXPECT_EQ(again.hangs[0].stacks[0].frames[3].language, FrameLanguage::kPython);
  EXPECT_EQ(again.hangs[0].stacks[0].frames[3].addr, r.hangs[0].stacks[0].frames[3].addr);
}

// A hostile report's stack of 40,000 frames (the writer's recursion, one C++ frame per stack
// frame, overflowed the stack): every format renders it, the flame graph with every frame.
TEST(ReportFormats, AStackOf40000FramesRendersInEveryFormat) {
  TempDir dir;
  HangRecord h;
  h.pid = 7;
  h.tid = 7;
  h.process = "/srv/app";
  h.duration_ms = 500;
  h.samples = 3;
  Stack s;
  s.count = 3;
  for (int i = 0; i < 40000; ++i) {
    Frame f;
    f.module = "/srv/app";
    f.offset = 0x1000 + static_cast<uint64_t>(i);
    f.addr = 0x560000000000 + f.offset;
    f.symbol = "Recurse" + std::to_string(i % 7);
    s.frames.push_back(f);
  }
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.modules.push_back({"/srv/app", 0x560000000000, ""});
  const std::string report = dir / "deep.jsonl";
  WriteFile(report, report::Encode(h) + "\n");
  for (const std::string format : {"text", "json", "folded", "svg", "trace", "pprof", "html"}) {
    const std::string out = dir / ("deep." + format);
    const auto r = RunCommand(
        {HANGWATCH_CLI, "report", "--no-symbolize", "--format", format, "-o", out, report});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
  }
  const std::string svg = ReadFile(dir / "deep.svg");
  size_t boxes = 0;
  for (size_t at = 0; (at = svg.find("<g class=\"frame", at)) != std::string::npos; ++at) ++boxes;
  EXPECT_EQ(boxes, 40001u);  // the root and every frame
  EXPECT_EQ(CountLines(ReadFile(dir / "deep.folded")), 1u);
}

TEST(ReportFormats, JunitValidatesAgainstTheSchema) {
  TempDir dir;
  Report hangs = Load("small_fatal.jsonl");
  MergeReport(Load("valid_hang.jsonl"), &hangs);
  MergeReport(Load("valid_hang.jsonl"), &hangs);  // the same fingerprint twice: one test case
  const std::string xml = FormatJunit(hangs, "cmd <with> \"quotes\" & stuff", 1.5);
  WriteFile(dir / "hangs.xml", xml);
  WriteFile(dir / "clean.xml", FormatJunit(Report{}, "healthy", 0.25));
  for (const char* f : {"hangs.xml", "clean.xml"}) {
    const auto v = RunCommand({"/usr/bin/xmllint", "--noout", "--schema", JUNIT_XSD, dir / f});
    EXPECT_EQ(v.exit_code, 0) << f << ": " << v.err << ReadFile(dir / f);
  }
  EXPECT_TRUE(Has(xml, "tests=\"2\" failures=\"2\"")) << xml;
  EXPECT_TRUE(Has(xml, "stalled 2 times")) << xml;
  EXPECT_TRUE(Has(xml, "in StallTheMainThread")) << xml;
  EXPECT_TRUE(Has(ReadFile(dir / "clean.xml"), "tests=\"1\" failures=\"0\""));
}

// redis-server blocked in DEBUG SLEEP: the test case is named after debugCommand (frame #2), not
// after libc's clock_nanosleep (frame #0), and after the process's name, not the symlink's
// target.
HangRecord RedisDebugSleep() {
  HangRecord h;
  h.pid = 77;
  h.tid = 77;
  h.process = "/usr/bin/redis-check-rdb";
  h.process_name = "redis-server";
  h.duration_ms = 1000;
  h.samples = 40;
  h.fingerprint = "00000000000000aa";
  Stack s;
  s.count = 40;
  auto frame = [](const char* module, uint64_t offset, const char* symbol) {
    Frame f;
    f.module = module;
    f.offset = offset;
    f.addr = 0x1000000 + offset;
    f.symbol = symbol;
    return f;
  };
  s.frames = {frame("/usr/lib/x86_64-linux-gnu/libc.so.6", 0xcf545, "clock_nanosleep"),
              frame("/usr/lib/x86_64-linux-gnu/libc.so.6", 0xd4c33, "usleep"),
              frame("/usr/bin/redis-check-rdb", 0x10a3f1, "debugCommand"),
              frame("/usr/bin/redis-check-rdb", 0x5b1a2, "call")};
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  return h;
}

TEST(ReportFormats, JunitNamesTheCulpritAndTheProcessByItsName) {
  Report r;
  r.hangs.push_back(RedisDebugSleep());  // an older agent's record: no culprit written
  const std::string xml = FormatJunit(r, "redis", 1.0);
  EXPECT_TRUE(Has(xml, "name=\"hang 00000000000000aa in debugCommand\"")) << xml;
  EXPECT_TRUE(Has(xml, "classname=\"hangwatch.redis-server\"")) << xml;
  EXPECT_FALSE(Has(xml, "in clock_nanosleep")) << xml;
  // A recorded culprit (with a line from offline symbolization) is used as it is.
  r.hangs[0].culprit.symbol = "debugCommand";
  r.hangs[0].culprit.module = "/usr/bin/redis-check-rdb";
  r.hangs[0].culprit.file = "debug.c";
  r.hangs[0].culprit.line = 935;
  r.hangs[0].culprit.frame = 2;
  const std::string again = FormatJunit(r, "redis", 1.0);
  EXPECT_TRUE(Has(again, "in debugCommand at debug.c:935")) << again;
  // As the agent wrote it under the preload shim (redis-cli DEBUG SLEEP 0.5).
  const std::string real = FormatJunit(Load("redis_culprit.jsonl"), "redis", 1.0);
  EXPECT_TRUE(Has(real, " in debugCommand\"")) << real;
  EXPECT_TRUE(Has(real, "classname=\"hangwatch.redis-server\"")) << real;
  const std::string summary = FormatSummary(r, 8);
  EXPECT_TRUE(Has(summary, "hang in redis-server [77] at debugCommand (debug.c:935)")) << summary;
}

// The table that `hangwatch report`'s usage, --format check and dispatch read.
TEST(ReportFormatTable, EachRowRendersWhatItsFormatFunctionDoes) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("valid_hang.jsonl"), &r);
  const std::string title = "Hangs <of> a";
  std::string pprof, error;
  ASSERT_TRUE(FormatPprof(r, &pprof, &error)) << error;
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"text", FormatText(r)},        {"json", FormatJsonLines(r)}, {"folded", FormatFolded(r)},
      {"svg", FormatSvg(r, title)},   {"trace", FormatTrace(r)},    {"pprof", pprof},
      {"html", FormatHtml(r, title)},
  };
  ASSERT_EQ(ReportFormats().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const ReportFormat& f = ReportFormats()[i];
    EXPECT_EQ(f.name, expected[i].first) << "--help order";
    std::string out, render_error;
    ASSERT_TRUE(f.render(r, FormatOptions{title}, &out, &render_error)) << f.name << render_error;
    EXPECT_EQ(out, expected[i].second) << f.name;
    EXPECT_EQ(render_error, "") << f.name;
  }
}

TEST(ReportFormatTable, NamesAreFoundAndOnlyBinaryFormatsAskForAFile) {
  EXPECT_EQ(ReportFormatNames("|"), "text|json|folded|svg|trace|pprof|html");
  EXPECT_EQ(ReportFormatNames(", "), "text, json, folded, svg, trace, pprof, html");
  for (const ReportFormat& f : ReportFormats()) {
    EXPECT_EQ(FindReportFormat(f.name), &f) << f.name;
    EXPECT_FALSE(f.description.empty()) << f.name;
    // A binary format refused on a terminal names the -o file to give; a text format needs none.
    EXPECT_EQ(f.output == FormatOutput::kBinary, !f.binary_file.empty()) << f.name;
  }
  EXPECT_EQ(FindReportFormat("pprof")->output, FormatOutput::kBinary);
  EXPECT_EQ(FindReportFormat("text")->output, FormatOutput::kText);
  for (const char* name : {"", "pdf", "TEXT", "tex", "texts"}) {
    EXPECT_EQ(FindReportFormat(name), nullptr) << name;
  }
}

TEST(ReportFormatTable, HelpHasOneEntryPerRowInTheNameColumn) {
  const std::string help = ReportFormatsHelp();
  std::vector<std::string> entries;  // the lines of each format
  size_t at = 0;
  while (at < help.size()) {
    const size_t nl = help.find('\n', at);
    ASSERT_NE(nl, std::string::npos) << "every line ends: " << help;
    const std::string line = help.substr(at, nl - at);
    at = nl + 1;
    ASSERT_GT(line.size(), 10u) << line;
    if (line.compare(0, 10, std::string(10, ' ')) == 0) {
      ASSERT_FALSE(entries.empty()) << line;
      EXPECT_NE(line[10], ' ') << line;
      entries.back() += "\n" + line;
    } else {
      entries.push_back(line);
    }
  }
  ASSERT_EQ(entries.size(), ReportFormats().size()) << help;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ReportFormat& f = ReportFormats()[i];
    const std::string& e = entries[i];
    std::string head = "  " + std::string(f.name);
    head.resize(10, ' ');
    EXPECT_EQ(e.rfind(head + std::string(f.description), 0), 0u) << e;
    EXPECT_EQ(Has(e, "(binary: use -o)"), f.output == FormatOutput::kBinary) << e;
    EXPECT_EQ(Has(e, "(default)"), i == 0) << e;
  }
}

}  // namespace
}  // namespace hangwatch::tools
