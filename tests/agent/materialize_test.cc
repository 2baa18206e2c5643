// Materialization: module / build-id / offset resolution, stack order and id remapping, the
// fingerprint's stability (across load addresses, pcs within a function, and real runs of this
// binary), and the spdlog report's shape.
#include "hang/model/materialize.h"
#include "tests/keep_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include "agent/sinks/spdlog_reporter.h"
#include "hang/model/hang_data.h"
#include "hang/model/runtime_frame_word.h"
#include "hang/model/runtime_names.h"
#include "hangwatch/hangwatch.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "symbols/module_map.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch::agent {
namespace {

// A module at `bias` whose code spans [bias + 0x1000, bias + 0x9000).
std::shared_ptr<const symbols::ModuleMap> MapAt(uintptr_t bias) {
  symbols::Module m;
  m.path = "/opt/app/bin/app";
  m.build_id = "8d1e5c0ffee0";
  m.load_bias = bias;
  m.exec_ranges.push_back({bias + 0x1000, bias + 0x9000});
  return std::make_shared<const symbols::ModuleMap>(std::vector<symbols::Module>{m});
}

// Two stacks: B (3 samples) after A (2 samples); leaf pcs vary inside their functions.
void Fill(HangData* hang, uintptr_t bias, uintptr_t pc_jitter) {
  hang->Clear();
  const uintptr_t a[] = {bias + 0x1010 + pc_jitter, bias + 0x2222, 0x7777};
  const uintptr_t b[] = {bias + 0x3030 + pc_jitter, bias + 0x2222, 0x7777};
  hang->AddSample(50, a, 3, bias + 0x1000, 10'000'000, 'R', true);
  hang->AddSample(60, a, 3, bias + 0x1000, 10'000'000, 'R', true);
  hang->AddSample(70, nullptr, 0, 0, 0, 'D', false);
  hang->AddSample(80, b, 3, bias + 0x3000, 10'000'000, 'R', true);
  hang->AddSample(90, b, 3, bias + 0x3000, 10'000'000, 'R', true);
  hang->AddSample(100, b, 3, bias + 0x3000, 10'000'000, 'R', true);
  hang->summary.duration_ns = 120'000'000;
  hang->summary.cpu_ns = 50'000'000;
  hang->summary.cpu_known = true;
}

// Names of Python frames by word, as the watchdog resolved them (python_stacks.h).
class MapNames final : public RuntimeNames {
 public:
  bool Find(uintptr_t word, RuntimeFrameName* out) const override {
    if (word != RuntimeFrameWord(0x7f00aa00, 12)) return false;
    out->symbol = "Handler.handle";
    out->file = "/srv/app.py";
    out->line = 42;
    return true;
  }
};

// Python frames of the stack table become Frame{kPython}: the code object, the instruction,
// the name, file and line when the watchdog resolved them, nothing of a module; the native
// frames around them stay native.
TEST(MaterializeTest, PythonFramesAreMaterializedAsPythonFrames) {
  HangData hang(HangLimits{});
  const uintptr_t bias = 0x555500000000;
  const uintptr_t frames[] = {bias + 0x1010, RuntimeFrameWord(0x7f00aa00, 12),
                              RuntimeFrameWord(0x7f00bb00, -1), bias + 0x2222};
  const uint8_t tags[] = {static_cast<uint8_t>(FrameMethod::kPc), kPythonFrameTag, kPythonFrameTag,
                          static_cast<uint8_t>(FrameMethod::kCfi)};
  hang.AddSample(50, frames, 4, bias + 0x1000, 10'000'000, 'R', true,
                 reinterpret_cast<const FrameMethod*>(tags));
  MapNames names;
  MaterializeOptions o;
  o.modules = MapAt(bias);
  o.symbolize = false;
  o.runtime_names = &names;
  const HangRecord r = Materialize(hang, o);
  ASSERT_EQ(r.stacks.size(), 1u);
  const std::vector<Frame>& f = r.stacks[0].frames;
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].language, FrameLanguage::kNative);
  EXPECT_EQ(f[0].module, "/opt/app/bin/app");
  EXPECT_EQ(f[1].language, FrameLanguage::kPython);
  EXPECT_EQ(f[1].addr, 0x7f00aa00u);
  EXPECT_EQ(f[1].offset, 12u);
  EXPECT_EQ(f[1].symbol, "Handler.handle");
  EXPECT_EQ(f[1].file, "/srv/app.py");
  EXPECT_EQ(f[1].line, 42);
  EXPECT_TRUE(f[1].module.empty());
  EXPECT_EQ(f[2].language, FrameLanguage::kPython);  // never resolved: unnamed
  EXPECT_EQ(f[2].addr, 0x7f00bb00u);
  EXPECT_TRUE(f[2].symbol.empty());
  EXPECT_EQ(f[3].language, FrameLanguage::kNative);
  EXPECT_EQ(f[3].method, FrameMethod::kCfi);
}

