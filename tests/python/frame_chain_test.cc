// python/: the Python frames of real interpreters read out of process (frames_program.py,
// stopped with SIGSTOP while read), for Debian's python3.11 and the other installed versions;
// and the reader on bad input: a process that is not Python, garbage frame chains.
#include "python/frame_chain.h"

#include <dlfcn.h>
#include <signal.h>
#include <time.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "python/debug_offsets.h"
#include "python/python_process.h"
#include "symbols/process_modules.h"
#include "tests/python/python_child.h"
#include "tests/python/python_interpreters.h"
#include "unwind/thread_pointer.h"

namespace hangwatch::python {
namespace {

using testing::FindPython;
using testing::PythonChild;

// Lines of frames_program.py.
constexpr int kBusyLoop = 19;
constexpr int kSleeper = 24;
constexpr int kRecurseBottom = 30;
constexpr int kRecurseCall = 31;
constexpr int kInGenerator = 36;
constexpr int kConsume = 41;
constexpr int kInCoroutine = 47;
constexpr int kOuterTask = 52;
constexpr int kWorkerBody = 57;
constexpr int kMainWaits = 62;

struct Frame {
  std::string name;
  std::string file;
  int line = 0;
  bool entry = false;
};

// What one read of a thread gave.
struct Stack {
  std::vector<Frame> frames;
  ChainEnd end = ChainEnd::kComplete;
  bool found = false;  // the thread state was found
};

uint64_t NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

class PythonFrames : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    python_ = FindPython(GetParam());
    if (python_.empty()) GTEST_SKIP() << "python3." << GetParam() << " is not installed";
  }

  // Starts frames_program.py in `mode` and waits for its ready line.
  void Start(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {python_, FRAMES_PROGRAM};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_TRUE(child_.Start(argv));
    ASSERT_TRUE(child_.WaitReady()) << "no ready line from " << python_;
  }

  void Open() {
    absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(child_.pid());
    ASSERT_TRUE(modules.ok()) << modules.status();
    modules_ = std::move(*modules);
    absl::StatusOr<std::unique_ptr<PythonProcess>> p = PythonProcess::Open(child_.pid(), modules_);
    ASSERT_TRUE(p.ok()) << p.status();
    process_ = std::move(*p);
    EXPECT_EQ(process_->interpreter().minor, GetParam());
    // The child runs this process's libc: the same thread descriptor.
    const void* size = dlsym(RTLD_DEFAULT, unwind::kGlibcPthreadSizeSymbol);
    ASSERT_NE(size, nullptr);
    EXPECT_EQ(process_->interpreter().pthread_size, *static_cast<const uint32_t*>(size));
  }

  // Reads thread `tid` (pthread_t `ident`) with the process stopped.
  Stack Read(pid_t tid, uint64_t ident) {
    Stack s;
    if (!child_.Stop()) return s;
    std::vector<PythonFrame> frames(256);
    const uint64_t tstate = process_->chain().FindThreadState(tid, ident);
    size_t n = 0;
    if (tstate != 0) {
      s.found = true;
      n = process_->chain().ReadChain(tstate, frames.data(), frames.size(), &s.end);
    }
    child_.Continue();
    for (size_t i = 0; i < n; ++i) {
      const CodeInfo* info = process_->resolver().Code(frames[i].code);
      Frame f;
      if (info != nullptr) {
        f.name = info->name;
        f.file = Base(info->file);
        f.line = process_->resolver().Line(*info, frames[i].instr);
      }
      f.entry = frames[i].entry;
      s.frames.push_back(f);
    }
    return s;
  }

  Stack ReadReady() { return Read(child_.ready_tid(), child_.ready_ident()); }

  std::string python_;
  PythonChild child_;
  symbols::ProcessModules modules_;
  std::unique_ptr<PythonProcess> process_;
};

