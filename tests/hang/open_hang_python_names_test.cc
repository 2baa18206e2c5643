// The open-hang file keeps the names of a hang's Python frames (format 6,
// hang/open_hang/open_hang_python_names.h): a fatal hang read back names them as the live hang did,
// so its culprit, signature and fingerprint are the live hang's. A torn or corrupt entry, a full
// region or a truncated file leave frames unnamed or the file refused, never a wrong name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "hang/model/hang_data.h"
#include "hang/model/materialize.h"
#include "hang/model/runtime_frame_word.h"
#include "hang/model/runtime_names.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hang_record.h"
#include "symbols/module_map.h"
#include "tests/hang/open_hang_test_files.h"

namespace hangwatch {
namespace {

using agent::OpenHangReadStatus;
using agent::ReadOpenHangFile;
using agent::RuntimeFrameName;

std::string TempPath(const char* name) { return testing::OpenHangTempPath("pynames", name); }

void Corrupt(const std::string& path, size_t offset) { testing::CorruptByte(path, offset); }

// The names the watchdog resolved (python_stacks.h), as a map.
class FakeNames : public agent::RuntimeNames {
 public:
  bool Find(uintptr_t word, RuntimeFrameName* out) const override {
    auto it = names.find(word);
    if (it == names.end()) return false;
    *out = it->second;
    return true;
  }
  std::map<uintptr_t, RuntimeFrameName> names;
};

RuntimeFrameName Named(const std::string& symbol, const std::string& file, int line) {
  RuntimeFrameName n;
  n.symbol = symbol;
  n.file = file;
  n.line = line;
  return n;
}

agent::HangLimits Limits() {
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 64;
  return limits;
}

// A sample of a Python main thread: the innermost frame `leaf`, called from `caller`, under a
// native frame of the interpreter.
void AddPythonSample(agent::HangData* hang, uint32_t t_ms, uintptr_t leaf, uintptr_t caller) {
  const uintptr_t frames[] = {leaf, caller, 0x3000};
  const uint8_t tags[] = {agent::kPythonFrameTag, agent::kPythonFrameTag,
                          static_cast<uint8_t>(FrameMethod::kPc)};
  hang->AddSample(t_ms, frames, 3, agent::RuntimeLeafKey(leaf), 10'000'000, 'R', true,
                  reinterpret_cast<const FrameMethod*>(tags), SampleMethod::kSignal);
}

// The Python frames of a record's stacks by code object and instruction: symbol, file, line.
std::map<std::pair<uint64_t, uint64_t>, std::string> PythonFrames(const HangRecord& r) {
  std::map<std::pair<uint64_t, uint64_t>, std::string> out;
  for (const Stack& st : r.stacks) {
    for (const Frame& f : st.frames) {
      if (f.language != FrameLanguage::kPython) continue;
      out[{f.addr, f.offset}] = f.symbol + "|" + f.file + "|" + std::to_string(f.line);
    }
  }
  return out;
}

const uintptr_t kBusy6 = agent::RuntimeFrameWord(0x7f0000001000, 10);
const uintptr_t kMain20 = agent::RuntimeFrameWord(0x7f0000002000, 44);
const uintptr_t kMain = agent::RuntimeFrameWord(0x7f0000002000, 40);

FakeNames ScriptNames() {
  FakeNames names;
  names.names[kBusy6] = Named("busy", "/tmp/x/hangs.py", 6);
  names.names[kMain] = Named("<module>", "/tmp/x/hangs.py", 19);
  names.names[kMain20] = Named("<module>", "/tmp/x/hangs.py", 20);
  return names;
}

TEST(OpenHangPythonNames, AFatalHangReadBackHasTheLiveHangsNamesAndIdentity) {
  const std::string path = TempPath("identity");
  const agent::HangLimits limits = Limits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  const FakeNames names = ScriptNames();
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  hang.summary.threshold_ms = 100;
  AddPythonSample(&hang, 50, kBusy6, kMain);
  file->Open(hang);
  for (uint32_t i = 0; i < 6; ++i) {
    AddPythonSample(&hang, 60 + 10 * i, kBusy6, i % 3 == 0 ? kMain20 : kMain);
    file->AddLastSample(hang);
  }
  HangRecord fatal;
  ASSERT_EQ(ReadOpenHangFile(path, &fatal, &error), OpenHangReadStatus::kFound) << error;

  agent::MaterializeOptions live_options;
  live_options.modules = symbols::CurrentModuleMap();
  live_options.runtime_names = &names;
  const HangRecord live = agent::Materialize(hang, live_options);

  EXPECT_EQ(PythonFrames(fatal), PythonFrames(live));
  const auto frames = PythonFrames(fatal);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames.at({0x7f0000001000, 10}), "busy|/tmp/x/hangs.py|6");
  EXPECT_EQ(frames.at({0x7f0000002000, 40}), "<module>|/tmp/x/hangs.py|19");
  EXPECT_EQ(frames.at({0x7f0000002000, 44}), "<module>|/tmp/x/hangs.py|20");
  EXPECT_EQ(fatal.culprit.language, FrameLanguage::kPython);
  EXPECT_EQ(fatal.culprit.symbol, live.culprit.symbol);
  EXPECT_EQ(fatal.culprit.file, live.culprit.file);
  EXPECT_EQ(fatal.culprit.line, live.culprit.line);
  EXPECT_EQ(fatal.signature, live.signature);
  EXPECT_EQ(fatal.fingerprint, live.fingerprint);
  EXPECT_TRUE(fatal.fatal);
  file.reset();
  unlink(path.c_str());
}

// A file of format 5 has no names (they were not kept then): its Python frames read back
// unnamed, as they did.
TEST(OpenHangPythonNames, Format5ReadsBackUnnamed) {
  const std::string path = TempPath("v5");
  const agent::HangLimits limits = Limits();
  std::string error;
  auto file = agent::OpenHangFile::CreateForTest(path, limits, &error, 5);
  ASSERT_NE(file, nullptr) << error;
  const FakeNames names = ScriptNames();
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  AddPythonSample(&hang, 50, kBusy6, kMain);
  file->Open(hang);
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  const auto frames = PythonFrames(r);
  ASSERT_EQ(frames.size(), 2u);
  for (const auto& [where, name] : frames) EXPECT_EQ(name, "||0");
  file.reset();
  unlink(path.c_str());
}

// Entries are written in the order the frames are first seen: busy (6), <module> (19), then
// <module> (20) with a later sample. A name that changed (a code object's address reused) is
// written again and the newer one counts. A byte flipped in the second entry leaves it and
// every later one unnamed; the first keeps its name.
TEST(OpenHangPythonNames, ACorruptEntryLeavesItsFramesUnnamedNeverMisnamed) {
  const std::string path = TempPath("corrupt");
  const agent::HangLimits limits = Limits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  FakeNames names = ScriptNames();
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  AddPythonSample(&hang, 50, kBusy6, kMain);
  file->Open(hang);
  AddPythonSample(&hang, 60, kBusy6, kMain20);
  file->AddLastSample(hang);
  names.names[kMain] = Named("main", "/tmp/x/other.py", 3);  // kMain's address reused
  AddPythonSample(&hang, 70, kBusy6, kMain);
  file->AddLastSample(hang);

  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  auto frames = PythonFrames(r);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames.at({0x7f0000001000, 10}), "busy|/tmp/x/hangs.py|6");
  EXPECT_EQ(frames.at({0x7f0000002000, 40}), "main|/tmp/x/other.py|3");
  EXPECT_EQ(frames.at({0x7f0000002000, 44}), "<module>|/tmp/x/hangs.py|20");

