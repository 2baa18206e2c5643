// report/stack_identity: culprit, signature and fingerprint on stacks as real
// programs produce them (redis-server's DEBUG SLEEP, CPython before and after it specializes a
// call, node running JIT code).
#include "report/stack_identity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  EXPECT_EQ(CulpritName(c), "debugCommand");
}

TEST(StackIdentityTest, CulpritWithoutNameIsModulePlusOffsetAndAllSystemFallsBackToLeaf) {
  Culprit c = FindCulprit(S({F(kLibc, 0xcf545, "clock_nanosleep"), F(kPython, 0x5d64b4),
                             F(kPython, 0x52b9e0, "_PyEval_EvalFrameDefault")}));
  EXPECT_EQ(c.frame, 1);
  EXPECT_EQ(CulpritName(c), "python3.11+0x5d64b4");
  c = FindCulprit(S({F(kLibc, 0x10, "epoll_wait"), F(kLibc, 0x20, "__libc_start_main")}));
  EXPECT_EQ(c.frame, 0);
  EXPECT_EQ(c.symbol, "epoll_wait");
  c = FindCulprit(S({F("", 0x7f0012345678, "LazyCompile:*busy /tmp/app.js:1:15"),
                     F("/usr/bin/node", 0x1d0000, "Builtins_InterpreterEntryTrampoline")}));
  EXPECT_EQ(c.frame, 0);
  EXPECT_EQ(CulpritName(c), "LazyCompile:*busy /tmp/app.js:1:15");
  EXPECT_TRUE(FindCulprit(Stack{}).empty());
  EXPECT_EQ(CulpritName(Culprit{}), "?");
  Culprit jit;
  jit.frame = 0;
  jit.offset = 0x7f00aa;
  EXPECT_EQ(CulpritName(jit), "0x7f00aa");
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
  EXPECT_EQ(c.offset, 0x647d97u) << CulpritName(c);
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

}  // namespace
}  // namespace hangwatch::report