TEST_P(PythonFrames, BusyFunctionAtItsLine) {
  Start({"busy"});
  ASSERT_NO_FATAL_FAILURE(Open());
  // The ready line is printed just before the loop: read until the thread is in it.
  Stack s;
  const uint64_t deadline = testing::MonotonicMs() + 20000;
  do {
    s = ReadReady();
  } while (testing::MonotonicMs() < deadline && (s.frames.empty() || s.frames[0].name != "busy"));
  ASSERT_TRUE(s.found);
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].name, "busy");
  EXPECT_EQ(s.frames[0].file, "frames_program.py");
  EXPECT_EQ(s.frames[0].line, kBusyLoop);
  EXPECT_EQ(s.frames[1].name, "<module>");
  EXPECT_EQ(s.end, ChainEnd::kComplete);
}

TEST_P(PythonFrames, SleepingFunction) {
  Start({"sleep"});
  ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  ASSERT_NO_FATAL_FAILURE(Open());
  const Stack s = ReadReady();
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].name, "sleeper");
  EXPECT_EQ(s.frames[0].line, kSleeper);
  EXPECT_EQ(s.frames[1].name, "<module>");
}

TEST_P(PythonFrames, Recursion200Deep) {
  Start({"recurse", "200"});
  ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  ASSERT_NO_FATAL_FAILURE(Open());
  const Stack s = ReadReady();
  // The reading step alone (the thread state found, the chain read), the process stopped.
  ASSERT_TRUE(child_.Stop());
  std::vector<PythonFrame> frames(256);
  ChainEnd end;
  const uint64_t start = NowNs();
  const uint64_t tstate =
      process_->chain().FindThreadState(child_.ready_tid(), child_.ready_ident());
  const size_t n = process_->chain().ReadChain(tstate, frames.data(), frames.size(), &end);
  const uint64_t took = NowNs() - start;
  child_.Continue();
  EXPECT_EQ(n, 201u);
  std::printf("python3.%d: 201 frames read out of process in %.3f ms\n", GetParam(),
              static_cast<double>(took) / 1e6);
  ASSERT_EQ(s.frames.size(), 201u);
  EXPECT_EQ(s.end, ChainEnd::kComplete);
  EXPECT_EQ(s.frames[0].line, kRecurseBottom);
  for (size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(s.frames[i].name, "recurse") << i;
    if (i > 0) {
      EXPECT_EQ(s.frames[i].line, kRecurseCall) << i;
    }
  }
  EXPECT_EQ(s.frames[200].name, "<module>");
}

TEST_P(PythonFrames, GeneratorUnderItsConsumer) {
  Start({"generator"});
  ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  ASSERT_NO_FATAL_FAILURE(Open());
  const Stack s = ReadReady();
  ASSERT_EQ(s.frames.size(), 3u);
  EXPECT_EQ(s.frames[0].name, "generator");
  EXPECT_EQ(s.frames[0].line, kInGenerator);
  EXPECT_EQ(s.frames[1].name, "consume");
  EXPECT_EQ(s.frames[1].line, kConsume);
  EXPECT_EQ(s.frames[2].name, "<module>");
  // The generator runs in a native call of the eval loop of its own.
  EXPECT_TRUE(s.frames[0].entry);
}

TEST_P(PythonFrames, CoroutineUnderItsTask) {
  Start({"asyncio"});
  ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  ASSERT_NO_FATAL_FAILURE(Open());
  const Stack s = ReadReady();
  ASSERT_GE(s.frames.size(), 4u);
  EXPECT_EQ(s.frames[0].name, "coroutine");
  EXPECT_EQ(s.frames[0].line, kInCoroutine);
  EXPECT_EQ(s.frames[1].name, "outer_task");
  EXPECT_EQ(s.frames[1].line, kOuterTask);
  // Then asyncio's event loop (events.py, base_events.py, runners.py), then the module.
  bool saw_asyncio = false;
  for (size_t i = 2; i + 1 < s.frames.size(); ++i) {
    saw_asyncio |= s.frames[i].file == "base_events.py";
  }
  EXPECT_TRUE(saw_asyncio);
  EXPECT_EQ(s.frames.back().name, "<module>");
}