  // Entry 1 (busy at 6): 24 bytes of head, "busy" and "/tmp/x/hangs.py" (15), padded to 48.
  // Entry 2 (<module>) starts at 48; its symbol at 48 + 24.
  Corrupt(path, agent::OpenHangFilePythonNamesOffset(limits) + 48 + 24 + 1);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  frames = PythonFrames(r);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames.at({0x7f0000001000, 10}), "busy|/tmp/x/hangs.py|6");
  EXPECT_EQ(frames.at({0x7f0000002000, 40}), "||0");
  EXPECT_EQ(frames.at({0x7f0000002000, 44}), "||0");

  // A flipped length in the first entry's head: nothing is named.
  Corrupt(path, agent::OpenHangFilePythonNamesOffset(limits) + 12);
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  for (const auto& [where, name] : PythonFrames(r)) EXPECT_EQ(name, "||0");
  file.reset();
  unlink(path.c_str());
}

// A file cut short inside its names region is refused with a reason, as any truncated file is.
TEST(OpenHangPythonNames, ATruncatedFileIsRefused) {
  const std::string path = TempPath("truncated");
  const agent::HangLimits limits = Limits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  const FakeNames names = ScriptNames();
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  AddPythonSample(&hang, 50, kBusy6, kMain);
  file->Open(hang);
  ASSERT_EQ(
      truncate(path.c_str(), static_cast<off_t>(agent::OpenHangFilePythonNamesOffset(limits) + 30)),
      0);
  HangRecord r;
  EXPECT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kInvalid);
  EXPECT_NE(error.find("inconsistent layout"), std::string::npos) << error;
  file.reset();
  unlink(path.c_str());
}

