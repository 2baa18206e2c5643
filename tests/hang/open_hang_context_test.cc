// The open-hang file keeps the hang's context (format 8, hang/open_hang/open_hang_context.h):
// a fatal hang read back says what its pass was serving (labels, trigger, source and callback),
// the input that waited and whether a person felt it, as the live hang said at its last sample
// written. A torn copy leaves the other; both torn, or garbage, leave the hang without a context
// or with a safe one, never without the rest; a file of format 8 (the context without the
// source's run) reads back its context, one of format 7 reads without one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "hang/model/hang_data.h"
#include "hang/model/materialize.h"
#include "hang/open_hang/open_hang_context.h"
#include "hang/open_hang/open_hang_file.h"
#include "hang/open_hang/open_hang_layout.h"
#include "hangwatch/hang_record.h"
#include "symbols/module_map.h"
#include "tests/hang/open_hang_test_files.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using agent::HangContext;
using agent::OpenHangReadStatus;
using agent::ReadOpenHangFile;

constexpr uint32_t kFormat = agent::open_hang_layout::kVersion;  // this build's

HW_TEST_KEEP_FRAME void OnThumbnailTimer() { asm volatile(""); }

std::string TempPath(const char* name) { return testing::OpenHangTempPath("ctx", name); }

void Corrupt(const std::string& path, size_t offset) { testing::CorruptByte(path, offset); }

std::string ReadRange(const std::string& path, size_t offset, size_t n) {
  std::string out(n, '\0');
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0 || pread(fd, out.data(), n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) {
    out.clear();
  }
  if (fd >= 0) close(fd);
  return out;
}

agent::HangLimits SmallLimits() {
  agent::HangLimits limits;
  limits.max_frames = 8;
  limits.max_timeline = 32;
  return limits;
}

void AddSample(agent::HangData* hang, uint32_t t_ms) {
  const uintptr_t frames[] = {0x3000, 0x2000};
  hang->AddSample(t_ms, frames, 2, frames[0], 10'000'000, 'R', true);
}

// A context with every part set: two labels of three, an epoll trigger on a TCP socket, a timer
// source dispatching OnThumbnailTimer, keys and motion waiting, a ping felt.
void FillContext(HangContext* c, const char* inner_label) {
  *c = HangContext{};
  std::strcpy(c->labels[0], "gallery.open");
  std::strcpy(c->labels[1], inner_label);
  c->label_count = 2;
  c->label_depth = 2;
  c->has_trigger = true;
  c->trigger_kind = internal::kTriggerEpoll;
  c->ready = 1;
  c->fd = 7;
  std::strcpy(c->trigger_name, "tcp");
  std::strcpy(c->peer, "127.0.0.1:5555");
  c->peer_pid = 4321;
  std::strcpy(c->peer_process, "server");
  std::strcpy(c->source, "thumbnail-timer");
  c->callback = reinterpret_cast<uintptr_t>(&OnThumbnailTimer);
  c->input.known = true;
  c->input.pending = true;
  c->input.events = 3;
  c->input.oldest_known = true;
  c->input.oldest_ms = 450;
  c->input.kinds = agent::kInputKey | agent::kInputMotion;
  c->input.ping = true;
  c->input.ping_age_known = true;
  c->input.ping_ms = 5200;
  c->perceived_known = true;
  c->perceived = true;
  c->not_responding = true;
  c->queued_ms = 1200;
}

// The context parts of the record the live hang gives.
HangRecord LiveRecord(const agent::HangData& hang) {
  agent::MaterializeOptions options;
  options.modules = symbols::CurrentModuleMap();
  return agent::Materialize(hang, options);
}

void ExpectSameContext(const HangRecord& live, const HangRecord& back) {
  EXPECT_EQ(back.context.label, live.context.label);
  EXPECT_EQ(back.context.label_path, live.context.label_path);
  EXPECT_EQ(back.context.label_depth, live.context.label_depth);
  EXPECT_EQ(back.context.has_trigger, live.context.has_trigger);
  EXPECT_EQ(back.context.trigger.kind, live.context.trigger.kind);
  EXPECT_EQ(back.context.trigger.fd, live.context.trigger.fd);
  EXPECT_EQ(back.context.trigger.ready, live.context.trigger.ready);
  EXPECT_EQ(back.context.trigger.peer, live.context.trigger.peer);
  EXPECT_EQ(back.context.trigger.pid, live.context.trigger.pid);
  EXPECT_EQ(back.context.trigger.process, live.context.trigger.process);
  EXPECT_EQ(back.context.source, live.context.source);
  EXPECT_EQ(back.context.callback, live.context.callback);
  EXPECT_EQ(back.input.known, live.input.known);
  EXPECT_EQ(back.input.pending, live.input.pending);
  EXPECT_EQ(back.input.events, live.input.events);
  EXPECT_EQ(back.input.oldest_ms, live.input.oldest_ms);
  EXPECT_EQ(back.input.kinds, live.input.kinds);
  EXPECT_EQ(back.input.ping_ms, live.input.ping_ms);
  EXPECT_EQ(back.perceived, live.perceived);
  EXPECT_EQ(back.not_responding, live.not_responding);
  EXPECT_EQ(back.queued_ms, live.queued_ms);
}

