// agent/samplers/ruby_stacks.h (kept here beside the other Ruby tests) on a real VM: Debian's
// libruby-3.1 embedded in this test, a thread three Ruby methods deep spinning in the innermost.
// RubyStacks finds the VM by its exported symbol, installs its capture hook once the VM runs,
// and each capture's merged stack holds the methods as Ruby frames (tag and word of
// hang/model/runtime_frame_word.h), innermost first, named with their lines (the VM's own
// placeholder frame left out); HANGWATCH_RUBY=0 gives none.
#include "agent/samplers/ruby_stacks.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hang/model/runtime_frame_word.h"
#include "unwind/signal_sampler.h"

extern "C" {
void ruby_init_stack(volatile uintptr_t* addr);
int ruby_setup(void);
uintptr_t rb_eval_string_protect(const char* str, int* state);
}

namespace hangwatch::agent {
namespace {

// Lines of the evaluated string (1-based).
constexpr char kProgram[] =
    "def level3\n"
    "  x = 0\n"
    "  x += 1 while true\n"  // 3
    "end\n"
    "def level2\n"
    "  level3\n"  // 6
    "end\n"
    "def level1\n"
    "  level2\n"  // 9
    "end\n"
    "level1\n";  // 11

// The VM's thread, started once for the whole binary (a VM cannot be set up twice).
unwind::ThreadInfo& RubyThread() {
  static unwind::ThreadInfo* info = [] {
    auto* t = new unwind::ThreadInfo();
    static std::atomic<bool> registered{false};
    std::thread([t] {
      unwind::RegisterCurrentThread(t);
      registered.store(true);
      volatile uintptr_t stack_mark = 0;
      ruby_init_stack(&stack_mark);
      if (ruby_setup() != 0) return;
      int state = 0;
      rb_eval_string_protect(kProgram, &state);
    }).detach();
    while (!registered.load()) usleep(1000);
    return t;
  }();
  return *info;
}

struct Named {
  std::string symbol;
  int line = 0;
  bool partial = false;
};

TEST(RubyStacks, EmbeddedVmsMethodsInEachCapture) {
  unwind::ThreadInfo& thread = RubyThread();
  std::vector<std::string> notes;
  std::unique_ptr<RubyStacks> stacks = RubyStacks::Create(64, &notes);
  ASSERT_NE(stacks, nullptr) << (notes.empty() ? "" : notes[0]);
  std::string note;
  stacks->set_note([&](const std::string& n) { note = n; });
  stacks->Watch(thread);
  std::string error;
  unwind::SignalSamplerOptions so;
  so.max_extra_words = stacks->extra_words();
  std::unique_ptr<unwind::SignalSampler> sampler = unwind::SignalSampler::Create(so, &error);
  ASSERT_NE(sampler, nullptr) << error;
  unwind::CaptureBuffer buf(128, 64 * 1024, stacks->extra_words());
  std::vector<Named> ruby;
  // Until the VM runs and the thread is at the bottom of its calls (at most 20 s).
  for (int attempt = 0; attempt < 2000; ++attempt, usleep(10000)) {
    stacks->BeforeCapture();
    if (!stacks->active()) continue;
    ASSERT_EQ(sampler->Capture(thread, &buf), unwind::CaptureStatus::kOk);
    std::vector<uint8_t> tags(buf.max_frames(), static_cast<uint8_t>(FrameMethod::kFramePointer));
    tags[0] = static_cast<uint8_t>(FrameMethod::kPc);
    const size_t n = stacks->Merge(&buf, buf.num_frames, tags.data());
    ruby.clear();
    for (size_t i = 0; i < n; ++i) {
      const uintptr_t word = buf.frame_storage()[i];
      if (!IsRuntimeTag(tags[i])) {
        EXPECT_FALSE(IsRuntimeWord(word));
        continue;
      }
      EXPECT_EQ(RuntimeTagLanguage(tags[i]), FrameLanguage::kRuby);
      RuntimeFrameName name;
      ASSERT_TRUE(stacks->names()->Find(word, &name));
      EXPECT_EQ(name.language, FrameLanguage::kRuby);
      ruby.push_back({name.symbol, name.line, IsRuntimePartialTag(tags[i])});
    }
    if (ruby.size() >= 3 && ruby[0].symbol == "level3") break;
  }
  EXPECT_EQ(note, "");
  ASSERT_GE(ruby.size(), 4u);
  EXPECT_EQ(ruby[0].symbol, "level3");
  EXPECT_EQ(ruby[0].line, 3);
  EXPECT_EQ(ruby[1].symbol, "level2");
  EXPECT_EQ(ruby[1].line, 6);
  EXPECT_EQ(ruby[2].symbol, "level1");
  EXPECT_EQ(ruby[2].line, 9);
  // Then the evaluated string's top (its label is the VM's choice), and nothing of the VM's
  // placeholder at the bottom: no frame at line 0, none partial.
  EXPECT_EQ(ruby[3].line, 11);
  for (const Named& r : ruby) {
    EXPECT_GT(r.line, 0) << r.symbol;
    EXPECT_FALSE(r.partial) << r.symbol;
  }
}

TEST(RubyStacks, OffWithHangwatchRubyZero) {
  RubyThread();
  setenv("HANGWATCH_RUBY", "0", 1);
  std::vector<std::string> notes;
  EXPECT_EQ(RubyStacks::Create(64, &notes), nullptr);
  unsetenv("HANGWATCH_RUBY");
  EXPECT_NE(RubyStacks::Create(64, &notes), nullptr);
  EXPECT_TRUE(notes.empty());
}

}  // namespace
}  // namespace hangwatch::agent
