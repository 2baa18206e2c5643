// AddJavaFrames: which of a JVM thread's stacks get the Java frames of its thread dump, and
// which of them: all below a walk that ended in the JVM (a handler asleep in Thread.sleep), the
// callers below a JIT frame the dump has, none below a walk that reached the thread's start or
// ended at code the dump does not name.
#include "hang/model/java_callers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hangwatch::agent {
namespace {

Frame Native(const std::string& module, const std::string& symbol) {
  Frame f;
  f.module = module;
  f.symbol = symbol;
  return f;
}

Frame Jit(const std::string& perf_map_name) {
  Frame f;
  f.addr = 0x7f0000001000;
  f.offset = f.addr;
  f.symbol = perf_map_name;
  return f;
}

Stack StackOf(std::vector<Frame> frames) {
  Stack s;
  s.count = 1;
  s.frames = std::move(frames);
  return s;
}

const std::vector<JavaStackFrame> kDump = {
    {"java.lang.Thread.sleep", "", 0},
    {"Server.nap", "Server.java", 23},
    {"Server.handle", "Server.java", 34},
    {"java.lang.Thread.run", "Thread.java", 840},
};

std::vector<std::string> JavaMethods(const Stack& s) {
  std::vector<std::string> out;
  for (const Frame& f : s.frames) {
    if (f.language == FrameLanguage::kJava) out.push_back(f.symbol);
  }
  return out;
}

TEST(JavaCallersTest, AWalkThatEndedInTheJvmGetsTheWholeJavaStack) {
  std::vector<Stack> stacks = {StackOf({Native("/usr/lib/libc.so.6", "__futex_wait"),
                                        Native("/jdk/lib/server/libjvm.so", "JVM_Sleep")})};
  AddJavaFrames(kDump, &stacks);
  ASSERT_EQ(stacks[0].frames.size(), 6u);
  EXPECT_EQ(JavaMethods(stacks[0]),
            (std::vector<std::string>{"java.lang.Thread.sleep", "Server.nap", "Server.handle",
                                      "java.lang.Thread.run"}));
  const Frame& nap = stacks[0].frames[3];
  EXPECT_EQ(nap.file, "Server.java");
  EXPECT_EQ(nap.line, 23);
  EXPECT_EQ(nap.module, "");
  EXPECT_EQ(nap.addr, 0u);
}

TEST(JavaCallersTest, AJitFrameTheDumpHasGetsItsCallersOnly) {
  std::vector<Stack> stacks = {StackOf({Jit("void Server.nap(long)")})};
  AddJavaFrames(kDump, &stacks);
  EXPECT_EQ(JavaMethods(stacks[0]),
            (std::vector<std::string>{"Server.handle", "java.lang.Thread.run"}));
  EXPECT_EQ(stacks[0].frames[0].language, FrameLanguage::kNative) << "the JIT frame stays first";
}

TEST(JavaCallersTest, AWalkThatReachedTheThreadsStartOrEndedAtUnnamedCodeGetsNone) {
  std::vector<Stack> stacks = {
      StackOf({Native("/jdk/lib/server/libjvm.so", "JVM_Sleep"),
               Native("/usr/lib/libc.so.6", "start_thread"),
               Native("/usr/lib/libc.so.6", "clone3")}),
      StackOf({Jit("Interpreter")}),
      StackOf({Jit("void Other.method()")}),  // not in the dump: another moment's code
      StackOf({Jit("")}),
  };
  Stack partial = StackOf({Native("/jdk/lib/server/libjvm.so", "JVM_Sleep")});
  partial.partial = true;
  stacks.push_back(partial);
  const std::vector<Stack> before = stacks;
  AddJavaFrames(kDump, &stacks);
  for (size_t i = 0; i < stacks.size(); ++i) {
    EXPECT_EQ(stacks[i].frames.size(), before[i].frames.size()) << "stack " << i;
  }
}

// Cold code: the walk goes through one interpreter frame per Java method out to the thread's
// start. A run as long as the dump is its Java frames, in order; another length is another
// moment's chain (or JIT code among it) and stays as it is.
TEST(JavaCallersTest, ARunOfInterpreterFramesAsLongAsTheDumpIsReplacedByIt) {
  auto walk = [](size_t interpreted) {
    std::vector<Frame> f = {Native("/usr/lib/libc.so.6", "__futex_wait"),
                            Native("/jdk/lib/server/libjvm.so", "JVM_Sleep")};
    for (size_t i = 0; i < interpreted; ++i) f.push_back(Jit("Interpreter"));
    f.push_back(Jit("StubRoutines (1)"));
    f.push_back(Native("/jdk/lib/server/libjvm.so", "JavaCalls::call_helper"));
    f.push_back(Native("/usr/lib/libc.so.6", "start_thread"));
    f.push_back(Native("/usr/lib/libc.so.6", "__GI___clone3"));
    return StackOf(f);
  };
  std::vector<Stack> stacks = {walk(4), walk(3)};
  AddJavaFrames(kDump, &stacks);
  ASSERT_EQ(stacks[0].frames.size(), 10u);
  EXPECT_EQ(JavaMethods(stacks[0]),
            (std::vector<std::string>{"java.lang.Thread.sleep", "Server.nap", "Server.handle",
                                      "java.lang.Thread.run"}));
  EXPECT_EQ(stacks[0].frames[2].symbol, "java.lang.Thread.sleep");
  EXPECT_EQ(stacks[0].frames[6].symbol, "StubRoutines (1)");
  EXPECT_EQ(stacks[0].frames[9].symbol, "__GI___clone3");
  EXPECT_TRUE(JavaMethods(stacks[1]).empty());
  EXPECT_EQ(stacks[1].frames.size(), 9u);
}

// A thread asleep in a JDK library read through /proc: a stack scan went from the library's
// frame to JavaCalls::call_helper, past the Java frames. They go before it; a walk with a
// code-cache frame before it, or two entries into Java, is left as it is.
TEST(JavaCallersTest, AWalkThatSkippedToTheJvmsEntryIntoJavaGetsTheFramesBeforeIt) {
  auto walk = [](std::vector<Frame> inner) {
    inner.push_back(Native("/jdk/lib/server/libjvm.so",
                           "JavaCalls::call_helper(JavaValue*, methodHandle const&)"));
    inner.push_back(Native("/jdk/lib/server/libjvm.so", "thread_native_entry(Thread*)"));
    inner.push_back(Native("/usr/lib/libc.so.6", "start_thread"));
    inner.push_back(Native("/usr/lib/libc.so.6", "__GI___clone3"));
    return StackOf(inner);
  };
  std::vector<Stack> stacks = {
      walk({Native("/usr/lib/libc.so.6", "__poll"),
            Native("/jdk/lib/libnio.so", "Java_sun_nio_ch_Net_poll")}),
      walk({Native("/usr/lib/libc.so.6", "__poll"), Jit("void Other.method()")}),
  };
  Stack twice = walk({Native("/usr/lib/libc.so.6", "__poll")});
  twice.frames.insert(twice.frames.begin() + 1, twice.frames[1]);
  stacks.push_back(twice);
  AddJavaFrames(kDump, &stacks);
  ASSERT_EQ(stacks[0].frames.size(), 10u);
  EXPECT_EQ(JavaMethods(stacks[0]),
            (std::vector<std::string>{"java.lang.Thread.sleep", "Server.nap", "Server.handle",
                                      "java.lang.Thread.run"}));
  EXPECT_EQ(stacks[0].frames[1].symbol, "Java_sun_nio_ch_Net_poll");
  EXPECT_EQ(stacks[0].frames[2].symbol, "java.lang.Thread.sleep");
  EXPECT_EQ(stacks[0].frames[6].symbol.rfind("JavaCalls::call_helper", 0), 0u);
  EXPECT_TRUE(JavaMethods(stacks[1]).empty());
  EXPECT_TRUE(JavaMethods(stacks[2]).empty());
}

TEST(JavaCallersTest, PerfMapNamesOfMethodsAreTheDumpsNames) {
  EXPECT_EQ(JavaMethodOfPerfMapName("long Server.spin(long)"), "Server.spin");
  EXPECT_EQ(JavaMethodOfPerfMapName("void a.b.C$D.run()"), "a.b.C$D.run");
  EXPECT_EQ(JavaMethodOfPerfMapName("Interpreter"), "");
  EXPECT_EQ(JavaMethodOfPerfMapName("StubRoutines (1)"), "");
}

}  // namespace
}  // namespace hangwatch::agent
