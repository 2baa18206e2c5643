// An application that embeds CPython (Debian's libpython3.11) and runs Python on its main
// thread: a hang inside a Python function is reported with that function, its file and its
// line, on the architecture the test is built for (check_aarch64 runs it under qemu-user,
// where the agent reads its own memory from /proc/self/mem: unwind/self_memory.h).
#include <Python.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "agent/core/agent_internal.h"
#include "gtest/gtest.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "unwind/self_memory.h"

namespace hangwatch::testing {
namespace {

constexpr char kApp[] = R"(import time

def busy(seconds):
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n

def nap(seconds):
    time.sleep(seconds)

def handle(kind, seconds):
    if kind == "busy":
        return busy(seconds)
    return nap(seconds)
)";
constexpr int kBusyLoopLines[] = {6, 7};  // the while and its body
constexpr int kNapLine = 11;
constexpr int kHandleBusyLine = 15;

// The innermost Python frame named `name` in the stack, or -1.
int FindPython(const Stack& s, const std::string& name) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (s.frames[i].language == FrameLanguage::kPython && s.frames[i].symbol == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string Describe(const Stack& s) {
  std::string out;
  for (const Frame& f : s.frames) {
    out += f.language == FrameLanguage::kPython ? "  py " : "  c  ";
    out +=
        (f.symbol.empty() ? "??" : f.symbol) + " " + f.file + ":" + std::to_string(f.line) + "\n";
  }
  return out;
}

class EmbeddedPython : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir_template[] = "/tmp/hw_embedded_python_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    std::ofstream(dir_ + "/embedded_app.py") << kApp;
    Py_DontWriteBytecodeFlag = 1;  // no __pycache__ left in the directory
    Py_InitializeEx(0);            // no signal handlers of its own
    PyObject* sys_path = PySys_GetObject("path");
    PyObject* dir = PyUnicode_FromString(dir_.c_str());
    PyList_Insert(sys_path, 0, dir);
    Py_DECREF(dir);
    app_ = PyImport_ImportModule("embedded_app");
    if (app_ == nullptr) PyErr_Print();
  }
  static void TearDownTestSuite() {
    Py_XDECREF(app_);
    unlink((dir_ + "/embedded_app.py").c_str());
    rmdir(dir_.c_str());
  }
  void SetUp() override {
    ASSERT_NE(app_, nullptr) << "embedded_app.py did not import";
    Config config = TestConfig();
    config.threshold = std::chrono::milliseconds(200);
    config.sample_interval = std::chrono::milliseconds(20);
    ASSERT_TRUE(Start(config).ok());
  }
  void TearDown() override { Stop(); }

  // One pass of the "run loop" calling handle(kind, seconds) in Python; its hang.
  HangRecord Handle(const char* kind, double seconds) {
    HangCollector collector;
    {
      WorkScope pass;
      PyObject* r = PyObject_CallMethod(app_, "handle", "sd", kind, seconds);
      if (r == nullptr) PyErr_Print();
      Py_XDECREF(r);
    }
    EXPECT_TRUE(collector.WaitFor(1));
    std::vector<HangRecord> hangs = collector.hangs();
    return hangs.empty() ? HangRecord{} : hangs[0];
  }

  static std::string dir_;
  static PyObject* app_;
};
std::string EmbeddedPython::dir_;
PyObject* EmbeddedPython::app_ = nullptr;

TEST_F(EmbeddedPython, ABusyPythonFunctionIsNamedWithItsFileAndLine) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  const HangRecord h = Handle("busy", 0.6);
  ASSERT_NE(h.dominant(), nullptr);
  EXPECT_EQ(h.hang_class, HangClass::kBusy);
  for (const Stack& s : h.stacks) {
    const int busy = FindPython(s, "busy");
    ASSERT_GE(busy, 0) << "how this process reads itself: "
                       << unwind::SelfMemoryMethodName(unwind::PrepareSelfMemory()) << "\n"
                       << Describe(s);
    const Frame& f = s.frames[static_cast<size_t>(busy)];
    EXPECT_EQ(f.file, dir_ + "/embedded_app.py");
    EXPECT_TRUE(f.line == kBusyLoopLines[0] || f.line == kBusyLoopLines[1]) << Describe(s);
    // Its caller is next among the Python frames, at the line of the call.
    const int handle = FindPython(s, "handle");
    ASSERT_GT(handle, busy) << Describe(s);
    EXPECT_EQ(s.frames[static_cast<size_t>(handle)].line, kHandleBusyLine);
    for (int i = busy + 1; i < handle; ++i) {
      EXPECT_NE(s.frames[static_cast<size_t>(i)].language, FrameLanguage::kPython) << Describe(s);
    }
  }
}

TEST_F(EmbeddedPython, ASleepInPythonIsNamedAtTheSleepingLine) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  const HangRecord h = Handle("nap", 0.6);
  ASSERT_NE(h.dominant(), nullptr);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  const Stack& s = *h.dominant();
  const int nap = FindPython(s, "nap");
  ASSERT_GE(nap, 0) << Describe(s);
  EXPECT_EQ(s.frames[static_cast<size_t>(nap)].line, kNapLine);
  EXPECT_GT(FindPython(s, "handle"), nap) << Describe(s);
}

// A Python function that hangs a watched thread other than the main one (hangwatch/threads.h)
// is named as on the main thread: the capture hook follows the thread being captured.
TEST_F(EmbeddedPython, ABusyPythonFunctionOnAWatchedWorkerThreadIsNamed) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  PyThreadState* main_state = PyEval_SaveThread();  // the worker takes the GIL
  std::thread worker([&] {
    ThreadWatch watch = WatchThread("py-worker");
    ASSERT_TRUE(watch.watching());
    ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 1; }));
    PyGILState_STATE gil = PyGILState_Ensure();
    {
      WorkScope pass;
      PyObject* r = PyObject_CallMethod(app_, "handle", "sd", "busy", 0.6);
      if (r == nullptr) PyErr_Print();
      Py_XDECREF(r);
    }
    PyGILState_Release(gil);
  });
  worker.join();
  PyEval_RestoreThread(main_state);
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(h.thread_role, "py-worker");
  ASSERT_NE(h.dominant(), nullptr);
  const Stack& s = *h.dominant();
  EXPECT_GE(FindPython(s, "busy"), 0) << Describe(s);
  EXPECT_GT(FindPython(s, "handle"), FindPython(s, "busy")) << Describe(s);
}

}  // namespace
}  // namespace hangwatch::testing
