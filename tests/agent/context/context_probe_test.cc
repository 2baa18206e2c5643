// ContextProbe over words written by hand and descriptors made by the test: what a hang keeps
// of the labels, the source and what began its pass.
#include "agent/context/context_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "hangwatch/internal/pass_context.h"

namespace hangwatch::agent {
namespace {

using internal::TriggerWord;

constexpr uint64_t kPass = 41;  // the run-loop state of the pass followed (odd)

void OnTick() { asm volatile(""); }

class ContextProbeTest : public ::testing::Test {
 protected:
  ContextProbeTest() : shared_(Options()), probe_(&words_, &shared_) {}
  static ContextOptions Options() {
    ContextOptions o;
    o.input = false;  // no display here
    return o;
  }
  void SetTrigger(uint64_t word, uint64_t data = 0, uint64_t pass = kPass) {
    words_.trigger.store(word);
    words_.trigger_data.store(data);
    words_.trigger_pass.store(pass);
  }
  HangContext Sample(uint64_t pass = kPass) {
    HangContext c;
    probe_.Sample(pass, 0, &c);
    return c;
  }

  internal::PassContext words_;
  ContextShared shared_;
  ContextProbe probe_;
};

TEST_F(ContextProbeTest, LabelsAreCopiedOutermostFirst) {
  static const char kOuter[] = "request";
  static const char kInner[] = "thumbnail.decode";
  words_.labels[0].store(kOuter);
  words_.labels[1].store(kInner);
  words_.label_depth.store(2);
  HangContext c = Sample();
  ASSERT_EQ(c.label_count, 2u);
  EXPECT_STREQ(c.labels[0], "request");
  EXPECT_STREQ(c.labels[1], "thumbnail.decode");
  EXPECT_EQ(c.label_depth, 2u);
}

TEST_F(ContextProbeTest, DeepStacksKeepEightAndCountTheRest) {
  static const char kName[] = "level";
  for (uint32_t i = 0; i < internal::kMaxLabelDepth; ++i) words_.labels[i].store(kName);
  words_.label_depth.store(11);
  HangContext c = Sample();
  EXPECT_EQ(c.label_count, internal::kMaxLabelDepth);
  EXPECT_EQ(c.label_depth, 11u);
}

TEST_F(ContextProbeTest, LongLabelsAreCutAndUnreadableOnesSkipped) {
  const std::string long_name(200, 'x');
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  munmap(page, 4096);  // a name whose memory is gone
  words_.labels[0].store(long_name.c_str());
  words_.labels[1].store(static_cast<const char*>(page));
  words_.label_depth.store(2);
  HangContext c = Sample();
  ASSERT_EQ(c.label_count, 1u);
  EXPECT_EQ(std::string(c.labels[0]), std::string(HangContext::kLabelBytes - 1, 'x'));
}

TEST_F(ContextProbeTest, ALaterSampleWithoutLabelsKeepsTheEarlierOnes) {
  static const char kName[] = "sync";
  HangContext c;
  words_.labels[0].store(kName);
  words_.label_depth.store(1);
  probe_.Sample(kPass, 0, &c);
  words_.label_depth.store(0);
  probe_.Sample(kPass, 0, &c);
  ASSERT_EQ(c.label_count, 1u);
  EXPECT_STREQ(c.labels[0], "sync");
}

// A sample taken after the inner labelled work ended, before the pass did (its thread
// descheduled between the scope's end and EndWork()), keeps the inner labels; a sample that
// finds other labels takes them.
TEST_F(ContextProbeTest, ALaterSampleWithOnlyTheOuterLabelsKeepsTheInnerOnes) {
  static const char kOuter[] = "worker.job";
  static const char kInner[] = "job.step";
  static const char kOther[] = "job.flush";
  HangContext c;
  words_.labels[0].store(kOuter);
  words_.labels[1].store(kInner);
  words_.label_depth.store(2);
  probe_.Sample(kPass, 0, &c);
  words_.label_depth.store(1);
  probe_.Sample(kPass, 0, &c);
  ASSERT_EQ(c.label_count, 2u);
  EXPECT_STREQ(c.labels[1], "job.step");
  EXPECT_EQ(c.label_depth, 2u);
  words_.labels[1].store(kOther);
  words_.label_depth.store(2);
  probe_.Sample(kPass, 0, &c);
  ASSERT_EQ(c.label_count, 2u);
  EXPECT_STREQ(c.labels[1], "job.flush");
}

TEST_F(ContextProbeTest, TheSourceOfThisPassIsTakenNotAnotherPasss) {
  static const char kSource[] = "thumbnail-timer";
  words_.source.store(kSource);
  words_.callback.store(reinterpret_cast<const void*>(&OnTick));
  words_.source_pass.store(kPass - 2);  // the previous pass's
  EXPECT_STREQ(Sample().source, "");
  words_.source_pass.store(kPass);
  HangContext c = Sample();
  EXPECT_STREQ(c.source, "thumbnail-timer");
  EXPECT_EQ(c.callback, reinterpret_cast<uintptr_t>(&OnTick));
  EXPECT_EQ(c.queued_ms, -1);                  // no due time told
  words_.source_queued_ns.store(250'400'000);  // a timer 250 ms late
  EXPECT_EQ(Sample().queued_ms, 250);
}

// The GLib adapter clears the words when a dispatch returns: a sample between two dispatches
// keeps the source the hang already saw.
TEST_F(ContextProbeTest, AClearedSourceLeavesTheOneSeen) {
  static const char kSource[] = "thumbnail-timer";
  HangContext c;
  words_.source.store(kSource);
  words_.source_pass.store(kPass);
  probe_.Sample(kPass, 0, &c);
  words_.source.store(nullptr);
  words_.source_pass.store(kPass);
  probe_.Sample(kPass, 0, &c);
  EXPECT_STREQ(c.source, "thumbnail-timer");
}

// asio's ASIO_HANDLER_LOCATION scope names where the handler stalls, and its end restores the
// posted operation's source: a sample that lands between the scope's end and the pass's (the
// thread descheduled there) must not rename the hang, whose samples were in the location.
TEST_F(ContextProbeTest, TheSourceOfTheLongestRunOfSamplesNamesTheHangNotTheLastSample) {
  static const char kOperation[] = "asio executor_op";
  static const char kLocation[] = "asio_watch_test.cc:112 DecodeThumbnail";
  words_.callback.store(reinterpret_cast<const void*>(&OnTick));
  words_.source_pass.store(kPass);
  HangContext c;
  words_.source.store(kOperation);
  probe_.Sample(kPass, 0, &c);
  words_.source.store(kLocation);
  for (int i = 0; i < 5; ++i) probe_.Sample(kPass, 0, &c);
  words_.source.store(kOperation);
  probe_.Sample(kPass, 0, &c);
  EXPECT_STREQ(c.source, kLocation);
  EXPECT_EQ(c.callback, reinterpret_cast<uintptr_t>(&OnTick));
  // A sample without a source (cleared between dispatches) neither counts nor breaks a run.
  words_.source.store(nullptr);
  words_.callback.store(nullptr);
  for (int i = 0; i < 8; ++i) probe_.Sample(kPass, 0, &c);
  words_.source.store(kOperation);
  words_.callback.store(reinterpret_cast<const void*>(&OnTick));
  for (int i = 0; i < 4; ++i) probe_.Sample(kPass, 0, &c);
  EXPECT_STREQ(c.source, kLocation) << "the operation's run is 5, as long as the location's";
  probe_.Sample(kPass, 0, &c);
  EXPECT_STREQ(c.source, kOperation) << "6: longer";
}

TEST_F(ContextProbeTest, TimeoutAndSignal) {
  SetTrigger(TriggerWord(internal::kTriggerTimeout, 0, -1), 250);
  HangContext c = Sample();
  ASSERT_TRUE(c.has_trigger);
  EXPECT_STREQ(c.trigger_name, "timeout");
  EXPECT_EQ(c.timeout_ms, 250u);
  EXPECT_EQ(c.fd, -1);

  SetTrigger(TriggerWord(internal::kTriggerInterrupted, 0, -1), 0, kPass + 2);
  c = Sample(kPass + 2);
  EXPECT_STREQ(c.trigger_name, "interrupted");
}

TEST_F(ContextProbeTest, AStaleTriggerIsNotThisPasss) {
  SetTrigger(TriggerWord(internal::kTriggerTimeout, 0, -1), 250, kPass - 2);
  EXPECT_FALSE(Sample().has_trigger);
}

TEST_F(ContextProbeTest, AnonymousDescriptorsAndPipes) {
  const int efd = eventfd(0, EFD_CLOEXEC);
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  struct Case {
    int fd;
    const char* kind;
  } cases[] = {{efd, "eventfd"}, {tfd, "timerfd"}, {p[0], "pipe"}};
  uint64_t pass = kPass;
  for (const Case& k : cases) {
    SetTrigger(TriggerWord(internal::kTriggerFd, 2, k.fd), 0, pass);
    HangContext c = Sample(pass);
    EXPECT_STREQ(c.trigger_name, k.kind) << k.fd;
    EXPECT_EQ(c.fd, k.fd);
    EXPECT_EQ(c.ready, 2u);
    pass += 2;
  }
  for (int fd : {efd, tfd, p[0], p[1]}) close(fd);
}

TEST_F(ContextProbeTest, ATcpConnectionNamesItsClient) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int server = accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  sockaddr_in client_addr{};
  len = sizeof client_addr;
  getsockname(client, reinterpret_cast<sockaddr*>(&client_addr), &len);

  SetTrigger(TriggerWord(internal::kTriggerFd, 1, listener));
  HangContext c = Sample();
  EXPECT_STREQ(c.trigger_name, "listen");
  EXPECT_EQ(std::string(c.peer), "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));

  SetTrigger(TriggerWord(internal::kTriggerFd, 1, server), 0, kPass + 2);
  c = Sample(kPass + 2);
  EXPECT_STREQ(c.trigger_name, "tcp");
  EXPECT_EQ(std::string(c.peer), "127.0.0.1:" + std::to_string(ntohs(client_addr.sin_port)));
  EXPECT_EQ(c.peer_pid, getpid());  // the client's end is this process's
  for (int fd : {listener, client, server}) close(fd);
}

TEST_F(ContextProbeTest, AUnixSocketPair) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  SetTrigger(TriggerWord(internal::kTriggerFd, 1, sv[0]));
  HangContext c = Sample();
  EXPECT_STREQ(c.trigger_name, "unix");
  EXPECT_EQ(c.peer_pid, getpid());
  close(sv[0]);
  close(sv[1]);
}

TEST_F(ContextProbeTest, AnEpollEventIsMappedToItsDescriptorThroughTheInterestList) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  const int efd = eventfd(0, EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0xabcdef0123ull;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
  SetTrigger(TriggerWord(internal::kTriggerEpoll, 1, ep), 0xabcdef0123ull);
  HangContext c = Sample();
  EXPECT_STREQ(c.trigger_name, "eventfd");
  EXPECT_EQ(c.fd, efd);

  // A data word the interest list does not hold (the descriptor was closed: epoll dropped it).
  SetTrigger(TriggerWord(internal::kTriggerEpoll, 1, ep), 0x77, kPass + 2);
  EXPECT_STREQ(Sample(kPass + 2).trigger_name, "gone");
  close(efd);
  close(ep);
}

// (Anonymous files, eventfd and timerfd, share one inode: a number reused by another of them
// cannot be told; a pipe's, a socket's or a file's can.)
TEST_F(ContextProbeTest, AnEpollDescriptorNumberReusedByAnotherFileIsGone) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int keep = dup(p[0]);  // keeps the registration alive after p[0]'s number is closed
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 5;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
  SetTrigger(TriggerWord(internal::kTriggerEpoll, 1, ep), 5);
  EXPECT_STREQ(Sample().trigger_name, "pipe");
  close(p[0]);
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);  // takes p[0]'s number
  ASSERT_EQ(tfd, p[0]);
  SetTrigger(TriggerWord(internal::kTriggerEpoll, 1, ep), 5, kPass + 2);
  EXPECT_STREQ(Sample(kPass + 2).trigger_name, "gone");
  for (int fd : {keep, tfd, ep, p[1]}) close(fd);
}

TEST_F(ContextProbeTest, TheTriggerIsDescribedOncePerPass) {
  const int efd = eventfd(0, EFD_CLOEXEC);
  SetTrigger(TriggerWord(internal::kTriggerFd, 1, efd));
  HangContext c;
  probe_.Sample(kPass, 0, &c);
  close(efd);  // described already: a later sample of the same pass does not look again
  probe_.Sample(kPass, 0, &c);
  EXPECT_STREQ(c.trigger_name, "eventfd");
}

TEST_F(ContextProbeTest, OffSwitchesKeepNothing) {
  ContextOptions o = Options();
  o.context = false;
  ContextShared shared(o);
  ContextProbe probe(&words_, &shared);
  static const char kName[] = "x";
  words_.labels[0].store(kName);
  words_.label_depth.store(1);
  SetTrigger(TriggerWord(internal::kTriggerTimeout, 0, -1), 9);
  HangContext c;
  probe.Sample(kPass, 0, &c);
  EXPECT_EQ(c.label_count, 0u);
  EXPECT_FALSE(c.has_trigger);
}

}  // namespace
}  // namespace hangwatch::agent
