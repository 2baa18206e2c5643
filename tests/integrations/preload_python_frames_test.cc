// Python frames in the hangs of a CPython program under the preload shim: Debian's
// /usr/bin/python3.11, and 3.10, 3.12 and 3.13 where they are installed (skipped by name where they
// are not), run data/python_frames.py, one scenario per process, each a hang of one pass of an
// asyncio loop. The Python functions, files and lines stand in place of the
// interpreter's eval-loop frames; native frames of C code called from Python stay between them.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tests/python/python_interpreters.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

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

// A sample in asyncio's own loop code (_run_once between two handles, before its next select):
// still the pass, which lasts until the loop waits again. A sample lands there when the thread is
// descheduled right after the handler returned, on a loaded machine.
bool InLoopMachinery(const Stack& s) {
  for (const Frame& f : s.frames) {
    if (f.language != FrameLanguage::kPython) continue;
    return EndsWith(f.file, "/asyncio/base_events.py") || EndsWith(f.file, "/asyncio/events.py");
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

class PythonFramesTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    python_ = GetParam() == 11 ? "/usr/bin/python3.11" : python::testing::FindPython(GetParam());
    struct stat st {};
    if (python_.empty() || stat(python_.c_str(), &st) != 0) {
      GTEST_SKIP() << "python3." << GetParam() << " is not installed";
    }
  }

  // Runs one scenario; its one hang (of at least 400 ms) into *out. `launcher`: a program that
  // starts python3 (its path and arguments follow). The scenario's pass is of the run phase (the
  // loop waits after it); the interpreter's finalization after the loop is the program's exit
  // work, a shutdown-phase pass, which a loaded machine can stretch past the threshold too: it
  // is not the scenario's hang.
  void Run(const std::string& scenario, HangRecord* out, std::vector<std::string> env = {},
           const std::string& launcher = "") {
    TempDir dir;
    const std::string report_path = dir.path() + "/hangs.jsonl";
    env.push_back("LD_PRELOAD=" HANGWATCH_PRELOAD_LIB);
    env.push_back("HANGWATCH_THRESHOLD_MS=300");
    env.push_back("HANGWATCH_SAMPLE_MS=20");
    env.push_back("HANGWATCH_REPORT=" + report_path);
    env.push_back("HANGWATCH_LOG=0");
    env.push_back("HANGWATCH_OPEN_HANG_DIR=" + dir.path());
    std::vector<std::string> argv = {python_, kProgram, scenario};
    if (!launcher.empty()) argv.insert(argv.begin(), launcher);
    ChildProcess child(argv, env);
    std::string line;
    ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(60)));
    EXPECT_EQ(line, "done");
    EXPECT_EQ(child.WaitAtMost(std::chrono::seconds(30)), 0);
    tools::Report report;
    std::string error;
    tools::ParseJsonLines(ReadFile(report_path), &report, &error);
    std::vector<const HangRecord*> hangs;
    for (const HangRecord& h : report.hangs) {
      if (h.duration_ms >= 400 && h.phase != HangPhase::kShutdown) hangs.push_back(&h);
    }
    ASSERT_EQ(hangs.size(), 1u) << error << ReadFile(report_path);
    *out = *hangs[0];
    ASSERT_NE(out->dominant(), nullptr);
    for (const Stack& s : out->stacks) {
      EXPECT_FALSE(HasEvalLoopFrame(s)) << "an eval-loop frame was left:\n" << Describe(s);
    }
  }

  std::string python_;
};

TEST_P(PythonFramesTest, BusyFunctionIsNamedWithItsFileAndLine) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("busy", &h));
  // Every sample: the innermost Python frame is busy() at its loop's lines; only native frames
  // (what the loop calls: the clock, the comparison) come before it.
  const std::vector<int> lines = MarkedLines("busy-loop");
  ASSERT_EQ(lines.size(), 2u);
  uint32_t in_loop = 0;
  for (const Stack& st : h.stacks) {
    const int busy = FindPython(st, "busy");
    if (busy < 0 && InLoopMachinery(st)) {
      in_loop += st.count;
      continue;
    }
    ASSERT_GE(busy, 0) << Describe(st);
    for (int i = 0; i < busy; ++i) {
      EXPECT_EQ(st.frames[static_cast<size_t>(i)].language, FrameLanguage::kNative);
    }
    const Frame& f = st.frames[static_cast<size_t>(busy)];
    EXPECT_TRUE(EndsWith(f.file, "/python_frames.py")) << f.file;
    EXPECT_TRUE(f.line == lines[0] || f.line == lines[1]) << f.line << "\n" << Describe(st);
  }
  EXPECT_LE(in_loop, 2u) << "samples outside busy(), in the loop's own code";
  const Stack& s = *h.dominant();
  // Its callers, in order: the scenario and the asyncio task's coroutine main(), whose frames
  // live in their coroutine objects, outside the thread's data stack.
  const int scenario = FindPython(s, "scenario", 1);
  ASSERT_GT(scenario, 0) << Describe(s);
  const int main_frame = FindPython(s, "main", static_cast<size_t>(scenario) + 1);
  ASSERT_GT(main_frame, scenario) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(main_frame)].line, MarkedLines("scenario").at(0));
}

