// report/stack_identity: culprit, signature and fingerprint on stacks as real
// programs produce them (redis-server's DEBUG SLEEP, CPython before and after it specializes a
// call, node running JIT code).
#include "report/stack_identity.h"

#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "report/cause_text.h"

namespace hangwatch::report {
namespace {

constexpr char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
constexpr char kPython[] = "/usr/bin/python3.11";
constexpr char kRedis[] = "/usr/bin/redis-check-rdb";

Frame F(const std::string& module, uint64_t offset, const std::string& symbol = "",
        const std::string& build_id = "") {
  Frame f;
  f.module = module;
  f.offset = offset;
  f.addr = 0x10000000 + offset;
  f.symbol = symbol;
  f.build_id = build_id.empty() && !module.empty() ? "b1d-" + module : build_id;
  return f;
}

Stack S(std::vector<Frame> frames) {
  Stack s;
  s.frames = std::move(frames);
  return s;
}

// redis-server DEBUG SLEEP: clock_nanosleep <- usleep <- debugCommand <- call <- ...
Stack RedisDebugSleep() {
  return S({F(kLibc, 0xcf545, "clock_nanosleep"), F(kLibc, 0xd4c33, "usleep"),
            F(kRedis, 0x10a3f1, "debugCommand"), F(kRedis, 0x5b1a2, "call"),
            F(kRedis, 0x5c0e0, "processCommand"), F(kRedis, 0x6d3e1, "processInputBuffer"),
            F(kRedis, 0x3f00, "main"), F(kLibc, 0x2724a, "__libc_start_call_main"),
            F(kLibc, 0x27305, "__libc_start_main"), F(kRedis, 0x3fa1, "_start")});
}

TEST(StackIdentityTest, CulpritIsTheInnermostFrameOutsideTheSystem) {
  const Culprit c = FindCulprit(RedisDebugSleep());
  EXPECT_EQ(c.symbol, "debugCommand");
  EXPECT_EQ(c.module, kRedis);
  EXPECT_EQ(c.offset, 0x10a3f1u);
  EXPECT_EQ(c.frame, 2);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "debugCommand");
}

TEST(StackIdentityTest, CulpritWithoutNameIsModulePlusOffsetAndAllSystemFallsBackToLeaf) {
  Culprit c = FindCulprit(S({F(kLibc, 0xcf545, "clock_nanosleep"), F(kPython, 0x5d64b4),
                             F(kPython, 0x52b9e0, "_PyEval_EvalFrameDefault")}));
  EXPECT_EQ(c.frame, 1);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "python3.11+0x5d64b4");
  c = FindCulprit(S({F(kLibc, 0x10, "epoll_wait"), F(kLibc, 0x20, "__libc_start_main")}));
  EXPECT_EQ(c.frame, 0);
  EXPECT_EQ(c.symbol, "epoll_wait");
  c = FindCulprit(S({F("", 0x7f0012345678, "LazyCompile:*busy /tmp/app.js:1:15"),
                     F("/usr/bin/node", 0x1d0000, "Builtins_InterpreterEntryTrampoline")}));
  EXPECT_EQ(c.frame, 0);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "LazyCompile:*busy /tmp/app.js:1:15");
  EXPECT_TRUE(FindCulprit(Stack{}).empty());
  EXPECT_EQ(CulpritLabel(Culprit{}, CulpritLabelStyle::kName), "?");
  Culprit jit;
  jit.frame = 0;
  jit.offset = 0x7f00aa;
  EXPECT_EQ(CulpritLabel(jit, CulpritLabelStyle::kName), "0x7f00aa");
}

// The styles of a culprit's label differ only in where the function is (its file's base name or
// whole path, with or without the line); the function is named by one rule in all of them.
TEST(StackIdentityTest, CulpritLabelStylesDifferOnlyInWhereTheFunctionIs) {
  Culprit native;
  native.frame = 0;
  native.module = "C:\\app\\tool.exe";
  native.offset = 0x10;
  native.file = "/src/debug.c";
  native.line = 1033;
  Culprit python;
  python.frame = 0;
  python.language = FrameLanguage::kPython;
  python.symbol = "Handler.handle";
  python.offset = 7;
  python.file = "/srv/app.py";
  python.line = 42;
  const std::pair<CulpritLabelStyle, std::vector<std::string>> expected[] = {
      {CulpritLabelStyle::kFunction, {"tool.exe+0x10", "Handler.handle", "?"}},
      {CulpritLabelStyle::kBaseFileLine,
       {"tool.exe+0x10 (debug.c:1033)", "Handler.handle (app.py:42)", "?"}},
      {CulpritLabelStyle::kPathFileLine,
       {"tool.exe+0x10 (/src/debug.c:1033)", "Handler.handle (/srv/app.py:42)", "?"}},
      {CulpritLabelStyle::kName, {"tool.exe+0x10", "Handler.handle (app.py:42)", "?"}},
      {CulpritLabelStyle::kSeries, {"tool.exe+0x10", "Handler.handle (app.py)", "?"}},
  };
  for (const auto& [style, labels] : expected) {
    EXPECT_EQ(CulpritLabel(native, style), labels[0]);
    EXPECT_EQ(CulpritLabel(python, style), labels[1]);
    EXPECT_EQ(CulpritLabel(Culprit{}, style), labels[2]);
  }
  python.symbol.clear();
  python.line = 0;
  EXPECT_EQ(CulpritLabel(python, CulpritLabelStyle::kBaseFileLine), "? (app.py)");
}

