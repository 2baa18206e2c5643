// unwind/proc_files.h: the /proc parsers on fixed texts (including the odd shapes the kernel can
// produce: parentheses and spaces in a thread name, a line cut by the buffer), and the readers on
// this process's own files.
#include "unwind/proc_files.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace hangwatch::unwind {
namespace {

TEST(ProcPathTest, FormatsAndTruncates) {
  char out[64];
  EXPECT_EQ(TaskPath(0, 1234, "syscall", out, sizeof(out)), 28u);
  EXPECT_STREQ(out, "/proc/self/task/1234/syscall");
  TaskPath(77, 1234, "stat", out, sizeof(out));
  EXPECT_STREQ(out, "/proc/77/task/1234/stat");
  ProcPath(0, "status", out, sizeof(out));
  EXPECT_STREQ(out, "/proc/self/status");
  ProcPath(42, "maps", out, sizeof(out));
  EXPECT_STREQ(out, "/proc/42/maps");
  char tiny[8];
  TaskPath(0, 1234, "syscall", tiny, sizeof(tiny));
  EXPECT_STREQ(tiny, "/proc/s");
}

TEST(ParseStatStateTest, StateFollowsTheLastParenthesis) {
  const char line[] = "42 (a) S (b)) D 1 2 3";
  EXPECT_EQ(ParseStatState(line, sizeof(line) - 1), 'D');
  const char no_paren[] = "42 a S";
  EXPECT_EQ(ParseStatState(no_paren, sizeof(no_paren) - 1), '?');
  const char cut[] = "42 (a)";
  EXPECT_EQ(ParseStatState(cut, sizeof(cut) - 1), '?');
}

TEST(ParseTaskStatTest, NameStateAndCpuTicks) {
  const char line[] =
      "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 23 0 0 20 0 1 0 99 0 0";
  TaskStat stat;
  ASSERT_TRUE(ParseTaskStat(line, sizeof(line) - 1, &stat));
  EXPECT_EQ(std::string(stat.comm, stat.comm_size), "my (odd) name");
  EXPECT_EQ(stat.state, 'S');
  EXPECT_TRUE(stat.has_ppid);
  EXPECT_EQ(stat.ppid, 1);
  EXPECT_TRUE(stat.has_cpu_ticks);
  EXPECT_EQ(stat.utime_ticks, 17u);
  EXPECT_EQ(stat.stime_ticks, 23u);
  EXPECT_TRUE(stat.has_start_time);
  EXPECT_EQ(stat.start_time_ticks, 99u);
  // Cut before utime: the name and state are still there, the times are not.
  TaskStat cut;
  ASSERT_TRUE(ParseTaskStat(line, 40, &cut));
  EXPECT_EQ(cut.state, 'S');
  EXPECT_FALSE(cut.has_cpu_ticks);
  EXPECT_FALSE(cut.has_start_time);
}

// A child started after this process did, both within the hour; a pid that is none: 0.
TEST(ProcessStartTest, AChildStartsAfterItsParentAndNowIsAfterBoth) {
  const auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t self = ProcessStartUnixMs(0);
  EXPECT_GT(self, now_ms() - 3'600'000) << "started within the hour";
  EXPECT_LE(self, now_ms() + 20);
  const int64_t before_fork = now_ms();
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  const int64_t started = ProcessStartUnixMs(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(started, self);
  // One clock tick (10 ms at 100 Hz) of grain either side.
  EXPECT_GE(started, before_fork - 20);
  EXPECT_LE(started, now_ms() + 20);
  EXPECT_EQ(ProcessStartUnixMs(INT_MAX), 0);
}

TEST(ParseTaskSyscallTest, InsideAndOutsideASystemCall) {
  const char in_call[] = "7 0x7ffc1 0x1 0x3e8 0x0 0x0 0x0 0x7ffc0010 0x7f0000abcd\n";
  TaskSyscall sys;
  ASSERT_TRUE(ParseTaskSyscall(in_call, sizeof(in_call) - 1, &sys));
  EXPECT_EQ(sys.fields, 9);
  EXPECT_EQ(sys.nr, 7);
  EXPECT_EQ(sys.args[0], 0x7ffc1u);
  EXPECT_EQ(sys.args[2], 0x3e8u);
  EXPECT_EQ(sys.sp, 0x7ffc0010u);
  EXPECT_EQ(sys.pc, 0x7f0000abcdu);
  const char outside[] = "-1 0x7ffc0010 0x7f0000abcd\n";
  ASSERT_TRUE(ParseTaskSyscall(outside, sizeof(outside) - 1, &sys));
  EXPECT_EQ(sys.fields, 3);
  EXPECT_EQ(sys.nr, -1);
  EXPECT_EQ(sys.sp, 0x7ffc0010u);
  EXPECT_EQ(sys.pc, 0x7f0000abcdu);
  const char running[] = "running\n";
  EXPECT_TRUE(SaysRunning(running, sizeof(running) - 1));
  EXPECT_FALSE(ParseTaskSyscall(running, sizeof(running) - 1, &sys));
  const char odd[] = "7 0x1 0x2 0x3\n";
  EXPECT_FALSE(ParseTaskSyscall(odd, sizeof(odd) - 1, &sys));
}

// A thread asleep in read(2) on a pipe, its line found by what it reads (the descriptor and the
// count are the same in any numbering): the line names read(2) exactly when /proc's lines are
// ours. Natively they are; under qemu-user the number is the host's (x86_64's read is 0,
// aarch64's 63) and the check says so.
TEST(ProcSyscallLinesTest, OursExactlyWhenABlockedReadIsNamedRead) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    char c;
    (void)!read(fds[0], &c, 1);
  });
  while (tid.load() == 0) std::this_thread::yield();
  char path[64], text[256];
  TaskPath(0, tid.load(), "syscall", path, sizeof(path));
  TaskSyscall sys;
  bool found = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!found && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ReadProcFile(path, text, sizeof(text));
    found = n > 0 && ParseTaskSyscall(text, static_cast<size_t>(n), &sys) && sys.fields == 9 &&
            sys.args[0] == static_cast<uint64_t>(fds[0]) && sys.args[2] == 1;
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (void)!write(fds[1], "x", 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  ASSERT_TRUE(found) << "the reader never showed its read: " << text;
  EXPECT_EQ(ProcSyscallLinesAreOurs(), sys.nr == SYS_read) << text;
}