// Names that do not all fit: those written first keep theirs, the others are unnamed, the
// region's end is never crossed and no name is wrong.
TEST(OpenHangPythonNames, AFullRegionLeavesTheLaterFramesUnnamed) {
  const std::string path = TempPath("full");
  agent::HangLimits limits = Limits();
  limits.max_timeline = 256;
  limits.max_unique_stacks = 256;
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  FakeNames names;
  // Entries of 24 + 600 + 1000 bytes: 161 fit in 256 KiB; 400 words are asked for.
  constexpr int kWords = 400;
  std::vector<uintptr_t> words;
  for (int i = 0; i < kWords; ++i) {
    const uintptr_t w = agent::RuntimeFrameWord(0x7f0000100000 + 0x100 * i, 2);
    words.push_back(w);
    names.names[w] =
        Named(std::string(600, 'a' + i % 26) + std::to_string(i), std::string(1000, 'f'), i + 1);
  }
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  AddPythonSample(&hang, 50, words[0], words[1]);
  file->Open(hang);
  for (int i = 2; i + 1 < kWords; i += 2) {
    AddPythonSample(&hang, static_cast<uint32_t>(50 + i), words[i], words[i + 1]);
    file->AddLastSample(hang);
  }
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  size_t named = 0, unnamed = 0;
  for (const Stack& st : r.stacks) {
    for (const Frame& f : st.frames) {
      if (f.language != FrameLanguage::kPython) continue;
      if (f.symbol.empty()) {
        ++unnamed;
        continue;
      }
      ++named;
      const auto word = agent::RuntimeFrameWord(f.addr, static_cast<int64_t>(f.offset));
      const RuntimeFrameName& want = names.names.at(word);
      EXPECT_EQ(f.symbol, want.symbol.substr(0, 1024));
      EXPECT_EQ(f.file, want.file.substr(0, 1024));
      EXPECT_EQ(f.line, want.line);
    }
  }
  EXPECT_GT(named, 100u);
  EXPECT_GT(unnamed, 100u);
  EXPECT_EQ(named + unnamed, static_cast<size_t>(kWords));
  file.reset();
  unlink(path.c_str());
}

// Ruby and JavaScript frames (their own tags, runtime_frame_word.h) keep their language in the
// file, and a JavaScript name whose line is the function's first keeps saying so: a fatal hang
// of a Ruby or node program reads back as the live one did.
TEST(OpenHangPythonNames, RubyAndJsFramesKeepTheirLanguageAndDefinitionLine) {
  const std::string path = TempPath("languages");
  const agent::HangLimits limits = Limits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  const uintptr_t ruby = agent::RuntimeFrameWord(0x7f0000003000, 7);
  const uintptr_t js = agent::RuntimeFrameWord(0x7f0000004000, -1);
  FakeNames names;
  names.names[ruby] = Named("crunch", "/srv/app.rb", 12);
  names.names[ruby].language = FrameLanguage::kRuby;
  names.names[js] = Named("handler", "/srv/server.js", 40);
  names.names[js].language = FrameLanguage::kJs;
  names.names[js].line_is_definition = true;
  file->set_runtime_names(&names);
  agent::HangData hang(limits);
  const uintptr_t frames[] = {ruby, js, 0x3000};
  const uint8_t tags[] = {agent::RuntimeFrameTag(FrameLanguage::kRuby, false),
                          agent::RuntimeFrameTag(FrameLanguage::kJs, true),
                          static_cast<uint8_t>(FrameMethod::kPc)};
  hang.AddSample(50, frames, 3, agent::RuntimeLeafKey(ruby), 10'000'000, 'R', true,
                 reinterpret_cast<const FrameMethod*>(tags), SampleMethod::kSignal);
  file->Open(hang);
  HangRecord r;
  ASSERT_EQ(ReadOpenHangFile(path, &r, &error), OpenHangReadStatus::kFound) << error;
  ASSERT_EQ(r.stacks.size(), 1u);
  const std::vector<Frame>& f = r.stacks[0].frames;
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[0].language, FrameLanguage::kRuby);
  EXPECT_EQ(f[0].symbol, "crunch");
  EXPECT_EQ(f[0].line, 12);
  EXPECT_FALSE(f[0].line_is_definition);
  EXPECT_EQ(f[1].language, FrameLanguage::kJs);
  EXPECT_EQ(f[1].symbol, "handler");
  EXPECT_EQ(f[1].file, "/srv/server.js");
  EXPECT_TRUE(f[1].line_is_definition);
  EXPECT_TRUE(r.stacks[0].partial);
  EXPECT_EQ(r.culprit.language, FrameLanguage::kRuby);
  EXPECT_EQ(r.culprit.symbol, "crunch");
  file.reset();
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch
