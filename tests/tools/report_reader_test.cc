// The report reader: valid records, the format's skipping rules, malformed input.
#include "tools/reader/report_reader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <iterator>
#include <string>

#include "cli_util.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_jit_names.h"
#include "tools/reader/report_symbolize.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::ReadFile;
using hangwatch::testing::TempDir;
using hangwatch::testing::WriteFile;

const std::string kCorpus = FUZZ_CORPUS_DIR;

TEST(ReportReader, ReadsEveryFieldOfAHang) {
  Report r;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(ReadFile(kCorpus + "/small_fatal.jsonl"), &r, &error)) << error;
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.skipped_lines, 0u);
  const HangRecord& h = r.hangs[0];
  EXPECT_EQ(h.pid, 1);
  EXPECT_EQ(h.process, "/bin/a");
  EXPECT_EQ(h.hang_id, 3u);
  EXPECT_EQ(h.start_unix_ms, 1763700000123);
  EXPECT_EQ(h.duration_ms, 412u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_EQ(h.stopped_ms, 5u);
  EXPECT_EQ(h.failed_samples, 1u);
  EXPECT_TRUE(h.fatal);
  EXPECT_EQ(h.fingerprint, "0123456789abcdef");
  ASSERT_EQ(h.stacks.size(), 2u);
  EXPECT_EQ(h.stacks[0].count, 2u);
  EXPECT_EQ(h.stacks[0].cpu_us, 1000u);
  ASSERT_EQ(h.stacks[0].frames.size(), 2u);
  EXPECT_EQ(h.stacks[0].frames[0].addr, 0x7f0000001000u);
  EXPECT_EQ(h.stacks[0].frames[0].offset, 0x1000u);
  EXPECT_EQ(h.stacks[0].frames[0].symbol, "read");
  EXPECT_EQ(h.stacks[0].frames[1].file, "a.cc");
  EXPECT_EQ(h.stacks[0].frames[1].line, 12);
  ASSERT_EQ(h.timeline.size(), 4u);
  EXPECT_EQ(h.timeline[1].state, 'D');
  EXPECT_EQ(h.timeline[3].stack, -1);
  ASSERT_EQ(h.modules.size(), 2u);
  EXPECT_EQ(h.modules[1].base, 0x400000u);
}

TEST(ReportReader, TornLineIsSkippedOthersKept) {
  Report r;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(ReadFile(kCorpus + "/torn_then_valid.jsonl"), &r, &error));
  EXPECT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.skipped_lines, 1u);
  EXPECT_EQ(r.first_error.rfind("line 1: ", 0), 0u) << r.first_error;
}

TEST(ReportReader, StartupStallsAndUnknownTypes) {
  Report r;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(ReadFile(kCorpus + "/startup_stall.jsonl"), &r, &error));
  ASSERT_EQ(r.startup_stalls.size(), 1u);
  EXPECT_EQ(r.startup_stalls[0].duration_ms, 3100u);
  Report u;
  ASSERT_TRUE(ParseJsonLines(ReadFile(kCorpus + "/unknown_and_garbage.jsonl"), &u, &error));
  EXPECT_EQ(u.unknown_records, 1u);
  EXPECT_EQ(u.skipped_lines, 3u);
  EXPECT_TRUE(u.hangs.empty());
}

TEST(ReportReader, NoValidRecordIsMalformed) {
  Report r;
  std::string error;
  EXPECT_FALSE(ParseJsonLines("garbage\n{\"type\":\"hang\"}\n", &r, &error));
  EXPECT_NE(error.find("no valid record"), std::string::npos) << error;
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
  Report empty;
  EXPECT_TRUE(ParseJsonLines("", &empty, &error)) << "an empty report is valid";
  EXPECT_TRUE(ParseJsonLines("\n\n", &empty, &error));
}