TEST_P(PythonFrames, WorkerThreadApartFromMain) {
  Start({"thread"});
  ASSERT_TRUE(child_.WaitAsleep(child_.ready_tid()));
  ASSERT_TRUE(child_.WaitAsleep(child_.pid()));
  ASSERT_NO_FATAL_FAILURE(Open());
  const Stack worker = ReadReady();
  ASSERT_GE(worker.frames.size(), 2u);
  EXPECT_EQ(worker.frames[0].name, "worker_body");
  EXPECT_EQ(worker.frames[0].line, kWorkerBody);
  // co_qualname from 3.11; co_name before.
  EXPECT_EQ(worker.frames.back().name, GetParam() >= 11 ? "Thread._bootstrap" : "_bootstrap");
  // The main thread: 3.10 needs its pthread_t, which the main thread's ready line did not
  // print; threading.main_thread().ident is not known here, so 3.10 skips this half.
  if (GetParam() == 10) return;
  const Stack main = Read(child_.pid(), 0);
  ASSERT_EQ(main.frames.size(), 2u);
  EXPECT_EQ(main.frames[0].name, "main_waits");
  EXPECT_EQ(main.frames[0].line, kMainWaits);
  EXPECT_EQ(main.frames[1].name, "<module>");
}

std::string VersionName(const ::testing::TestParamInfo<int>& info) {
  return "Python3_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Versions, PythonFrames, ::testing::Values(10, 11, 12, 13), VersionName);

TEST(PythonProcessOpen, NotPython) {
  PythonChild child;
  ASSERT_TRUE(child.Start({"/bin/sh", "-c", "echo ready $$ 0; exec sleep 1000"}));
  ASSERT_TRUE(child.WaitReady());
  // The shell prints before it executes sleep: its modules are read once sleep runs, asleep in
  // its system call, not while the exec replaces the shell's image.
  ASSERT_TRUE(child.WaitAsleep(child.pid()));
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(child.pid());
  ASSERT_TRUE(modules.ok());
  absl::StatusOr<std::unique_ptr<PythonProcess>> p = PythonProcess::Open(child.pid(), *modules);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << p.status();
}

// A process of its own, as bytes: address -> bytes, reads inside one region only.
class FakeMemory : public MemoryReader {
 public:
  void Put(uint64_t addr, const void* bytes, size_t n) {
    std::vector<uint8_t>& r = regions_[addr];
    r.assign(static_cast<const uint8_t*>(bytes), static_cast<const uint8_t*>(bytes) + n);
  }
  void PutWord(uint64_t addr, uint64_t v) { Put(addr, &v, sizeof(v)); }
  bool Read(uint64_t addr, void* out, size_t n) const override {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) return false;
    --it;
    if (addr - it->first + n > it->second.size()) return false;
    std::memcpy(out, it->second.data() + (addr - it->first), n);
    return true;
  }

 private:
  std::map<uint64_t, std::vector<uint8_t>> regions_;
};

// 3.11 structures laid out by hand: _PyRuntime, one interpreter, one thread state, frames.
class FakeInterpreter : public ::testing::Test {
 protected:
  static constexpr uint64_t kRuntime = 0x10000;
  static constexpr uint64_t kInterp = 0x20000;
  static constexpr uint64_t kTstate = 0x30000;
  static constexpr uint64_t kCframe = 0x40000;
  static constexpr uint64_t kCodeType = 0x50000;
  static constexpr uint64_t kCode = 0x60000;
  static constexpr uint64_t kFrames = 0x70000;  // frame i at kFrames + i * 0x100
  static constexpr pid_t kTid = 1234;

  void SetUp() override {
    layout_ = *TableLayout(11);
    addresses_.minor = 11;
    addresses_.runtime = kRuntime;
    addresses_.code_type = kCodeType;
    std::vector<uint8_t> runtime(64, 0);
    std::memcpy(&runtime[layout_.runtime_interpreters_head], &kInterp, 8);
    memory_.Put(kRuntime, runtime.data(), runtime.size());
    std::vector<uint8_t> interp(64, 0);
    std::memcpy(&interp[layout_.interp_threads_head], &kTstate, 8);
    memory_.Put(kInterp, interp.data(), interp.size());
    std::vector<uint8_t> tstate(256, 0);
    std::memcpy(&tstate[layout_.tstate_interp], &kInterp, 8);
    std::memcpy(&tstate[layout_.tstate_cframe], &kCframe, 8);
    const uint64_t tid = kTid;
    std::memcpy(&tstate[layout_.tstate_native_thread_id], &tid, 8);
    memory_.Put(kTstate, tstate.data(), tstate.size());
    std::vector<uint8_t> code(256, 0);
    std::memcpy(&code[layout_.object_type], &kCodeType, 8);
    memory_.Put(kCode, code.data(), code.size());
    memory_.Put(kCodeType + 0x1000, "code", 5);
    std::vector<uint8_t> type(64, 0);
    const uint64_t name = kCodeType + 0x1000;
    std::memcpy(&type[layout_.type_name], &name, 8);
    memory_.Put(kCodeType, type.data(), type.size());
  }

  // The innermost frame, then frames whose previous pointers are `previous`.
  void Chain(uint64_t innermost, const std::vector<std::pair<uint64_t, uint64_t>>& frames) {
    std::vector<uint8_t> cframe(32, 0);
    std::memcpy(&cframe[layout_.cframe_current_frame], &innermost, 8);
    memory_.Put(kCframe, cframe.data(), cframe.size());
    for (auto [frame, previous] : frames) {
      std::vector<uint8_t> f(layout_.frame_size, 0);
      std::memcpy(&f[layout_.frame_code], &kCode, 8);
      std::memcpy(&f[layout_.frame_previous], &previous, 8);
      memory_.Put(frame, f.data(), f.size());
    }
  }

  size_t ReadAll(ChainEnd* end) {
    FrameChainReader reader(memory_, layout_, addresses_);
    EXPECT_EQ(reader.CheckLayout(), "");
    const uint64_t tstate = reader.FindThreadState(kTid, 0);
    EXPECT_EQ(tstate, kTstate);
    PythonFrame out[16];
    return reader.ReadChain(tstate, out, 16, end);
  }

  FakeMemory memory_;
  PythonLayout layout_;
  InterpreterAddresses addresses_;
};

TEST_F(FakeInterpreter, WholeChain) {
  Chain(kFrames, {{kFrames, kFrames + 0x100}, {kFrames + 0x100, 0}});
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 2u);
  EXPECT_EQ(end, ChainEnd::kComplete);
}

TEST_F(FakeInterpreter, CycleEndsTheChain) {
  Chain(kFrames, {{kFrames, kFrames + 0x100}, {kFrames + 0x100, kFrames}});
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 2u);
  EXPECT_EQ(end, ChainEnd::kCycle);
}

// A frame owned by the C stack (an entry shim) whose `previous` is itself records nothing, so
// the cycle check over recorded frames never sees it: the step bound ends the walk.
TEST_F(FakeInterpreter, EntryShimPointingAtItselfEndsTheChain) {
  layout_.owner_cstack = 3;
  Chain(kFrames, {{kFrames, kFrames + 0x100}, {kFrames + 0x100, kFrames + 0x100}});
  std::vector<uint8_t> shim(layout_.frame_size, 0);
  const uint64_t self = kFrames + 0x100;
  std::memcpy(&shim[layout_.frame_previous], &self, 8);
  shim[layout_.frame_owner] = 3;
  memory_.Put(self, shim.data(), shim.size());
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 1u);
  EXPECT_EQ(end, ChainEnd::kCycle);
}

TEST_F(FakeInterpreter, GarbagePointerTruncates) {
  Chain(kFrames, {{kFrames, 0xdead0000}});
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 1u);
  EXPECT_EQ(end, ChainEnd::kUnreadable);
}

TEST_F(FakeInterpreter, NotACodeObjectTruncates) {
  // The second frame's "code" is the thread state: readable, but not of type code.
  Chain(kFrames, {{kFrames, kFrames + 0x100}});
  std::vector<uint8_t> f(layout_.frame_size, 0);
  std::memcpy(&f[layout_.frame_code], &kTstate, 8);
  memory_.Put(kFrames + 0x100, f.data(), f.size());
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 1u);
  EXPECT_EQ(end, ChainEnd::kNotCode);
}

TEST_F(FakeInterpreter, FullBufferSaysSo) {
  std::vector<std::pair<uint64_t, uint64_t>> frames;
  for (uint64_t i = 0; i < 20; ++i)
    frames.push_back({kFrames + i * 0x100, kFrames + (i + 1) * 0x100});
  frames.back().second = 0;
  Chain(kFrames, frames);
  ChainEnd end;
  EXPECT_EQ(ReadAll(&end), 16u);
  EXPECT_EQ(end, ChainEnd::kFull);
}

TEST_F(FakeInterpreter, LayoutCheckRejectsAThreadStateOfAnotherInterpreter) {
  const uint64_t other = 0x999000;
  std::vector<uint8_t> tstate(256, 0);
  std::memcpy(&tstate[layout_.tstate_interp], &other, 8);
  memory_.Put(kTstate, tstate.data(), tstate.size());
  FrameChainReader reader(memory_, layout_, addresses_);
  EXPECT_EQ(reader.CheckLayout(), "a thread state's interp does not point back to its interpreter");
}

TEST_F(FakeInterpreter, LayoutCheckRejectsAWrongCodeType) {
  addresses_.code_type = kInterp;  // not a type named "code"
  FrameChainReader reader(memory_, layout_, addresses_);
  EXPECT_EQ(reader.CheckLayout(), "PyCode_Type's tp_name does not read \"code\"");
}

// 3.13's layout (from 3.13.0's _Py_DebugOffsets, as debug_offsets_test has it) over structures
// laid out by hand: two interpreters (PyInterpreterState.next is not first in 3.13), entry shims
// holding None.
class FakeInterpreter313 : public ::testing::Test {
 protected:
  static constexpr uint64_t kRuntime = 0x100000;
  static constexpr uint64_t kInterp = 0x200000;   // its only thread sits in an entry shim
  static constexpr uint64_t kInterp2 = 0x300000;  // the thread read
  static constexpr uint64_t kTstate = 0x400000;
  static constexpr uint64_t kTstate2 = 0x410000;
  static constexpr uint64_t kCodeType = 0x500000;
  static constexpr uint64_t kCode = 0x600000;
  static constexpr uint64_t kNone = 0x680000;
  static constexpr uint64_t kFrames = 0x700000;  // frame i at kFrames + i * 0x100
  static constexpr pid_t kTid = 4321;