// The cause text names another thread's culprit by the same rule: an unnamed function in a
// module is its module's file name and offset (the cause text printed the offset alone).
TEST(StackIdentityTest, TheCauseTextNamesAThreadsCulpritByTheSameRule) {
  CauseThread t;
  t.syscall = "read";
  t.culprit.frame = 0;
  t.culprit.module = "/usr/lib/libfoo.so";
  t.culprit.offset = 0x5d64b4;
  t.culprit.file = "/src/foo.c";
  t.culprit.line = 7;
  EXPECT_EQ(DescribeActivity(t), "in read \u2190 libfoo.so+0x5d64b4 (foo.c:7)");
  t.culprit = Culprit{};
  EXPECT_EQ(DescribeActivity(t), "in read");
}

// CPython 3.11 before a call site is specialized: time.sleep is reached through
// cfunction_vectorcall_O (a static function, unnamed in Debian's stripped python3.11) and
// PyObject_Vectorcall; after it, the eval loop calls time_sleep directly, from another
// instruction.
Stack PythonSleep(bool specialized) {
  std::vector<Frame> f = {F(kLibc, 0xcf545, "clock_nanosleep"), F(kPython, 0x5d64b4)};
  if (!specialized) {
    f.push_back(F(kPython, 0x545963));
    f.push_back(F(kPython, 0x53acbc, "PyObject_Vectorcall"));
  }
  f.push_back(F(kPython, specialized ? 0x52c21a : 0x52b9e0, "_PyEval_EvalFrameDefault"));
  for (Frame g :
       {F(kPython, 0x5236bb, "PyEval_EvalCode"), F(kPython, 0x647d97), F(kPython, 0x6456ef),
        F(kPython, 0x651770), F(kPython, 0x6514bb, "_PyRun_SimpleFileObject"),
        F(kPython, 0x65007f, "Py_RunMain"), F(kLibc, 0x2724a, "__libc_start_call_main"),
        F(kLibc, 0x27305, "__libc_start_main"), F(kPython, 0x627bd1, "_start")}) {
    f.push_back(g);
  }
  return S(f);
}

// python3.12 -X perf: each Python function runs through a trampoline named in the perf map.
// The script's function is the culprit rather than the interpreter's anonymous builtin.
TEST(StackIdentityTest, PerfMapNamedScriptFunctionBeatsAnAnonymousInterpreterBuiltin) {
  Stack s = PythonSleep(true);
  Frame trampoline = F("", 0x7f12340000, "py::blocked:/srv/app.py");
  s.frames.insert(s.frames.begin() + 3, trampoline);  // after _PyEval_EvalFrameDefault
  const Culprit c = FindCulprit(s);
  EXPECT_EQ(c.symbol, "py::blocked:/srv/app.py");
  EXPECT_EQ(c.frame, 3);
  Stack generic = PythonSleep(false);
  generic.frames.insert(generic.frames.begin() + 5, trampoline);
  EXPECT_EQ(FindCulprit(generic).symbol, "py::blocked:/srv/app.py");
  EXPECT_EQ(Fingerprint(generic, 0xcf500), Fingerprint(s, 0xcf500));
  EXPECT_EQ(Signature(generic), Signature(s));
  // A named function of the interpreter's own is kept (it is not anonymous).
  s.frames[1].symbol = "time_sleep";
  EXPECT_EQ(FindCulprit(s).symbol, "time_sleep");
  // Anonymous frames of ordinary libraries stay the culprit: they are the application's code.
  Stack lib = S({F(kLibc, 0xcf545, "clock_nanosleep"), F("/usr/lib/libapp.so", 0x1234),
                 F("", 0x7f12340000, "py::blocked:/srv/app.py")});
  EXPECT_EQ(FindCulprit(lib).frame, 1);
}

