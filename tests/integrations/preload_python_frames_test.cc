// Python frames in the hangs of a CPython program under the preload shim (issue 25): Debian's
// /usr/bin/python3.11 runs data/python_frames.py, one scenario per process, each a hang of one
// pass of an asyncio loop. The Python functions, files and lines stand in place of the
// interpreter's eval-loop frames; native frames of C code called from Python stay between them.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3.11";
constexpr char kProgram[] = HANGWATCH_TEST_DATA_DIR "/python_frames.py";

// The lines of kProgram marked "# mark: NAME".
std::vector<int> MarkedLines(const std::string& name) {
  std::ifstream in(kProgram);
  std::vector<int> lines;
  std::string line;
  const std::string mark = "# mark: " + name;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t at = line.find(mark);
    if (at != std::string::npos && at + mark.size() == line.size()) lines.push_back(n);
  }
  return lines;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Index of the first Python frame named `symbol` in `s` at or after `from`, or -1.
int FindPython(const Stack& s, const std::string& symbol, size_t from = 0) {
  for (size_t i = from; i < s.frames.size(); ++i) {
    const Frame& f = s.frames[i];
    if (f.language == FrameLanguage::kPython && f.symbol == symbol) return static_cast<int>(i);
  }
  return -1;
}

bool HasEvalLoopFrame(const Stack& s) {
  for (const Frame& f : s.frames) {
    if (f.language == FrameLanguage::kNative &&
        f.symbol.find("_PyEval_EvalFrameDefault") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string Describe(const Stack& s) {
  std::string out;
  for (const Frame& f : s.frames) {
    out += f.language == FrameLanguage::kPython ? "  py " : "  c  ";
    out += f.symbol.empty() ? "??" : f.symbol;
    if (f.language == FrameLanguage::kPython) {
      out += " (" + f.file + ":" + std::to_string(f.line) + ")";
    } else {
      out += " [" + f.module + "]";
    }
    out += "\n";
  }
  return out;
}

class PythonFramesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st {};
    if (stat(kPython, &st) != 0) GTEST_SKIP() << kPython << " is not installed";
  }

  // Runs one scenario; its one hang (of at least 400 ms) into *out.
  void Run(const std::string& scenario, HangRecord* out, std::vector<std::string> env = {}) {
    TempDir dir;
    const std::string report_path = dir.path() + "/hangs.jsonl";
    env.push_back("LD_PRELOAD=" HANGWATCH_PRELOAD_LIB);
    env.push_back("HANGWATCH_THRESHOLD_MS=300");
    env.push_back("HANGWATCH_SAMPLE_MS=20");
    env.push_back("HANGWATCH_REPORT=" + report_path);
    env.push_back("HANGWATCH_LOG=0");
    env.push_back("HANGWATCH_OPEN_HANG_DIR=" + dir.path());
    ChildProcess child({kPython, kProgram, scenario}, env);
    std::string line;
    ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(60)));
    EXPECT_EQ(line, "done");
    EXPECT_EQ(child.WaitAtMost(std::chrono::seconds(30)), 0);
    tools::Report report;
    std::string error;
    tools::ParseJsonLines(ReadFile(report_path), &report, &error);
    std::vector<const HangRecord*> hangs;
    for (const HangRecord& h : report.hangs) {
      if (h.duration_ms >= 400) hangs.push_back(&h);
    }
    ASSERT_EQ(hangs.size(), 1u) << error << ReadFile(report_path);
    *out = *hangs[0];
    ASSERT_NE(out->dominant(), nullptr);
    for (const Stack& s : out->stacks) {
      EXPECT_FALSE(HasEvalLoopFrame(s)) << "an eval-loop frame was left:\n" << Describe(s);
    }
  }
};

TEST_F(PythonFramesTest, BusyFunctionIsNamedWithItsFileAndLine) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("busy", &h));
  // Every sample: the innermost Python frame is busy() at its loop's lines; only native frames
  // (what the loop calls: the clock, the comparison) come before it.
  const std::vector<int> lines = MarkedLines("busy-loop");
  ASSERT_EQ(lines.size(), 2u);
  for (const Stack& st : h.stacks) {
    const int busy = FindPython(st, "busy");
    ASSERT_GE(busy, 0) << Describe(st);
    for (int i = 0; i < busy; ++i) {
      EXPECT_EQ(st.frames[static_cast<size_t>(i)].language, FrameLanguage::kNative);
    }
    const Frame& f = st.frames[static_cast<size_t>(busy)];
    EXPECT_TRUE(EndsWith(f.file, "/python_frames.py")) << f.file;
    EXPECT_TRUE(f.line == lines[0] || f.line == lines[1]) << f.line << "\n" << Describe(st);
  }
  const Stack& s = *h.dominant();
  // Its callers, in order: the scenario and the asyncio task's coroutine main(), whose frames
  // live in their coroutine objects, outside the thread's data stack.
  const int scenario = FindPython(s, "scenario", 1);
  ASSERT_GT(scenario, 0) << Describe(s);
  const int main_frame = FindPython(s, "main", static_cast<size_t>(scenario) + 1);
  ASSERT_GT(main_frame, scenario) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(main_frame)].line, MarkedLines("scenario").at(0));
}