  void SetUp() override {
    DebugOffsets313 d;
    std::memset(&d, 0, sizeof(d));
    std::memcpy(d.cookie, "xdebugpy", 8);
    d.version = 0x030d00f0;
    d.runtime_state = {283320, 608, 632};
    d.interpreter_state = {194968, 7272, 7264, 7344, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    d.thread_state = {304, 0, 8, 16, 72, 152, 160, 232, 32};
    d.interpreter_frame = {80, 8, 0, 56, 72, 70};
    d.code_object = {208, 112, 120, 128, 136, 68, 52, 96, 104, 200};
    d.pyobject = {16, 8};
    d.type_object = {416, 24, 88, 168};
    d.bytes_object = {40, 16, 32};
    d.unicode_object = {64, 32, 16, 40};
    ASSERT_EQ(LayoutFromDebugOffsets(d, 13, &layout_), "");
    addresses_.minor = 13;
    addresses_.runtime = kRuntime;
    addresses_.code_type = kCodeType;
    Struct(kRuntime, 1024, {{layout_.runtime_interpreters_head, kInterp}});
    Struct(kInterp, 8192,
           {{layout_.interp_next, kInterp2}, {layout_.interp_threads_head, kTstate}});
    Struct(kInterp2, 8192, {{layout_.interp_threads_head, kTstate2}});
    Struct(kTstate, 304, {{layout_.tstate_interp, kInterp}, {layout_.tstate_frame, kFrames}});
    Struct(kTstate2, 304,
           {{layout_.tstate_interp, kInterp2},
            {layout_.tstate_frame, kFrames + 0x100},
            {layout_.tstate_native_thread_id, kTid}});
    Struct(kCode, 256, {{layout_.object_type, kCodeType}});
    Struct(kNone, 16, {{layout_.object_type, kCodeType + 0x2000}});
    memory_.Put(kCodeType + 0x1000, "code", 5);
    Struct(kCodeType, 64, {{layout_.type_name, kCodeType + 0x1000}});
    // The first thread: only an entry shim. The second: a frame, a shim, a frame.
    Frame(kFrames, kNone, 0, true);
    Frame(kFrames + 0x100, kCode, kFrames + 0x200, false);
    Frame(kFrames + 0x200, kNone, kFrames + 0x300, true);
    Frame(kFrames + 0x300, kCode, 0, false);
  }

  void Struct(uint64_t at, size_t size, std::initializer_list<std::pair<uint32_t, uint64_t>> w) {
    std::vector<uint8_t> bytes(size, 0);
    for (auto [offset, value] : w) std::memcpy(&bytes[offset], &value, 8);
    memory_.Put(at, bytes.data(), bytes.size());
  }
  void Frame(uint64_t at, uint64_t code, uint64_t previous, bool shim) {
    std::vector<uint8_t> f(80, 0);
    std::memcpy(&f[layout_.frame_code], &code, 8);
    std::memcpy(&f[layout_.frame_previous], &previous, 8);
    f[layout_.frame_owner] = shim ? 3 : 0;  // FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_THREAD
    memory_.Put(at, f.data(), f.size());
  }

  FakeMemory memory_;
  PythonLayout layout_;
  InterpreterAddresses addresses_;
};

TEST_F(FakeInterpreter313, ShimsAndTheSecondInterpreter) {
  FrameChainReader reader(memory_, layout_, addresses_);
  // The first thread's innermost frame is a shim holding None: not a failed check.
  EXPECT_EQ(reader.CheckLayout(), "");
  const uint64_t tstate = reader.FindThreadState(kTid, 0);
  ASSERT_EQ(tstate, kTstate2);
  PythonFrame out[8];
  ChainEnd end;
  ASSERT_EQ(reader.ReadChain(tstate, out, 8, &end), 2u);
  EXPECT_EQ(end, ChainEnd::kComplete);
  EXPECT_EQ(out[0].frame, kFrames + 0x100);
  EXPECT_TRUE(out[0].entry);  // a shim under it
  EXPECT_EQ(out[1].frame, kFrames + 0x300);
  EXPECT_FALSE(out[1].entry);
}

TEST_F(FakeInterpreter313, AFrameHoldingNoneThatIsNoShimFailsTheCheck) {
  Frame(kFrames, kNone, 0, false);
  FrameChainReader reader(memory_, layout_, addresses_);
  EXPECT_EQ(reader.CheckLayout(), "a thread's innermost frame does not hold a code object");
}

}  // namespace
}  // namespace hangwatch::python