TEST(StackIdentityTest, PythonCallSiteSpecializationKeepsFingerprintSignatureAndCulprit) {
  const Stack generic = PythonSleep(false), fast = PythonSleep(true);
  EXPECT_EQ(Fingerprint(generic, 0xcf500), Fingerprint(fast, 0xcf500));
  EXPECT_EQ(Signature(generic), Signature(fast));
  EXPECT_EQ(FindCulprit(generic).offset, FindCulprit(fast).offset);
  // Blocking in another builtin is another hang.
  Stack other = fast;
  other.frames[1].offset = 0x4a0010;
  EXPECT_NE(Fingerprint(other, 0xcf500), Fingerprint(fast, 0xcf500));
  // Without names (a stripped interpreter), the signature still tells the two builtins apart:
  // by the start of their functions, else (not known) by the call site.
  EXPECT_NE(Signature(other), Signature(fast));
}

// Unnamed frames of a stripped binary are identified by module, build-id and the start of their
// function: two functions never share an identity; two instructions of one function do.
TEST(StackIdentityTest, UnnamedFramesAreIdentifiedByTheStartOfTheirFunction) {
  Frame a = F(kPython, 0x605543);
  a.function_start = 0x605534;
  Frame a_elsewhere = a;
  a_elsewhere.offset = 0x6055e4;  // the same function, another instruction
  Frame b = a;
  b.function_start = 0x5e4493;
  b.offset = 0x5e45e2;
  EXPECT_EQ(FunctionIdentity(a, true), FunctionIdentity(a_elsewhere, true));
  EXPECT_EQ(FunctionIdentity(a, false), FunctionIdentity(a_elsewhere, false));
  EXPECT_NE(FunctionIdentity(a, true), FunctionIdentity(b, true));
  EXPECT_NE(FunctionIdentity(a, true).find("b1d-/usr/bin/python3.11"), std::string::npos)
      << "the build-id: the start means nothing in another build";
  Frame other_build = a;
  other_build.build_id = "0123";
  EXPECT_NE(FunctionIdentity(a, true), FunctionIdentity(other_build, true));
  // Names win, normalized: they survive a rebuild.
  Frame named = a;
  named.symbol = "long_add.cold";
  EXPECT_EQ(FunctionIdentity(named, true), "long_add");
  // Start unknown: the call site of a return address, nothing for the interrupted instruction.
  Frame unknown = F(kPython, 0x647d97);
  Frame unknown_moved = F(kPython, 0x647d99);
  EXPECT_NE(FunctionIdentity(unknown, false), FunctionIdentity(unknown_moved, false));
  EXPECT_EQ(FunctionIdentity(unknown, true), FunctionIdentity(unknown_moved, true));

  const Stack busy = S({a, F(kPython, 0x52b9e0, "_PyEval_EvalFrameDefault")});
  const Stack busy_elsewhere = S({a_elsewhere, F(kPython, 0x52b9e0, "_PyEval_EvalFrameDefault")});
  const Stack summing = S({b, F(kPython, 0x52b9e0, "_PyEval_EvalFrameDefault")});
  EXPECT_EQ(Signature(busy), Signature(busy_elsewhere));
  EXPECT_NE(Signature(busy), Signature(summing));
}

// CPython's busy loop: each stack holds a few samples, with its own leaf (an allocator, a number
// method, the eval loop itself); one unnamed function is in every sample.
std::vector<Stack> SpreadSamples(bool reordered) {
  auto frame = [](uint64_t offset, uint64_t start, const std::string& symbol = "") {
    Frame f = F(kPython, offset, symbol);
    f.function_start = start;
    return f;
  };
  const Frame shared = frame(0x647d97, 0x647d67);
  const Frame eval = frame(0x52b9e0, 0x52b0f0, "_PyEval_EvalFrameDefault");
  const Frame main = frame(0x6514bb, 0x651330, "_PyRun_SimpleFileObject");
  std::vector<Stack> stacks = {
      S({frame(0x6055e4, 0x605534), frame(0x51f62b, 0x51f5e9), eval, shared, main}),
      S({frame(0x5009d0, 0x500950, "PyObject_Free"), eval, shared, main}),
      S({frame(0x52f6fa, 0x52b0f0, "_PyEval_EvalFrameDefault"), shared, main}),
      S({frame(0x605543, 0x605534), frame(0x51f62b, 0x51f5e9), eval, shared, main}),
      S({F(kLibc, 0xcf439, "__clock_gettime"), frame(0x5e45e2, 0x5e4493), eval, shared, main})};
  const uint32_t counts[] = {4, 3, 3, 2, 2};
  for (size_t i = 0; i < stacks.size(); ++i) stacks[i].count = counts[i];
  if (reordered) std::swap(stacks[0], stacks[1]);
  return stacks;
}