TEST(ReportReader, MistypedFieldsAreNamed) {
  const std::string line = ReadFile(kCorpus + "/small_fatal.jsonl");
  HangRecord h;
  std::string error;
  ASSERT_TRUE(ParseHangLine(line, &h, &error)) << error;
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string l = line;
    l.replace(l.find(from), from.size(), to);
    HangRecord x;
    std::string e;
    EXPECT_FALSE(ParseHangLine(l, &x, &e)) << to;
    return e;
  };
  EXPECT_NE(broken("\"duration_ms\":412", "\"duration_ms\":\"412\"").find("'duration_ms'"),
            std::string::npos);
  EXPECT_NE(broken("\"addr\":\"0x401000\"", "\"addr\":\"401000\"").find("'addr'"),
            std::string::npos);
  EXPECT_NE(broken("\"addr\":\"0x401000\"", "\"addr\":\"0x1ffffffffffffffff\"").find("'addr'"),
            std::string::npos);
  EXPECT_NE(broken("\"pid\":1", "\"pid\":1.5").find("'pid'"), std::string::npos);
  EXPECT_NE(broken("\"samples\":3", "\"samples\":-3").find("'samples'"), std::string::npos);
  EXPECT_NE(broken("\"dominant_stack\":0", "\"dominant_stack\":7").find("dominant_stack"),
            std::string::npos);
}

TEST(ReportReader, OutOfRangeTimelineStackBecomesAFailedSample) {
  std::string line = ReadFile(kCorpus + "/small_fatal.jsonl");
  line.replace(line.find("\"stack\":1"), 9, "\"stack\":9");
  HangRecord h;
  std::string error;
  ASSERT_TRUE(ParseHangLine(line, &h, &error)) << error;
  EXPECT_EQ(h.timeline[2].stack, -1);
}

TEST(ReportReader, FrameAndSampleMethodsRoundTrip) {
  HangRecord in;
  in.pid = in.tid = 7;
  in.samples = 1;
  in.fingerprint = "0123456789abcdef";
  in.dominant_stack = 0;
  Stack s;
  s.count = 1;
  const FrameMethod methods[] = {
      FrameMethod::kPc,           FrameMethod::kCfi,          FrameMethod::kFramePointerScan,
      FrameMethod::kFramePointer, FrameMethod::kLinkRegister, FrameMethod::kUnknown};
  for (FrameMethod m : methods) {
    Frame f;
    f.addr = f.offset = 0x1000 + s.frames.size();
    f.method = m;
    s.frames.push_back(f);
  }
  in.stacks.push_back(s);
  TimelineEntry t;
  t.stack = 0;
  t.method = SampleMethod::kProc;
  in.timeline.push_back(t);
  HangRecord out;
  std::string error;
  std::string line = ToJsonLine(in);
  ASSERT_TRUE(ParseHangLine(line, &out, &error)) << error;
  ASSERT_EQ(out.stacks.size(), 1u);
  ASSERT_EQ(out.stacks[0].frames.size(), std::size(methods));
  for (size_t i = 0; i < std::size(methods); ++i) {
    EXPECT_EQ(out.stacks[0].frames[i].method, methods[i]) << i;
  }
  ASSERT_EQ(out.timeline.size(), 1u);
  EXPECT_EQ(out.timeline[0].method, SampleMethod::kProc);
  // A name from a newer writer reads as unknown; a mistyped one is an error.
  line.replace(line.find("\"fp-scan\""), 9, "\"zz-new\"");
  ASSERT_TRUE(ParseHangLine(line, &out, &error)) << error;
  EXPECT_EQ(out.stacks[0].frames[2].method, FrameMethod::kUnknown);
  line.replace(line.find("\"cfi\""), 5, "5");
  EXPECT_FALSE(ParseHangLine(line, &out, &error));
  EXPECT_NE(error.find("method"), std::string::npos) << error;
}