// Names of nap() and <module>, the two Python functions of a sleeping script.
class NapNames final : public RuntimeNames {
 public:
  bool Find(uintptr_t word, RuntimeFrameName* out) const override {
    out->file = "/srv/nap.py";
    out->symbol = RuntimeWordKey(word) == 0x7f00aa00 ? "nap" : "<module>";
    out->line = RuntimeWordKey(word) == 0x7f00aa00 ? 3 : 9;
    return true;
  }
};

// 15 samples read the chain whole (nap <- <module>); one was cut short after nap, its outermost
// frame read tagged kPythonPartialTag by the capture's merge: that stack is partial, and the
// culprit is nap, in every sample and the innermost.
TEST(MaterializeTest, AChainReadInPartMakesAPartialStack) {
  HangData hang(HangLimits{});
  const uintptr_t bias = 0x555500000000;
  const uintptr_t whole[] = {bias + 0x1010, RuntimeFrameWord(0x7f00aa00, 12),
                             RuntimeFrameWord(0x7f00bb00, 40), bias + 0x2222};
  const uint8_t whole_tags[] = {static_cast<uint8_t>(FrameMethod::kPc), kPythonFrameTag,
                                kPythonFrameTag, static_cast<uint8_t>(FrameMethod::kCfi)};
  const uintptr_t cut[] = {bias + 0x1010, RuntimeFrameWord(0x7f00aa00, 12)};
  const uint8_t cut_tags[] = {static_cast<uint8_t>(FrameMethod::kPc), kPythonPartialTag};
  for (uint32_t i = 0; i < 16; ++i) {
    const bool partial = i == 7;
    hang.AddSample(50 + 30 * i, partial ? cut : whole, partial ? 2 : 4, bias + 0x1000, 0, 'S', true,
                   reinterpret_cast<const FrameMethod*>(partial ? cut_tags : whole_tags));
  }
  NapNames names;
  MaterializeOptions o;
  o.modules = MapAt(bias);
  o.symbolize = false;
  o.runtime_names = &names;
  const HangRecord r = Materialize(hang, o);
  ASSERT_EQ(r.stacks.size(), 2u);
  EXPECT_EQ(r.stacks[0].count, 15u);
  EXPECT_FALSE(r.stacks[0].partial);
  EXPECT_TRUE(r.stacks[1].partial);
  ASSERT_EQ(r.stacks[1].frames.size(), 2u);
  EXPECT_EQ(r.stacks[1].frames[1].language, FrameLanguage::kPython);
  EXPECT_EQ(r.stacks[1].frames[1].symbol, "nap");
  EXPECT_EQ(r.culprit.symbol, "nap");
  EXPECT_EQ(r.culprit.stack, 0);
  EXPECT_EQ(r.culprit.frame, 1);
}

TEST(MaterializeTest, ResolvesSortsAndRemapsTimeline) {
  HangData hang(HangLimits{});
  Fill(&hang, 0x555500000000, 0);
  MaterializeOptions o;
  o.modules = MapAt(0x555500000000);
  o.symbolize = false;
  const HangRecord r = Materialize(hang, o);
  ASSERT_EQ(r.stacks.size(), 2u);
  EXPECT_EQ(r.stacks[0].count, 3u);  // B first: more samples
  EXPECT_EQ(r.stacks[1].count, 2u);
  EXPECT_EQ(r.dominant_stack, 0);
  const Frame& f = r.stacks[0].frames[0];
  EXPECT_EQ(f.module, "/opt/app/bin/app");
  EXPECT_EQ(f.build_id, "8d1e5c0ffee0");
  EXPECT_EQ(f.offset, 0x3030u);
  EXPECT_EQ(r.stacks[0].frames[2].module, "") << "outside every module";
  EXPECT_EQ(r.stacks[0].frames[2].offset, 0x7777u);
  ASSERT_EQ(r.timeline.size(), 6u);
  EXPECT_EQ(r.timeline[0].stack, 1) << "A is now id 1";
  EXPECT_EQ(r.timeline[2].stack, -1);
  EXPECT_EQ(r.timeline[3].stack, 0);
  EXPECT_EQ(r.failed_samples, 1u);
  ASSERT_EQ(r.modules.size(), 1u);
  EXPECT_EQ(r.modules[0].base, 0x555500000000u);
  EXPECT_EQ(r.cpu_percent, 41u);
}

TEST(MaterializeTest, FingerprintIgnoresLoadAddressAndPcWithinTheFunction) {
  HangData h1(HangLimits{}), h2(HangLimits{}), h3(HangLimits{});
  Fill(&h1, 0x555500000000, 0);
  Fill(&h2, 0x7f0000000000, 6);  // another run: other base, samples elsewhere in the function
  MaterializeOptions o1, o2;
  o1.modules = MapAt(0x555500000000);
  o2.modules = MapAt(0x7f0000000000);
  o1.symbolize = o2.symbolize = false;
  const std::string f1 = Materialize(h1, o1).fingerprint;
  EXPECT_EQ(f1.size(), 16u);
  EXPECT_EQ(f1, Materialize(h2, o2).fingerprint);
  // A different caller is a different hang.
  h3.Clear();
  const uintptr_t other[] = {0x555500000000 + 0x3030, 0x555500000000 + 0x2444, 0x7777};
  h3.AddSample(50, other, 3, 0x555500000000 + 0x3000, 0, 'R', true);
  EXPECT_NE(f1, Materialize(h3, o1).fingerprint);
}