// Where process_vm_readv is refused (here a seccomp filter; qemu-user does not implement it),
// the agent reads its own memory from /proc/self/mem: the same frames, the busy loop and a
// sleep read through /proc alike.
TEST_P(PythonFramesTest, FramesAreReadWhereProcessVmReadvIsRefused) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("busy", &h, {}, DENY_PROCESS_VM_READV));
  const std::vector<int> lines = MarkedLines("busy-loop");
  ASSERT_EQ(lines.size(), 2u);
  uint32_t in_loop = 0;
  for (const Stack& st : h.stacks) {
    const int busy = FindPython(st, "busy");
    if (busy < 0 && InLoopMachinery(st)) {
      in_loop += st.count;
      continue;
    }
    ASSERT_GE(busy, 0) << Describe(st);
    const Frame& f = st.frames[static_cast<size_t>(busy)];
    EXPECT_TRUE(f.line == lines[0] || f.line == lines[1]) << f.line << "\n" << Describe(st);
  }
  EXPECT_LE(in_loop, 2u) << "samples outside busy(), in the loop's own code";
  EXPECT_GT(FindPython(*h.dominant(), "main"), FindPython(*h.dominant(), "scenario"));
  HangRecord sleep;
  ASSERT_NO_FATAL_FAILURE(Run("worker", &sleep, {}, DENY_PROCESS_VM_READV));
  ASSERT_GE(FindPython(*sleep.dominant(), "main_with_worker"), 1) << Describe(*sleep.dominant());
}

TEST_P(PythonFramesTest, SleepIsReadThroughProcWithThePythonCaller) {
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

TEST_P(PythonFramesTest, RecursionTwoHundredDeepIsWholeAndInOrder) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("recursion", &h, {"HANGWATCH_MAX_FRAMES=1024"}));
  const Stack& s = *h.dominant();
  const int busy = FindPython(s, "busy");
  ASSERT_GE(busy, 0) << Describe(s);
  // recurse(200) .. recurse(0): 201 Python frames after busy, then the scenario. From 3.11 a
  // Python-to-Python call stays in one native call of the eval loop: nothing between them. In
  // 3.10 each is a native call of its own: their native frames sit between them (and the
  // Python frames past the native unwind's end follow it).
  const int recurse_line = MarkedLines("recurse").at(0);
  size_t recursions = 0;
  size_t i = static_cast<size_t>(busy) + 1;
  for (; i < s.frames.size(); ++i) {
    const Frame& f = s.frames[i];
    if (f.language == FrameLanguage::kNative) {
      EXPECT_EQ(GetParam(), 10) << "a native frame between Python frames at " << i << "\n"
                                << Describe(s);
      continue;
    }
    if (f.symbol != "recurse") break;
    if (recursions > 0) {
      EXPECT_EQ(f.line, recurse_line) << i;
    }
    ++recursions;
  }
  EXPECT_EQ(recursions, 201u) << Describe(s);
  ASSERT_LT(i, s.frames.size());
  EXPECT_EQ(s.frames[i].symbol, "scenario") << Describe(s);
}

TEST_P(PythonFramesTest, GeneratorFrameSitsBetweenItsCallerAndCallee) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("generator", &h));
  const Stack& s = *h.dominant();
  ASSERT_GE(FindPython(s, "busy"), 0) << Describe(s);
  const int gen = FindPython(s, "numbers");
  ASSERT_GT(gen, 0) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(gen)].line, MarkedLines("generator").at(0));
  EXPECT_GT(FindPython(s, "scenario", static_cast<size_t>(gen) + 1), gen) << Describe(s);
}

// A loaded machine can run the program so late that the loop's first waits find their timers
// due and poll with zero timeouts, which do not arm the shim: the scenario would run unwatched,
// as start-up. The script's first wait blocks however late it runs (data/python_frames.py,
// first_wait); PYTHON_FRAMES_STARVED_START keeps the loop busy past its timers before it, as
// such a machine would (without first_wait: no hang at all). One interpreter is enough.
TEST_P(PythonFramesTest, TheScenarioIsWatchedWhenTheLoopStartsLate) {
  if (GetParam() != 11) GTEST_SKIP() << "checked with python3.11";
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("busy", &h, {"PYTHON_FRAMES_STARVED_START=1"}));
  EXPECT_GT(FindPython(*h.dominant(), "scenario"), FindPython(*h.dominant(), "busy"))
      << Describe(*h.dominant());
}

TEST_P(PythonFramesTest, AsyncioCoroutineFrameSitsBetweenItsCallerAndCallee) {
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
TEST_P(PythonFramesTest, NativeFramesOfACExtensionStayBetweenPythonFrames) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("json", &h));
  bool found = false;
  std::string all;
  for (const Stack& s : h.stacks) {
    all += Describe(s) + "--\n";
    // co_qualname from 3.11, co_name before.
    const int iterencode =
        FindPython(s, GetParam() >= 11 ? "JSONEncoder.iterencode" : "iterencode");
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

TEST_P(PythonFramesTest, AWorkerThreadsFramesAreNotMixedIn) {
  HangRecord h;
  ASSERT_NO_FATAL_FAILURE(Run("worker", &h));
  ASSERT_GE(FindPython(*h.dominant(), "main_with_worker"), 1) << Describe(*h.dominant());
  for (const Stack& s : h.stacks) EXPECT_EQ(FindPython(s, "worker_spin"), -1) << Describe(s);
}

TEST_P(PythonFramesTest, HangwatchPythonZeroTurnsThemOff) {
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  ChildProcess child({python_, kProgram, "busy"},
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

INSTANTIATE_TEST_SUITE_P(Versions, PythonFramesTest, ::testing::Values(11, 10, 12, 13),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "python3_" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace hangwatch::testing