TEST(ParseSchedStatTest, CountsTheFieldsRead) {
  SchedStat s;
  const char full[] = "123456 789 12\n";
  EXPECT_EQ(ParseSchedStat(full, sizeof(full) - 1, &s), 3);
  EXPECT_EQ(s.cpu_ns, 123456u);
  EXPECT_EQ(s.run_delay_ns, 789u);
  EXPECT_EQ(s.timeslices, 12u);
  const char one[] = "55\n";
  SchedStat t;
  EXPECT_EQ(ParseSchedStat(one, sizeof(one) - 1, &t), 1);
  EXPECT_EQ(t.cpu_ns, 55u);
  EXPECT_EQ(ParseSchedStat("x", 1, &t), 0);
}

TEST(StatusFieldTest, DecimalsMasksAndTheNameLine) {
  const char status[] =
      "Name:\tTracerPid: 9\n"
      "State:\tS (sleeping)\n"
      "TracerPid:\t4321\n"
      "SigBlk:\t0000000000010002\n"
      "SigIgn:\t\n";
  int64_t tracer = 0;
  ASSERT_TRUE(StatusDecimal(status, "TracerPid", &tracer));
  EXPECT_EQ(tracer, 4321);  // not the thread name that looks like the field
  uint64_t mask = 0;
  ASSERT_TRUE(StatusMask(status, "SigBlk", &mask));
  EXPECT_EQ(mask, 0x10002u);
  EXPECT_FALSE(StatusMask(status, "SigIgn", &mask));
  EXPECT_EQ(FindStatusField(status, "SigCgt"), nullptr);
}

TEST(MapsTest, ParsesFieldsPathsWithSpacesAndSkipsGarbage) {
  const std::string text =
      "55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234   /usr/bin/demo\n"
      "7f0000000000-7f0000001000 r-xp 00002000 08:01 99 /tmp/my lib.so (deleted)\n"
      "garbage line\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f0000001000-7f0000021000 ---p 00000000 00:00 0 ";
  std::vector<std::string> paths;
  std::vector<bool> readable;
  ForEachMapsLine(text.data(), text.size(), [&](const MapsLine& m) {
    paths.emplace_back(m.path, m.path_size);
    readable.push_back(m.readable());
  });
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(paths[0], "/usr/bin/demo");
  EXPECT_EQ(paths[1], "/tmp/my lib.so (deleted)");
  EXPECT_EQ(paths[2], "[stack]");
  EXPECT_EQ(paths[3], "");
  EXPECT_TRUE(readable[2]);
  EXPECT_FALSE(readable[3]);
  MapsLine line;
  ASSERT_TRUE(ParseMapsLine(text.data(), text.find('\n'), &line));
  EXPECT_EQ(line.lo, 0x55d0c0a01000u);
  EXPECT_EQ(line.hi, 0x55d0c0a05000u);
  EXPECT_EQ(std::string(line.perms, line.perms_size), "r-xp");
  EXPECT_TRUE(line.executable());
  EXPECT_EQ(line.offset, 0x1000u);
  EXPECT_EQ(line.inode, 1234u);
  // Numbers wider than 64 bits make the line malformed instead of wrapping around.
  const char wide[] = "10000000000000000-10000000000001000 r-xp 00000000 08:01 1 /x";
  EXPECT_FALSE(ParseMapsLine(wide, sizeof(wide) - 1, &line));
  const char wide_inode[] = "1000-2000 r-xp 00000000 08:01 18446744073709551616 /x";
  EXPECT_FALSE(ParseMapsLine(wide_inode, sizeof(wide_inode) - 1, &line));
  const char max_inode[] = "1000-2000 r-xp 00000000 08:01 18446744073709551615 /x";
  ASSERT_TRUE(ParseMapsLine(max_inode, sizeof(max_inode) - 1, &line));
  EXPECT_EQ(line.inode, UINT64_MAX);
}

// Reading this process's maps through a buffer much smaller than the file (lines straddle the
// refills) finds the mapping of this very function, and agrees with the text read whole.
TEST(MapsTest, ReadsOwnMapsThroughASmallBuffer) {
  const auto here = reinterpret_cast<uint64_t>(&ParseMapsLine);
  char buf[512];
  size_t lines = 0;
  bool found = false;
  ASSERT_TRUE(ReadMaps(0, buf, sizeof(buf), [&](const MapsLine& m) {
    ++lines;
    found |= m.lo <= here && here < m.hi && m.executable();
  }));
  EXPECT_TRUE(found);
  char whole[1 << 16];
  const ssize_t n = ReadProcFile("/proc/self/maps", whole, sizeof(whole));
  ASSERT_GT(n, 0);
  size_t whole_lines = 0;
  ForEachMapsLine(whole, static_cast<size_t>(n), [&](const MapsLine&) { ++whole_lines; });
  EXPECT_EQ(lines, whole_lines);
  // A buffer shorter than every line skips them all, and still reads the file to its end.
  char tiny[16];
  size_t none = 0;
  EXPECT_TRUE(ReadMaps(0, tiny, sizeof(tiny), [&](const MapsLine&) { ++none; }));
  EXPECT_EQ(none, 0u);
}

TEST(ReadersTest, ExePathAndMissingFiles) {
  char exe[PATH_MAX];
  const ssize_t n = ReadExePath(exe, sizeof(exe));
  ASSERT_GT(n, 0);
  char expected[PATH_MAX];
  const ssize_t m = readlink("/proc/self/exe", expected, sizeof(expected) - 1);
  ASSERT_GT(m, 0);
  expected[m] = '\0';
  EXPECT_STREQ(exe, expected);
  char tiny[4];
  EXPECT_EQ(ReadExePath(tiny, sizeof(tiny)), 3);
  EXPECT_EQ(std::strlen(tiny), 3u);
  char buf[64];
  EXPECT_EQ(ReadProcFile("/proc/self/no-such-file", buf, sizeof(buf)), -1);
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(ReadSchedState(gettid()), 'R');
}

}  // namespace
}  // namespace hangwatch::unwind