TEST_F(PythonFramesTest, SleepIsReadThroughProcWithThePythonCaller) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("sleep", &h));
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  bool proc = false;
  for (const TimelineEntry& t : h.timeline) proc |= t.method == SampleMethod::kProc;
  EXPECT_TRUE(proc) << "the sleeping thread was read through /proc";
  const Stack& s = *h.dominant();
  ASSERT_FALSE(s.frames.empty());
  EXPECT_EQ(s.frames[0].language, FrameLanguage::kNative) << Describe(s);
  const int sleeper = FindPython(s, "sleeper");
  ASSERT_GT(sleeper, 0) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(sleeper)].line, MarkedLines("sleep").at(0));
  EXPECT_GT(FindPython(s, "scenario", static_cast<size_t>(sleeper) + 1), sleeper);
}

TEST_F(PythonFramesTest, RecursionTwoHundredDeepIsWholeAndInOrder) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("recursion", &h, {"HANGWATCH_MAX_FRAMES=512"}));
  const Stack& s = *h.dominant();
  const int busy = FindPython(s, "busy");
  ASSERT_GE(busy, 0) << Describe(s);
  // recurse(200) .. recurse(0): 201 frames right after busy, then the scenario.
  const int recurse_line = MarkedLines("recurse").at(0);
  size_t i = 1;
  for (; i < s.frames.size() && s.frames[i].symbol == "recurse"; ++i) {
    EXPECT_EQ(s.frames[i].language, FrameLanguage::kPython);
    if (i > static_cast<size_t>(busy) + 1) {
      EXPECT_EQ(s.frames[i].line, recurse_line) << i;
    }
  }
  EXPECT_EQ(i - static_cast<size_t>(busy) - 1, 201u) << Describe(s);
  ASSERT_LT(i, s.frames.size());
  EXPECT_EQ(s.frames[i].symbol, "scenario") << Describe(s);
}

TEST_F(PythonFramesTest, GeneratorFrameSitsBetweenItsCallerAndCallee) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("generator", &h));
  const Stack& s = *h.dominant();
  ASSERT_GE(FindPython(s, "busy"), 0) << Describe(s);
  const int gen = FindPython(s, "numbers");
  ASSERT_GT(gen, 0) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(gen)].line, MarkedLines("generator").at(0));
  EXPECT_GT(FindPython(s, "scenario", static_cast<size_t>(gen) + 1), gen) << Describe(s);
}

TEST_F(PythonFramesTest, AsyncioCoroutineFrameSitsBetweenItsCallerAndCallee) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("coroutine", &h));
  const Stack& s = *h.dominant();
  ASSERT_GE(FindPython(s, "busy"), 0) << Describe(s);
  const int coro = FindPython(s, "compute");
  ASSERT_GT(coro, 0) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(coro)].line, MarkedLines("coroutine").at(0));
  EXPECT_GT(FindPython(s, "scenario", static_cast<size_t>(coro) + 1), coro) << Describe(s);
}

// json.dumps of a large object: the C encoder's native frames stay inside the Python frames
// that called it (JSONEncoder.iterencode, encode, dumps, encode_all).
TEST_F(PythonFramesTest, NativeFramesOfACExtensionStayBetweenPythonFrames) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("json", &h));
  bool found = false;
  std::string all;
  for (const Stack& s : h.stacks) {
    all += Describe(s) + "--\n";
    const int iterencode = FindPython(s, "JSONEncoder.iterencode");
    const int encode_all = FindPython(s, "encode_all");
    if (iterencode <= 0 || encode_all <= iterencode) continue;
    bool native_inside = false;
    for (int i = 0; i < iterencode; ++i) {
      native_inside |= s.frames[static_cast<size_t>(i)].language == FrameLanguage::kNative;
    }
    if (!native_inside) continue;
    found = true;
    EXPECT_EQ(s.frames[static_cast<size_t>(encode_all)].line, MarkedLines("json").at(0));
  }
  EXPECT_TRUE(found) << all;
}

TEST_F(PythonFramesTest, AWorkerThreadsFramesAreNotMixedIn) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("worker", &h));
  ASSERT_GE(FindPython(*h.dominant(), "main_with_worker"), 1) << Describe(*h.dominant());
  for (const Stack& s : h.stacks) EXPECT_EQ(FindPython(s, "worker_spin"), -1) << Describe(s);
}

TEST_F(PythonFramesTest, HangwatchPythonZeroTurnsThemOff) {
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  ChildProcess child({kPython, kProgram, "busy"},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=300",
                      "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                      "HANGWATCH_OPEN_HANG_DIR=" + dir.path(), "HANGWATCH_PYTHON=0"});
  std::string line;
  ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(60)));
  EXPECT_EQ(child.WaitAtMost(std::chrono::seconds(30)), 0);
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  ASSERT_FALSE(report.hangs.empty()) << error;
  bool eval_loop = false;
  for (const HangRecord& r : report.hangs) {
    for (const Stack& s : r.stacks) {
      eval_loop |= HasEvalLoopFrame(s);
      for (const Frame& f : s.frames) EXPECT_EQ(f.language, FrameLanguage::kNative);
    }
  }
  EXPECT_TRUE(eval_loop);
}

}  // namespace
}  // namespace hangwatch::testing
