// `hangwatch snapshot PID` of Python processes (tools/snapshot/snapshot_python.h): each thread's
// Python frames in its native stack where the interpreter's eval loop ran them, on Debian's
// python3.11 running tests/python/frames_program.py; and nothing of the kind for a process that
// is not Python.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/python/python_child.h"
#include "tests/python/python_interpreters.h"
#include "tests/snapshot/snapshot_test_util.h"

namespace hangwatch {
namespace {

using python::testing::FindPython;
using python::testing::PythonChild;
using snapshot_test::CliResult;
using snapshot_test::RunCli;

// Lines of frames_program.py.
constexpr int kRecurseBottom = 30;
constexpr int kRecurseCall = 31;
constexpr int kInGenerator = 36;
constexpr int kConsume = 41;
constexpr int kInCoroutine = 47;
constexpr int kOuterTask = 52;
constexpr int kWorkerBody = 57;
constexpr int kMainWaits = 62;
constexpr int kEncodeOpaque = 72;
constexpr int kDumpBig = 78;

// The frames of thread `tid` in a snapshot's JSON.
nlohmann::json ThreadFrames(const nlohmann::json& snap, int tid) {
  for (const nlohmann::json& t : snap["threads"]) {
    if (t["tid"].get<int>() == tid) return t["frames"];
  }
  return nlohmann::json::array();
}

bool IsPython(const nlohmann::json& f) { return f.value("kind", "") == "python"; }

// Debian's python3.11 by default; the parameterized tests also run the other installed versions.
class SnapshotPython : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = FindPython(minor());
    if (python_.empty()) GTEST_SKIP() << "python3." << minor() << " is not installed";
  }
  virtual int minor() const { return 11; }
  // Starts frames_program.py and waits until thread `asleep` (0: the ready thread) sleeps.
  void Start(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {python_, FRAMES_PROGRAM};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_TRUE(child_.Start(argv));
    ASSERT_TRUE(child_.WaitReady());
    ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  }
  nlohmann::json SnapshotJson(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {std::to_string(child_.pid()), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  std::string python_;
  PythonChild child_;
};

class SnapshotPythonVersions : public SnapshotPython, public ::testing::WithParamInterface<int> {
 protected:
  int minor() const override { return GetParam(); }
};

TEST_P(SnapshotPythonVersions, Recursion200DeepReplacesTheEvalLoop) {
  Start({"recurse", "200"});
  // 3.10 runs each Python frame in a native call of its own: a deep native stack, copied and
  // walked whole so that every eval-loop frame is there to be replaced.
  const nlohmann::json snap = SnapshotJson({"--stack-kb", "2048", "--max-frames", "4096"});
  ASSERT_TRUE(snap.contains("python")) << snap["notes"];
  const nlohmann::json frames = ThreadFrames(snap, child_.pid());
  std::vector<size_t> py;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (IsPython(frames[i])) py.push_back(i);
    EXPECT_NE(frames[i].value("symbol", ""), "_PyEval_EvalFrameDefault") << i;
  }
  ASSERT_EQ(py.size(), 201u) << frames.dump();
  // time.sleep's native frames first (the C function and the system call), then the Python
  // frames, contiguous from 3.11 (one native call of the eval loop ran them all; 3.10 calls
  // the eval loop once per frame), then the interpreter's start-up in C.
  EXPECT_GT(py.front(), 0u);
  if (GetParam() >= 11) {
    EXPECT_EQ(py.back() - py.front(), 200u);
  }
  EXPECT_LT(py.back() + 1, frames.size());
  EXPECT_EQ(frames[py[0]]["symbol"], "recurse");
  EXPECT_EQ(frames[py[0]]["line"], kRecurseBottom);
  EXPECT_EQ(frames[py[1]]["line"], kRecurseCall);
  EXPECT_EQ(frames[py[199]]["symbol"], "recurse");
  EXPECT_EQ(frames[py[200]]["symbol"], "<module>");
  std::printf("stopped %d us with Python frames\n", snap["stopped_us"].get<int>());
  const nlohmann::json native = SnapshotJson({"--no-python"});
  EXPECT_FALSE(native.contains("python"));
  std::printf("stopped %d us without\n", native["stopped_us"].get<int>());
}

TEST_F(SnapshotPython, GeneratorHasNativeFramesBetween) {
  Start({"generator"});
  const nlohmann::json frames = ThreadFrames(SnapshotJson(), child_.pid());
  int generator = -1;
  int consume = -1;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!IsPython(frames[i])) continue;
    if (frames[i]["symbol"] == "generator") generator = static_cast<int>(i);
    if (frames[i]["symbol"] == "consume") consume = static_cast<int>(i);
  }
  ASSERT_GE(generator, 0) << frames.dump();
  ASSERT_GT(consume, generator);
  EXPECT_EQ(frames[generator]["line"], kInGenerator);
  EXPECT_EQ(frames[consume]["line"], kConsume);
  // In 3.11 the generator runs in a native call of the eval loop of its own, made from C
  // (the for loop's tp_iternext): native frames stand between the two.
  EXPECT_GT(consume - generator, 1) << frames.dump();
  for (int i = generator + 1; i < consume; ++i) EXPECT_FALSE(IsPython(frames[i]));
}