TEST(StackIdentityTest, HangCulpritIsTheInnermostFunctionMostSamplesShare) {
  const std::vector<Stack> stacks = SpreadSamples(false);
  const Culprit c = HangCulprit(stacks);
  EXPECT_EQ(c.offset, 0x647d97u) << CulpritLabel(c, CulpritLabelStyle::kName);
  EXPECT_EQ(c.stack, 0);
  EXPECT_EQ(c.frame, 3);
  // Another dominant stack (another run): the same culprit and signature.
  const std::vector<Stack> other = SpreadSamples(true);
  const Culprit d = HangCulprit(other);
  EXPECT_EQ(d.offset, 0x647d97u);
  EXPECT_EQ(HangSignature(stacks, c), HangSignature(other, d));
  // The dominant stack's own leaf function (6 of 14 samples) is not what they share; before, it
  // was the culprit.
  EXPECT_EQ(FindCulprit(stacks[0]).offset, 0x6055e4u);
  // A leaf function in three quarters of the samples is the culprit.
  std::vector<Stack> leaf_heavy = stacks;
  leaf_heavy[0].count = 40;
  EXPECT_EQ(HangCulprit(leaf_heavy).offset, 0x6055e4u);
}

TEST(StackIdentityTest, HangCulpritOutsideTheDominantStackSaysWhichStack) {
  auto frame = [](const std::string& module, uint64_t offset, const std::string& symbol) {
    return F(module, offset, symbol);
  };
  std::vector<Stack> stacks = {
      S({frame(kLibc, 0xcf545, "clock_nanosleep"), frame(kRedis, 0x3f00, "main")}),
      S({frame(kRedis, 0x500, "parse"), frame(kRedis, 0x600, "load"),
         frame(kRedis, 0x3f00, "main")}),
      S({frame(kRedis, 0x510, "parse_fast"), frame(kRedis, 0x610, "load"),
         frame(kRedis, 0x3f00, "main")})};
  stacks[0].count = 2;
  stacks[1].count = 3;
  stacks[2].count = 3;
  // `load` is in 6 of 8 samples (`main`, in all, is further out).
  const Culprit c = HangCulprit(stacks);
  EXPECT_EQ(c.symbol, "load");
  EXPECT_EQ(c.stack, 1);
  EXPECT_EQ(c.frame, 1);
  // No function in half of the samples: the dominant stack's own culprit.
  stacks[0] = S({frame(kRedis, 0x700, "save"), frame(kRedis, 0x3f10, "save_main")});
  stacks[1].frames.back() = frame(kRedis, 0x3f20, "load_main");
  stacks[2] = S({frame(kRedis, 0x800, "send"), frame(kRedis, 0x3f30, "send_main")});
  stacks[0].count = 4;
  stacks[1].count = 3;
  stacks[2].count = 3;
  EXPECT_EQ(HangCulprit(stacks).symbol, "save");
  EXPECT_TRUE(HangCulprit(std::vector<Stack>{}).empty());
}

// node --perf-basic-prof: V8 copies its builtins into anonymous memory, which the perf map does
// not name. In a stack with perf-map names, such a frame is the runtime's.
TEST(StackIdentityTest, AnonymousCodeOutsideThePerfMapIsTheRuntimes) {
  Stack s = S({F(kLibc, 0x84c, "__vdso_gettimeofday"),
               F("/usr/bin/node", 0x151c77b, "v8::internal::Runtime_DateCurrentTime(int)"),
               F("", 0x7f4786e9a476), F("", 0x7f4766fc6fdb, "JS:*spinOnClock /tmp/a.js:1:21"),
               F("/usr/bin/node", 0x18cfd1c, "Builtins_InterpreterEntryTrampoline")});
  s.count = 5;
  EXPECT_EQ(FindCulprit(s).frame, 3);
  EXPECT_EQ(HangCulprit(std::vector<Stack>{s}).frame, 3);
  // Without perf-map names anywhere, anonymous code is JIT code nobody named: the application's.
  s.frames[3].symbol.clear();
  EXPECT_EQ(FindCulprit(s).frame, 2);
}

Frame Java(const std::string& method, const std::string& file, int line) {
  Frame f;
  f.language = FrameLanguage::kJava;
  f.symbol = method;
  f.file = file;
  f.line = line;
  return f;
}

// A JVM thread's stacks with the Java callers of its thread dump (hang/model/java_callers.h): a
// handler asleep in Thread.sleep is named by the application's method that slept, not by libjvm
// or the JDK; a JIT-compiled method named by the perf map stays the culprit above its callers.
TEST(StackIdentityTest, JavaCulpritIsTheApplicationsMethodBelowTheJvmAndAboveTheJdk) {
  constexpr char kJvm[] = "/usr/lib/jvm/java-17/lib/server/libjvm.so";
  const std::vector<Frame> callers = {
      Java("SlowServer.lambda$main$1", "SlowServer.java", 34),
      Java("sun.net.httpserver.ServerImpl$Exchange.run", "ServerImpl.java", 831),
      Java("java.lang.Thread.run", "Thread.java", 840)};
  Stack asleep =
      S({F(kLibc, 0x85f16, "__futex_abstimed_wait_common"),
         F(kJvm, 0x637008, "os::PlatformEvent::park(long)"), F(kJvm, 0x30e985, "JVM_Sleep"),
         Java("java.lang.Thread.sleep", "", 0), Java("SlowServer.nap", "SlowServer.java", 23)});
  asleep.frames.insert(asleep.frames.end(), callers.begin(), callers.end());
  asleep.count = 44;
  const Culprit c = HangCulprit(std::vector<Stack>{asleep});
  EXPECT_EQ(c.frame, 4);
  EXPECT_EQ(c.symbol, "SlowServer.nap");
  EXPECT_EQ(c.language, FrameLanguage::kJava);
  EXPECT_EQ(c.file, "SlowServer.java");
  EXPECT_EQ(c.line, 23);

  Stack busy = S({F("", 0x7f1f00ee8eeb, "long SlowServer.spin(long)")});
  busy.frames.insert(busy.frames.end(), callers.begin(), callers.end());
  busy.count = 43;
  EXPECT_EQ(HangCulprit(std::vector<Stack>{busy}).symbol, "long SlowServer.spin(long)");
}