TEST(ReportReader, CulpritSignatureAndProcessNameRoundTrip) {
  HangRecord in;
  in.pid = 5;
  in.tid = 5;
  in.process = "/usr/bin/redis-check-rdb";
  in.process_name = "redis-server";
  in.fingerprint = "0123456789abcdef";
  in.signature = "fedcba9876543210";
  Stack s;
  s.count = 1;
  Frame f;
  f.module = "/usr/bin/redis-check-rdb";
  f.offset = 0x10a3f1;
  f.symbol = "debugCommand";
  s.frames.push_back(f);
  in.stacks.push_back(s);
  in.dominant_stack = 0;
  in.culprit = {"debugCommand", "/usr/bin/redis-check-rdb", 0x10a3f1, "debug.c", 935, 0};
  HangRecord out;
  std::string error;
  ASSERT_TRUE(ParseHangLine(ToJsonLine(in), &out, &error)) << error;
  EXPECT_EQ(out.process_name, "redis-server");
  EXPECT_EQ(out.signature, "fedcba9876543210");
  EXPECT_EQ(out.culprit.symbol, "debugCommand");
  EXPECT_EQ(out.culprit.module, "/usr/bin/redis-check-rdb");
  EXPECT_EQ(out.culprit.offset, 0x10a3f1u);
  EXPECT_EQ(out.culprit.file, "debug.c");
  EXPECT_EQ(out.culprit.line, 935);
  EXPECT_EQ(out.culprit.frame, 0);
  // No stack: "culprit":null reads as no culprit; a culprit of the wrong type is an error.
  HangRecord empty;
  ASSERT_NE(ToJsonLine(empty).find("\"culprit\":null"), std::string::npos);
  ASSERT_TRUE(ParseHangLine(ToJsonLine(empty), &out, &error)) << error;
  EXPECT_TRUE(out.culprit.empty());
  std::string bad = ToJsonLine(empty);
  bad.replace(bad.find("\"culprit\":null"), 14, "\"culprit\":7");
  EXPECT_FALSE(ParseHangLine(bad, &out, &error));
  EXPECT_NE(error.find("culprit"), std::string::npos) << error;
}

TEST(ReportReader, FilesThatCannotBeRead) {
  TempDir dir;
  Report r;
  std::string error;
  EXPECT_FALSE(ReadReportFile(dir / "missing.jsonl", &r, &error));
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  EXPECT_FALSE(ReadReportFile(dir.path(), &r, &error));
  EXPECT_NE(error.find(": a directory"), std::string::npos) << error;
  WriteFile(dir / "bad.jsonl", "\x01\x02 binary\n");
  EXPECT_FALSE(ReadReportFile(dir / "bad.jsonl", &r, &error));
  EXPECT_NE(error.find("malformed report"), std::string::npos) << error;
  // A file with the open-hang magic but nothing valid after it.
  WriteFile(dir / "open-hang", std::string("HWOPENHG") + std::string(40, '\xff'));
  EXPECT_FALSE(ReadReportFile(dir / "open-hang", &r, &error));
  EXPECT_NE(error.find("open-hang"), std::string::npos) << error;
}

// A function of this test binary for the symbolizer to find.
__attribute__((noinline)) int KnownFunctionOfThisBinary(int x) { return x * 3 + 1; }

// Offline symbolization looks up native frames only: a Python frame's address is a code
// object's, in no module; even one that claims a module (a damaged or hostile file) keeps the
// name, file and line it was recorded with, and its module is never opened for it.
TEST(ReportSymbolize, PythonFramesAreNeverLookedUpAsNativeAddresses) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&KnownFunctionOfThisBinary), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  const uint64_t offset = reinterpret_cast<uint64_t>(&KnownFunctionOfThisBinary) -
                          reinterpret_cast<uint64_t>(info.dli_fbase) + 1;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  Frame native;
  native.module = exe;
  native.offset = offset;
  native.addr = offset;
  Frame python;
  python.language = FrameLanguage::kPython;
  python.addr = offset;
  python.offset = offset;
  python.symbol = "Handler.handle_request";
  python.file = "/srv/app.py";
  python.line = 42;
  Frame claims_module = python;
  claims_module.module = exe;
  Report report;
  report.hangs.resize(1);
  Stack s;
  s.count = 1;
  s.frames = {native, python, claims_module};
  report.hangs[0].stacks = {s};
  report.hangs[0].dominant_stack = 0;
  TempDir dir;
  ReportSymbolizeOptions options;
  options.symbolizer.cache_dir = dir.path();
  options.symbolizer.debuginfod = false;
  std::vector<std::string> warnings;
  SymbolizeReport(options, &report, &warnings);
  const std::vector<Frame>& out = report.hangs[0].stacks[0].frames;
  ASSERT_EQ(out.size(), 3u);
  // The control: the native frame at that offset is named.
  EXPECT_NE(out[0].symbol.find("KnownFunctionOfThisBinary"), std::string::npos) << out[0].symbol;
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(out[i].language, FrameLanguage::kPython);
    EXPECT_EQ(out[i].symbol, "Handler.handle_request") << i;
    EXPECT_EQ(out[i].file, "/srv/app.py") << i;
    EXPECT_EQ(out[i].line, 42) << i;
  }
  EXPECT_EQ(report.dwarf_source_files.count("/srv/app.py"), 0u);
  // The culprit, recomputed after symbolization, is the Python function.
  EXPECT_EQ(report.hangs[0].culprit.language, FrameLanguage::kPython);
  EXPECT_EQ(report.hangs[0].culprit.frame, 1);
}

// A hang in JIT code (frames in no module) of a process whose runtime named its code in a perf
// map only after the record was written (the JVM's DumpPerfMapAtExit, whose lines these are): the
// map under `dir`, written after the hang began, names the frames and the culprit; the same map
// last modified before the hang began is an earlier process's with the same pid, and is not read.
TEST(ReportReader, JitFramesAreNamedFromAPerfMapWrittenAfterTheHangBegan) {
  TempDir dir;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto make_report = [&] {
    Report report;
    HangRecord h;
    h.pid = 4242;
    h.host = host;
    h.start_unix_ms = now_ms - 5000;
    Stack s;
    s.count = 3;
    for (uint64_t addr : {0x7f0000001010ull, 0x7f0000002040ull}) {
      Frame f;  // in no module: its offset is its address
      f.addr = f.offset = addr;
      s.frames.push_back(f);
    }
    h.stacks.push_back(s);
    h.dominant_stack = 0;
    report.hangs.push_back(h);
    return report;
  };
  WriteFile(dir / "perf-4242.map",
            "0x00007f0000001000 0x0000000000000040 void Loop.busyFor(long)\n"
            "0x00007f0000002000 0x0000000000000040 void Loop.main(java.lang.String[])\n");

  Report fresh = make_report();
  EXPECT_EQ(NameJitFrames(&fresh, dir.path()), 2u);
  EXPECT_EQ(fresh.hangs[0].stacks[0].frames[0].symbol, "void Loop.busyFor(long)");
  EXPECT_EQ(fresh.hangs[0].stacks[0].frames[1].symbol, "void Loop.main(java.lang.String[])");
  EXPECT_EQ(fresh.hangs[0].culprit.symbol, "void Loop.busyFor(long)");

  Report elsewhere = make_report();
  elsewhere.hangs[0].host = std::string(host) + "-another-machine";
  EXPECT_EQ(NameJitFrames(&elsewhere, dir.path()), 0u) << "a map of this machine only";
  Report undated = make_report();
  undated.hangs[0].start_unix_ms = 0;
  EXPECT_EQ(NameJitFrames(&undated, dir.path()), 0u) << "no start: the map may be another's";

  const std::string map = dir / "perf-4242.map";
  const int64_t old_ms = now_ms - 60000;
  const struct timespec times[2] = {{old_ms / 1000, (old_ms % 1000) * 1000000},
                                    {old_ms / 1000, (old_ms % 1000) * 1000000}};
  ASSERT_EQ(utimensat(AT_FDCWD, map.c_str(), times, 0), 0);
  Report stale = make_report();
  EXPECT_EQ(NameJitFrames(&stale, dir.path()), 0u);
  EXPECT_TRUE(stale.hangs[0].stacks[0].frames[0].symbol.empty());
}

}  // namespace
}  // namespace hangwatch::tools