TEST_P(SnapshotPythonVersions, WorkerThreadApartFromMain) {
  Start({"thread"});
  ASSERT_TRUE(child_.WaitAsleep(child_.pid()));
  const nlohmann::json snap = SnapshotJson();
  auto names = [](const nlohmann::json& frames) {
    std::vector<std::string> n;
    for (const nlohmann::json& f : frames) {
      if (IsPython(f))
        n.push_back(f["symbol"].get<std::string>() + ":" + std::to_string(f["line"].get<int>()));
    }
    return n;
  };
  const std::vector<std::string> main = names(ThreadFrames(snap, child_.pid()));
  const std::vector<std::string> worker = names(ThreadFrames(snap, child_.ready_tid()));
  ASSERT_EQ(main.size(), 2u);
  EXPECT_EQ(main[0], "main_waits:" + std::to_string(kMainWaits));
  EXPECT_EQ(main[1].substr(0, 9), "<module>:");
  ASSERT_GE(worker.size(), 2u);
  EXPECT_EQ(worker[0], "worker_body:" + std::to_string(kWorkerBody));
  // co_qualname from 3.11, co_name before.
  EXPECT_EQ(worker.back().substr(0, worker.back().find(':')),
            GetParam() >= 11 ? "Thread._bootstrap" : "_bootstrap");
}

// The index of the first frame at or after `from` that `pred` accepts; -1 when none.
template <typename Pred>
int FindFrame(const nlohmann::json& frames, int from, Pred pred) {
  for (int i = from; i < static_cast<int>(frames.size()); ++i) {
    if (pred(frames[i])) return i;
  }
  return -1;
}

auto PythonNamed(const std::string& name) {
  return [name](const nlohmann::json& f) { return IsPython(f) && f["symbol"] == name; };
}

TEST_P(SnapshotPythonVersions, JsonDumpsHasItsNativeFramesBetween) {
  Start({"json"});
  const nlohmann::json snap = SnapshotJson({"--stack-kb", "1024"});
  ASSERT_TRUE(snap.contains("python")) << snap["notes"];
  const nlohmann::json frames = ThreadFrames(snap, child_.pid());
  // encode_opaque, called from C by _json's encoder, then json/encoder.py's Python frames that
  // called the encoder, then dump_big, which called json.dumps.
  const int hook = FindFrame(frames, 0, PythonNamed("encode_opaque"));
  ASSERT_GE(hook, 0) << frames.dump();
  EXPECT_EQ(frames[hook]["line"], kEncodeOpaque);
  const int encoder = FindFrame(frames, hook + 1, [](const nlohmann::json& f) {
    return IsPython(f) && f["file"].get<std::string>().ends_with("/json/encoder.py");
  });
  ASSERT_GT(encoder, hook) << frames.dump();
  const int c_encoder = FindFrame(frames, hook + 1, [](const nlohmann::json& f) {
    return !IsPython(f) && f.value("module", "").find("/_json.") != std::string::npos;
  });
  EXPECT_GT(c_encoder, hook) << frames.dump();
  EXPECT_LT(c_encoder, encoder) << frames.dump();
  for (int i = hook + 1; i < encoder; ++i) EXPECT_FALSE(IsPython(frames[i])) << i;
  const int dump = FindFrame(frames, encoder, PythonNamed("dump_big"));
  ASSERT_GT(dump, encoder) << frames.dump();
  EXPECT_EQ(frames[dump]["line"], kDumpBig);
  const int dumps = FindFrame(frames, encoder, PythonNamed("dumps"));
  EXPECT_GT(dumps, encoder);
  EXPECT_LT(dumps, dump);
  const int module = FindFrame(frames, dump + 1, IsPython);
  ASSERT_GT(module, dump);
  EXPECT_EQ(frames[module]["symbol"], "<module>");
}