TEST(StackIdentityTest, FingerprintSeesCallSitesAndLeafFunctionButNotLoadAddress) {
  const Stack a = RedisDebugSleep();
  EXPECT_EQ(Fingerprint(a, 0xcf500).size(), 16u);
  Stack moved = a;
  for (Frame& f : moved.frames) f.addr += 0x1000000;  // another run, another load address
  EXPECT_EQ(Fingerprint(moved, 0xcf500), Fingerprint(a, 0xcf500));
  Stack other_call_site = a;
  other_call_site.frames[3].offset += 0x20;  // debugCommand called from elsewhere in call()
  EXPECT_NE(Fingerprint(other_call_site, 0xcf500), Fingerprint(a, 0xcf500));
  EXPECT_NE(Fingerprint(a, 0xcf400), Fingerprint(a, 0xcf500)) << "another leaf function";
  EXPECT_EQ(Fingerprint(Stack{}, 0), "");
}

TEST(StackIdentityTest, SignatureIsByNamesOfAppFramesSoItSurvivesARebuild) {
  const Stack a = RedisDebugSleep();
  Stack rebuilt = a;
  for (Frame& f : rebuilt.frames) {
    f.offset += 0x333;  // other addresses, another build-id
    f.build_id = "another-build";
  }
  rebuilt.frames[0].symbol = "clock_nanosleep@GLIBC_2.17";  // system frames do not count
  EXPECT_EQ(Signature(rebuilt), Signature(a));
  EXPECT_NE(Fingerprint(rebuilt, 0xcf500), Fingerprint(a, 0xcf500));
  Stack renamed = a;
  renamed.frames[2].symbol = "debugCommandV2";
  EXPECT_NE(Signature(renamed), Signature(a));
  // GCC clones and V8 tiers are the same function.
  Stack clone = a;
  clone.frames[2].symbol = "debugCommand [clone .cold]";
  EXPECT_EQ(Signature(clone), Signature(a));
  EXPECT_EQ(Signature(a).size(), 16u);
  EXPECT_EQ(Signature(Stack{}), "");
  EXPECT_EQ(NormalizeForSignature("LazyCompile:*busy /tmp/a.js:3:10"), "busy /tmp/a.js:3:10");
  EXPECT_EQ(NormalizeForSignature("JS:~busy /tmp/a.js:3:10"), "busy /tmp/a.js:3:10");
  EXPECT_EQ(NormalizeForSignature("foo.isra.0"), "foo");
  EXPECT_EQ(NormalizeForSignature("foo.constprop.2.cold"), "foo");
  EXPECT_EQ(NormalizeForSignature("py::f:/srv/app.part.py"), "py::f:/srv/app.part.py");
  EXPECT_EQ(NormalizeForSignature("ns::f(int) const"), "ns::f(int) const");
}

// --- Python frames (Frame::language kPython): in place of the eval loop's frames that ran them.

Frame Py(const std::string& qualname, const std::string& file, int line, uint64_t code = 0) {
  Frame f;
  f.language = FrameLanguage::kPython;
  f.addr = code != 0 ? code : 0x7f0000000000 + std::hash<std::string>{}(qualname) % 0x100000 * 16;
  f.offset = static_cast<uint64_t>(line) * 2;
  f.symbol = qualname;
  f.file = file;
  f.line = line;
  return f;
}

constexpr char kSocketServer[] = "/usr/lib/python3.11/socketserver.py";
constexpr char kApp[] = "/srv/app.py";