// ---- the same stall in two runs of this binary (ASLR moves it) has the same fingerprint ----

// Spins without calls, so every sample has the same innermost frame and the same callers.
HW_TEST_KEEP_FRAME void FingerprintedStall(const std::atomic<bool>* done) {
  volatile uint64_t x = 0;
  while (!done->load(std::memory_order_relaxed)) x = x + 1;
}

// Runs only as a child of the test below (HANGWATCH_FINGERPRINT_CHILD set): prints the stall's
// fingerprint and where this binary is loaded.
TEST(MaterializeTest, FingerprintChild) {
  if (getenv("HANGWATCH_FINGERPRINT_CHILD") == nullptr) GTEST_SKIP() << "child mode only";
  testing::HangCollector collector;
  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  std::atomic<bool> done{false};
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    done = true;
  });
  {
    WorkScope pass;
    FingerprintedStall(&done);
  }
  timer.join();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  printf("FINGERPRINT=%s FUNC=%p\n", h.fingerprint.c_str(),
         reinterpret_cast<void*>(&FingerprintedStall));
  fflush(stdout);
}

// This test binary, by the path the kernel (or an emulator) reports for it: not
// /proc/PID/exe, which under qemu-user is the emulator itself.
std::string SelfPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

struct ChildRun {
  std::string line;  // "FINGERPRINT=... FUNC=...", or the whole output when missing
  int exit_code = -1;
};

// HANGWATCH_TEST_EXEC_WRAPPER (e.g. "qemu-aarch64-static -L /", set by
// scripts/cross/check-aarch64) is put in front of the command: a binary built for another
// architecture cannot be executed directly without binfmt_misc.
ChildRun RunChild(const std::string& self) {
  const char* wrapper = getenv("HANGWATCH_TEST_EXEC_WRAPPER");
  const std::string cmd = std::string("HANGWATCH_FINGERPRINT_CHILD=1 ") +
                          (wrapper != nullptr ? std::string(wrapper) + " " : std::string()) + "'" +
                          self + "' --gtest_filter=MaterializeTest.FingerprintChild 2>&1";
  ChildRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const size_t at = out.find("FINGERPRINT=");
  r.line = at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
  return r;
}

TEST(MaterializeTest, FingerprintIsStableAcrossRunsOfTheSameBuild) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  const std::string self = SelfPath();
  ASSERT_FALSE(self.empty()) << "readlink /proc/self/exe failed";
  const ChildRun ra = RunChild(self);
  if (ra.exit_code == 126) {
    // The shell found the file but the kernel refused to run it: a foreign-architecture
    // binary without binfmt_misc and without HANGWATCH_TEST_EXEC_WRAPPER.
    GTEST_SKIP() << "cannot re-execute " << self << ": " << ra.line;
  }
  const ChildRun rb = RunChild(self);
  const std::string& a = ra.line;
  const std::string& b = rb.line;
  ASSERT_EQ(a.rfind("FINGERPRINT=", 0), 0u) << a;
  ASSERT_EQ(b.rfind("FINGERPRINT=", 0), 0u) << b;
  const std::string fa = a.substr(12, 16), fb = b.substr(12, 16);
  EXPECT_EQ(fa, fb) << a << "\n" << b;
  // Not a constant: the same stall from another function would differ (covered above); here
  // just make sure the runs were really loaded at different addresses when ASLR is on.
  if (a.substr(a.find("FUNC=")) == b.substr(b.find("FUNC="))) {
    GTEST_LOG_(INFO) << "ASLR looks disabled: both runs at " << a.substr(a.find("FUNC="));
  }
}

TEST(SpdlogReporterTest, OneWarnLineThenTheDominantStack) {
  HangData hang(HangLimits{});
  Fill(&hang, 0x555500000000, 0);
  MaterializeOptions o;
  o.modules = MapAt(0x555500000000);
  o.symbolize = false;
  HangRecord r = Materialize(hang, o);
  r.duration_ms = 120;
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_pattern("%l|%v");
  LogHang(logger, r);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 2u + r.stacks[0].frames.size());
  size_t warns = 0;
  for (const auto& l : all) warns += l.rfind("warning|", 0) == 0;
  EXPECT_EQ(warns, 1u);
  EXPECT_NE(all[0].find("120 ms"), std::string::npos) << all[0];
  EXPECT_NE(all[0].find("CPU 41%"), std::string::npos) << all[0];
  EXPECT_NE(all[0].find("(busy)"), std::string::npos) << all[0];  // runnable in 5 of 6
  EXPECT_NE(all[0].find("5 samples + 1 failed"), std::string::npos) << all[0];
  EXPECT_NE(all[0].find(r.fingerprint), std::string::npos) << all[0];
  EXPECT_NE(all[2].find("#0"), std::string::npos) << all[2];
  EXPECT_NE(all[2].find("app+0x3030"), std::string::npos) << all[2];
}

}  // namespace
}  // namespace hangwatch::agent