TEST_P(SnapshotPythonVersions, AsyncioCoroutineUnderItsTaskAndEventLoop) {
  Start({"asyncio"});
  const nlohmann::json snap = SnapshotJson({"--stack-kb", "1024"});
  ASSERT_TRUE(snap.contains("python")) << snap["notes"];
  const nlohmann::json frames = ThreadFrames(snap, child_.pid());
  const int coroutine = FindFrame(frames, 0, IsPython);
  ASSERT_GE(coroutine, 0) << frames.dump();
  EXPECT_EQ(frames[coroutine]["symbol"], "coroutine");
  EXPECT_EQ(frames[coroutine]["line"], kInCoroutine);
  const int task = FindFrame(frames, coroutine + 1, IsPython);
  ASSERT_GT(task, coroutine) << frames.dump();
  EXPECT_EQ(frames[task]["symbol"], "outer_task");
  EXPECT_EQ(frames[task]["line"], kOuterTask);
  // The task is stepped from C (_asyncio's Task), called by the event loop's Python frames.
  const int loop = FindFrame(frames, task + 1, [](const nlohmann::json& f) {
    return IsPython(f) && f["file"].get<std::string>().ends_with("/asyncio/events.py");
  });
  ASSERT_GT(loop, task + 1) << frames.dump();
  for (int i = task + 1; i < loop; ++i) EXPECT_FALSE(IsPython(frames[i])) << i;
  EXPECT_GT(FindFrame(frames, loop,
                      [](const nlohmann::json& f) {
                        return IsPython(f) &&
                               f["file"].get<std::string>().ends_with("/base_events.py");
                      }),
            loop);
  const int module = FindFrame(frames, loop, PythonNamed("<module>"));
  EXPECT_GT(module, loop);
  EXPECT_EQ(FindFrame(frames, module + 1, IsPython), -1);
}

std::string VersionName(const ::testing::TestParamInfo<int>& info) {
  return "Python3_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Versions, SnapshotPythonVersions, ::testing::Values(10, 11, 12, 13),
                         VersionName);

TEST_F(SnapshotPython, TextShowsPythonFrames) {
  Start({"recurse", "3"});
  CliResult r = RunCli({std::to_string(child_.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": Python frames in place of the interpreter's eval loop"),
            std::string::npos)
      << r.out;
  const std::string bottom =
      "python  recurse  " + std::string(FRAMES_PROGRAM) + ":" + std::to_string(kRecurseBottom);
  EXPECT_NE(r.out.find(bottom), std::string::npos) << r.out;
}

TEST(SnapshotNotPython, NoPythonFrames) {
  snapshot_test::Target target;
  CliResult r = RunCli({std::to_string(target.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json snap = nlohmann::json::parse(r.out);
  EXPECT_FALSE(snap.contains("python"));
  size_t frames = 0;
  for (const nlohmann::json& t : snap["threads"]) {
    for (const nlohmann::json& f : t["frames"]) {
      EXPECT_FALSE(f.contains("kind"));
      ++frames;
    }
  }
  EXPECT_GT(frames, 0u);
  EXPECT_EQ(r.err.find("Python"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hangwatch