// A request handler of Debian's python3.11 asleep in time.sleep: clock_nanosleep <- the
// stripped interpreter's time_sleep <- call dispatch <- handle_request <- serve <- the standard
// library's serve_forever <- <module> <- the interpreter's start-up. `code`: added to every
// code object's address (another run), `interp`: the interpreter's build.
Stack PythonSleepInHandler(uint64_t code = 0, const std::string& interp = "b1d-311",
                           uint64_t moved = 0) {
  return S({F(kLibc, 0xea7fa, "clock_nanosleep"), F(kLibc, 0xef6e3, "__nanosleep"),
            F(kPython, 0x5d64b4 + moved, "", interp), F(kPython, 0x52b9e0 + moved, "", interp),
            Py("Handler.handle_request", kApp, 42, 0x7f10000 + code),
            Py("Server.serve", kApp, 80, 0x7f20000 + code),
            Py("BaseServer.serve_forever", kSocketServer, 233, 0x7f30000 + code),
            Py("<module>", kApp, 99, 0x7f40000 + code), F(kPython, 0x62f0a1 + moved, "", interp),
            F(kPython, 0x62d000 + moved, "Py_BytesMain", interp),
            F(kLibc, 0x2724a, "__libc_start_call_main")});
}

TEST(StackIdentityTest, PythonCulpritIsTheInnermostApplicationPythonFunction) {
  const Stack s = PythonSleepInHandler();
  Culprit c = FindCulprit(s);
  EXPECT_EQ(c.frame, 4);
  EXPECT_EQ(c.language, FrameLanguage::kPython);
  EXPECT_EQ(c.symbol, "Handler.handle_request");
  EXPECT_EQ(c.file, kApp);
  EXPECT_EQ(c.line, 42);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "Handler.handle_request (app.py:42)");
  c = HangCulprit(std::span<const Stack>(&s, 1));
  EXPECT_EQ(c.frame, 4);
  EXPECT_EQ(c.language, FrameLanguage::kPython);
  // Without Python frames the same stack's culprit is the interpreter's anonymous builtin.
  Stack native = s;
  native.frames.erase(native.frames.begin() + 4, native.frames.begin() + 8);
  EXPECT_EQ(CulpritLabel(FindCulprit(native), CulpritLabelStyle::kName), "python3.11+0x5d64b4");
}

TEST(StackIdentityTest, PythonFunctionLabelAndIdentity) {
  EXPECT_EQ(PythonFunctionLabel("handle_request", "/srv/app.py", 42), "handle_request (app.py:42)");
  EXPECT_EQ(PythonFunctionLabel("f", "/srv/app.py", 0), "f (app.py)");
  EXPECT_EQ(PythonFunctionLabel("f", "", 7), "f");
  EXPECT_EQ(PythonFunctionLabel("", "C:\\srv\\app.py", 3), "? (app.py:3)");
  EXPECT_EQ(FunctionIdentity(Py("Handler.handle", kApp, 42, 0x1000), false),
            "Handler.handle (app.py)");
  // Not normalized as a C++ name would be: ".cold" is part of a Python name.
  EXPECT_EQ(FunctionIdentity(Py("Weather.cold", kApp, 1), false), "Weather.cold (app.py)");
}

// A C extension's code called from a Python function (numpy's loop, _json's encoder): the
// culprit is the Python function that called it, as a Python user names it.
TEST(StackIdentityTest, PythonFunctionNotTheCExtensionItCalledIsTheCulprit) {
  const char kNumpy[] =
      "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so";
  const Stack s = S({F(kNumpy, 0x1a2b30, "DOUBLE_add"), F(kNumpy, 0x1b0000, "ufunc_generic_call"),
                     F(kPython, 0x52b9e0), Py("compute", kApp, 12), Py("main", kApp, 30),
                     Py("<module>", kApp, 40), F(kPython, 0x62d000, "Py_BytesMain")});
  const Culprit c = FindCulprit(s);
  EXPECT_EQ(c.symbol, "compute");
  EXPECT_EQ(c.frame, 3);
  // The native frames called from Python are not in the signature: only Python functions.
  Stack python_only = S({Py("compute", kApp, 12), Py("main", kApp, 30), Py("<module>", kApp, 40)});
  EXPECT_EQ(Signature(s, 3), Signature(python_only));
}

// Third-party packages (gunicorn's worker loop, requests, urllib3) are not the culprit while an
// application frame is in the stack, and are when none is; the standard library never is
// while either is.
TEST(StackIdentityTest, PythonLibraryFramesGiveWayToTheApplications) {
  const char kSync[] = "/usr/lib/python3/dist-packages/gunicorn/workers/sync.py";
  const char kUrllib3[] = "/usr/lib/python3/dist-packages/urllib3/connection.py";
  const Stack in_app =
      S({F(kLibc, 0x11e0f0, "recv"), F(kPython, 0x5d0000),
         Py("SocketIO.readinto", "/usr/lib/python3.11/socket.py", 705),
         Py("HTTPConnection.getresponse", kUrllib3, 300),
         Py("fetch_prices", "/srv/shop/views.py", 17), Py("SyncWorker.handle_request", kSync, 178),
         Py("SyncWorker.run_for_one", kSync, 72), Py("<module>", "/usr/bin/gunicorn", 8),
         F(kPython, 0x62d000, "Py_BytesMain")});
  EXPECT_EQ(CulpritLabel(FindCulprit(in_app), CulpritLabelStyle::kName),
            "fetch_prices (views.py:17)");
  const Stack idle =
      S({F(kLibc, 0x11e0f0, "epoll_wait"), F(kPython, 0x5d0000),
         Py("EpollSelector.select", "/usr/lib/python3.11/selectors.py", 468),
         Py("SyncWorker.wait", kSync, 37), Py("SyncWorker.run_for_one", kSync, 72),
         Py("<module>", "/usr/bin/gunicorn", 8), F(kPython, 0x62d000, "Py_BytesMain")});
  EXPECT_EQ(CulpritLabel(FindCulprit(idle), CulpritLabelStyle::kName),
            "SyncWorker.wait (sync.py:37)");
  EXPECT_EQ(CulpritLabel(HangCulprit(std::span<const Stack>(&idle, 1)), CulpritLabelStyle::kName),
            "SyncWorker.wait (sync.py:37)");
  // Only the standard library: its innermost Python frame, not libc's.
  const Stack stdlib = S({F(kLibc, 0x11e0f0, "epoll_wait"),
                          Py("EpollSelector.select", "/usr/lib/python3.11/selectors.py", 468),
                          Py("<module>", "<frozen runpy>", 1)});
  EXPECT_EQ(CulpritLabel(FindCulprit(stdlib), CulpritLabelStyle::kName),
            "EpollSelector.select (selectors.py:468)");
}

// A C++ program that runs Python callbacks (an embedded interpreter, a GTK main loop through
// PyGObject): the callback is the culprit; the program's own frames around it stay in the
// signature.
TEST(StackIdentityTest, PythonCallbackInsideANativeProgram) {
  const char kGtk[] = "/usr/lib/x86_64-linux-gnu/libgtk-3.so.0";
  const Stack s = S(
      {F(kLibc, 0x10, "clock_nanosleep"), F(kPython, 0x5d64b4), Py("on_timeout", "/srv/gui.py", 21),
       F("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x7000, "ffi_call"), F(kGtk, 0x3000, "gtk_main"),
       Py("main", "/srv/gui.py", 40), F(kPython, 0x62d000, "Py_BytesMain")});
  const Culprit c = HangCulprit(std::span<const Stack>(&s, 1));
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "on_timeout (gui.py:21)");
  const Stack embedded = S({F(kLibc, 0x10, "clock_nanosleep"), Py("plugin_tick", "/srv/p.py", 5),
                            F("/usr/lib/libpython3.11.so.1.0", 0x1000, "PyObject_Call"),
                            F("/opt/app/bin/editor", 0x2000, "Plugins::Tick"),
                            F("/opt/app/bin/editor", 0x2100, "MainLoop::Run")});
  EXPECT_EQ(CulpritLabel(FindCulprit(embedded), CulpritLabelStyle::kName), "plugin_tick (p.py:5)");
  EXPECT_NE(Signature(embedded, 1), Signature(S({Py("plugin_tick", "/srv/p.py", 5)})))
      << "the program's frames around the callback are in the signature";
}

// Another run puts every code object elsewhere; another interpreter build (another build-id,
// its functions moved) runs the same Python code: the signature is the same for both, the
// fingerprint for the run of the same build.
TEST(StackIdentityTest, PythonSignatureAndFingerprintIgnoreCodeAddresses) {
  const Stack a = PythonSleepInHandler();
  const Stack next_run = PythonSleepInHandler(/*code=*/0x123450);
  const Stack other_build = PythonSleepInHandler(0x999990, "b1d-311-rebuilt", 0x40);
  const size_t from = static_cast<size_t>(FindCulprit(a).frame);
  EXPECT_EQ(Signature(next_run, from), Signature(a, from));
  EXPECT_EQ(Signature(other_build, from), Signature(a, from));
  EXPECT_EQ(Fingerprint(next_run, 0xea700), Fingerprint(a, 0xea700));
  // Another caller line is another hang in the fingerprint, not in the signature.
  Stack other_line = a;
  other_line.frames[5].line = 81;
  EXPECT_NE(Fingerprint(other_line, 0xea700), Fingerprint(a, 0xea700));
  EXPECT_EQ(Signature(other_line, from), Signature(a, from));
  // The innermost Python frame's line moves while it computes: not in the fingerprint.
  Stack busy_elsewhere = a;
  busy_elsewhere.frames[4].line = 43;
  EXPECT_EQ(Fingerprint(busy_elsewhere, 0xea700), Fingerprint(a, 0xea700));
  // Another function is another hang in both.
  Stack other_function = a;
  other_function.frames[4].symbol = "Handler.handle_upload";
  EXPECT_NE(Signature(other_function, from), Signature(a, from));
  EXPECT_NE(Fingerprint(other_function, 0xea700), Fingerprint(a, 0xea700));
  // The same name in another file is another function.
  Stack other_file = a;
  other_file.frames[4].file = "/srv/admin.py";
  EXPECT_NE(Signature(other_file, from), Signature(a, from));
}

// A busy Python function: its samples end in different lines and different interpreter
// functions; the hang's culprit is the function they share, the same in every run.
TEST(StackIdentityTest, PythonHangCulpritIsTheFunctionTheSamplesShare) {
  std::vector<Stack> stacks;
  const int lines[] = {12, 13, 12, 14};
  for (size_t k = 0; k < 4; ++k) {
    Stack s = S({F(kPython, 0x400000 + k * 0x100), Py("checksum", kApp, lines[k]),
                 Py("Handler.handle_request", kApp, 42), Py("<module>", kApp, 99),
                 F(kPython, 0x62d000, "Py_BytesMain")});
    s.count = static_cast<uint32_t>(10 - k);
    stacks.push_back(s);
  }
  const Culprit c = HangCulprit(stacks);
  EXPECT_EQ(c.symbol, "checksum");
  EXPECT_EQ(c.frame, 1);
  EXPECT_EQ(c.stack, 0);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "checksum (app.py:12)");
  EXPECT_EQ(HangSignature(stacks, c).size(), 16u);
}

// A blocked Python hang: a 500 ms time.sleep in nap(), 16 samples. 15 read the chain whole,
// nap <- <module>; one was cut short after nap (marked partial). nap is in all 16 samples and is
// the innermost: the culprit, though <module> has fewer samples.
TEST(StackIdentityTest, PythonCulpritIsTheInnermostFunctionWhenAChainWasCutShort) {
  auto sleep_in = [](std::vector<Frame> python) {
    std::vector<Frame> frames = {F(kLibc, 0xea7fa, "clock_nanosleep"),
                                 F(kPython, 0x5d64b4, "", "b1d-311")};
    frames.insert(frames.end(), python.begin(), python.end());
    frames.push_back(F(kPython, 0x62d000, "Py_BytesMain", "b1d-311"));
    return S(frames);
  };
  std::vector<Stack> stacks = {
      sleep_in({Py("nap", kApp, 3, 0x7f10000), Py("<module>", kApp, 9, 0x7f20000)}),
      sleep_in({Py("nap", kApp, 3, 0x7f10000)})};
  stacks[0].count = 15;
  stacks[1].count = 1;
  stacks[1].partial = true;
  Culprit c = HangCulprit(stacks);
  EXPECT_EQ(CulpritLabel(c, CulpritLabelStyle::kName), "nap (app.py:3)");
  EXPECT_EQ(c.stack, 0);
  EXPECT_EQ(c.frame, 2);
  // The same when the cut went unnoticed: innermost by position, not by fewest samples.
  stacks[1].partial = false;
  EXPECT_EQ(CulpritLabel(HangCulprit(stacks), CulpritLabelStyle::kName), "nap (app.py:3)");
  // Partial samples do not count against the callers they lack: 3 whole samples in
  // handle <- serve <- <module>, 5 cut after handle (partial). serve is in every whole sample:
  // still inside <module>, and handle is inside both.
  std::vector<Stack> cut = {
      sleep_in({Py("handle", kApp, 20, 0x7f30000)}),
      sleep_in({Py("handle", kApp, 20, 0x7f30000), Py("serve", kApp, 30, 0x7f40000),
                Py("<module>", kApp, 9, 0x7f20000)})};
  cut[0].count = 5;
  cut[0].partial = true;
  cut[1].count = 3;
  EXPECT_EQ(CulpritLabel(HangCulprit(cut), CulpritLabelStyle::kName), "handle (app.py:20)");
  // A function only partial stacks lack is still shared by the samples that can say: the
  // innermost application function of two, busy in other functions under serve.
  std::vector<Stack> two = {
      sleep_in({Py("parse", kApp, 40, 0x7f50000)}),
      sleep_in({Py("render", kApp, 50, 0x7f60000), Py("serve", kApp, 30, 0x7f40000),
                Py("<module>", kApp, 9, 0x7f20000)}),
      sleep_in({Py("encode", kApp, 60, 0x7f70000), Py("serve", kApp, 30, 0x7f40000),
                Py("<module>", kApp, 9, 0x7f20000)})};
  two[0].count = 6;
  two[0].partial = true;
  two[1].count = 3;
  two[2].count = 3;
  EXPECT_EQ(CulpritLabel(HangCulprit(two), CulpritLabelStyle::kName), "serve (app.py:30)");
  // Counted as whole, the 6 cut samples would have voted serve and <module> under half.
  two[0].partial = false;
  EXPECT_EQ(CulpritLabel(HangCulprit(two), CulpritLabelStyle::kName), "parse (app.py:40)");
}

}  // namespace
}  // namespace hangwatch::report