TEST(OpenHangContextTest, AFatalHangReadsBackWithTheContextOfItsLastSample) {
  const std::string path = TempPath("round_trip");
  const agent::HangLimits limits = SmallLimits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  AddSample(&hang, 100);
  FillContext(&hang.context, "thumbnail.decode");
  file->Open(hang);
  HangRecord back;
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  const HangRecord live = LiveRecord(hang);
  ExpectSameContext(live, back);
  EXPECT_EQ(back.context.label, "thumbnail.decode");
  EXPECT_EQ(back.context.trigger.peer, "127.0.0.1:5555");
  EXPECT_EQ(back.input.kinds, (std::vector<std::string>{"key", "motion"}));
  EXPECT_EQ(back.perceived, std::optional<bool>(true));
  // The callback is resolved as the frames are: through the dead process's module table, then
  // this process's copy of the same build.
  EXPECT_NE(back.context.callback.find("OnThumbnailTimer"), std::string::npos)
      << back.context.callback;

  // A sample whose context is the same rewrites nothing of the region...
  const size_t region = agent::OpenHangFileContextOffset(limits);
  const std::string before = ReadRange(path, region, agent::OpenHangContextBytes(kFormat));
  ASSERT_FALSE(before.empty());
  AddSample(&hang, 200);
  file->AddLastSample(hang);
  EXPECT_EQ(ReadRange(path, region, agent::OpenHangContextBytes(kFormat)), before);
  // ...one whose context changed does, and the hang reads back with the new one.
  FillContext(&hang.context, "thumbnail.scale");
  hang.context.input.events = 9;
  AddSample(&hang, 300);
  file->AddLastSample(hang);
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  ExpectSameContext(LiveRecord(hang), back);
  EXPECT_EQ(back.context.label, "thumbnail.scale");
  EXPECT_EQ(back.input.events, 9u);
  EXPECT_EQ(back.timeline.size(), 3u);
  file.reset();
  unlink(path.c_str());
}

TEST(OpenHangContextTest, ATornCopyLeavesTheOlderContextAndBothTornLeaveTheHangWithoutOne) {
  const std::string path = TempPath("torn");
  const agent::HangLimits limits = SmallLimits();
  std::string error;
  auto file = agent::OpenHangFile::Create(path, limits, &error);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  AddSample(&hang, 100);
  FillContext(&hang.context, "first");
  file->Open(hang);  // context generation 1: copy 1
  FillContext(&hang.context, "second");
  AddSample(&hang, 200);
  file->AddLastSample(hang);  // generation 2: copy 0
  const size_t region = agent::OpenHangFileContextOffset(limits);
  const size_t copy = agent::OpenHangContextBytes(kFormat) / 2;
  HangRecord back;
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(back.context.label, "second");

  Corrupt(path, region + 16 + 70);  // inside copy 0's second label
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_EQ(back.context.label, "first") << "the older copy";

  Corrupt(path, region + copy + 16 + 600);  // inside copy 1's peer
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_TRUE(back.context.empty());
  EXPECT_EQ(back.context.label_depth, 0u);
  EXPECT_FALSE(back.input.known);
  EXPECT_FALSE(back.perceived.has_value());
  EXPECT_FALSE(back.not_responding);
  EXPECT_EQ(back.queued_ms, -1);
  // Everything else stands.
  EXPECT_TRUE(back.fatal);
  EXPECT_EQ(back.timeline.size(), 2u);
  EXPECT_EQ(back.samples, 2u);
  ASSERT_EQ(back.stacks.size(), 1u);
  file.reset();
  unlink(path.c_str());
}

// Whatever a whole copy holds (a file in a directory others may write) reads back safe: flags
// true or false, counts within their arrays, strings within theirs, kinds known.
TEST(OpenHangContextTest, GarbageInAWholeCopyIsMadeSafe) {
  std::vector<unsigned char> region(agent::OpenHangContextBytes(kFormat));
  HangContext c;
  FillContext(&c, "x");
  std::memset(c.labels, 'L', sizeof c.labels);  // unterminated
  std::memset(c.peer, 'p', sizeof c.peer);
  std::memset(c.source, 's', sizeof c.source);
  std::memset(c.trigger_name, 't', sizeof c.trigger_name);
  std::memset(c.peer_process, 'q', sizeof c.peer_process);
  std::memset(c.run_source, 'r', sizeof c.run_source);
  c.run_queued_ms = -9;
  c.label_count = 200;
  c.label_depth = 1;
  c.trigger_kind = 99;
  c.input.kinds = 0xffffffffu;
  c.queued_ms = -50;
  agent::WriteOpenHangContext(region.data(), 2, c, kFormat);
  // A flag byte that is no bool (2 is copy 0), its checksum made whole again.
  constexpr size_t kHead = 16;
  unsigned char* copy = region.data();
  copy[kHead + offsetof(HangContext, perceived)] = 7;
  const uint64_t sum = agent::open_hang_layout::Checksum(copy, kHead + sizeof(HangContext));
  std::memcpy(copy + kHead + sizeof(HangContext), &sum, sizeof sum);

  const std::string path = TempPath("garbage");
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, region.data(), region.size()), static_cast<ssize_t>(region.size()));
  HangContext back;
  ASSERT_TRUE(agent::ReadOpenHangContext(fd, 0, kFormat, &back));
  close(fd);
  unlink(path.c_str());
  unsigned char flag = 0;
  std::memcpy(&flag, &back.perceived, 1);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(back.label_count, internal::kMaxLabelDepth);
  EXPECT_EQ(back.label_depth, internal::kMaxLabelDepth);
  for (const auto& label : back.labels) EXPECT_EQ(strnlen(label, sizeof label), sizeof label - 1);
  EXPECT_EQ(strnlen(back.peer, sizeof back.peer), sizeof back.peer - 1);
  EXPECT_EQ(strnlen(back.source, sizeof back.source), sizeof back.source - 1);
  EXPECT_EQ(strnlen(back.trigger_name, sizeof back.trigger_name), sizeof back.trigger_name - 1);
  EXPECT_EQ(strnlen(back.peer_process, sizeof back.peer_process), sizeof back.peer_process - 1);
  EXPECT_EQ(strnlen(back.run_source, sizeof back.run_source), sizeof back.run_source - 1);
  EXPECT_EQ(back.run_queued_ms, -1);
  EXPECT_EQ(back.trigger_kind, internal::kTriggerNone);
  EXPECT_EQ(back.input.kinds, 0x3fu);
  EXPECT_EQ(back.queued_ms, -1);

  // Neither copy whole: none, and an empty context.
  region[kHead + 3] ^= 0x5a;
  fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, region.data(), region.size()), static_cast<ssize_t>(region.size()));
  EXPECT_FALSE(agent::ReadOpenHangContext(fd, 0, kFormat, &back));
  close(fd);
  unlink(path.c_str());
  EXPECT_EQ(back.label_count, 0u);
  EXPECT_FALSE(back.has_trigger);
}

// A fatal hang an agent of format 8 left behind (its context without the source's run, 896
// bytes a copy) reads back with that context: its labels, trigger, source, input, verdict.
TEST(OpenHangContextTest, AFileOfFormat8ReadsBackItsContextWithoutTheSourcesRun) {
  const std::string path = TempPath("v8");
  const agent::HangLimits limits = SmallLimits();
  std::string error;
  auto file = agent::OpenHangFile::CreateForTest(path, limits, &error, 8);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  AddSample(&hang, 100);
  FillContext(&hang.context, "thumbnail.decode");
  hang.context.source_samples = 3;
  std::strcpy(hang.context.run_source, "asio executor_op");
  hang.context.run_samples = 1;
  file->Open(hang);
  AddSample(&hang, 200);
  file->AddLastSample(hang);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size),
            agent::OpenHangFileContextOffset(limits) + agent::OpenHangContextBytes(8))
      << "format 8's context region: two copies of 896 bytes";
  EXPECT_LT(agent::OpenHangContextBytes(8), agent::OpenHangContextBytes(kFormat));
  HangRecord back;
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  ExpectSameContext(LiveRecord(hang), back);
  EXPECT_EQ(back.context.source, "thumbnail-timer");
  EXPECT_EQ(back.context.label, "thumbnail.decode");
  EXPECT_EQ(back.queued_ms, 1200);
  EXPECT_EQ(back.perceived, std::optional<bool>(true));
  file.reset();
  unlink(path.c_str());
}

// A fatal hang an agent of format 7 left behind (no context region) reads as it always did.
TEST(OpenHangContextTest, AFileOfFormat7StillReadsWithoutAContext) {
  const std::string path = TempPath("v7");
  const agent::HangLimits limits = SmallLimits();
  std::string error;
  auto file = agent::OpenHangFile::CreateForTest(path, limits, &error, 7);
  ASSERT_NE(file, nullptr) << error;
  agent::HangData hang(limits);
  std::strcpy(hang.summary.thread_role, "render");
  AddSample(&hang, 100);
  FillContext(&hang.context, "not.kept");
  file->Open(hang);
  AddSample(&hang, 200);
  file->AddLastSample(hang);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), agent::OpenHangFileContextOffset(limits))
      << "format 7 ends with the Python names";
  HangRecord back;
  ASSERT_EQ(ReadOpenHangFile(path, &back, &error), OpenHangReadStatus::kFound) << error;
  EXPECT_TRUE(back.fatal);
  EXPECT_EQ(back.timeline.size(), 2u);
  EXPECT_EQ(back.thread_role, "render");
  EXPECT_TRUE(back.context.empty());
  EXPECT_FALSE(back.input.known);
  EXPECT_FALSE(back.perceived.has_value());
  file.reset();
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch
