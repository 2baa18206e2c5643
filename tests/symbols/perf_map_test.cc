// symbols/perf_map: /tmp/perf-PID.map read incrementally, bounded; garbage and a vanished or
// replaced file handled.
#include "symbols/perf_map.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fixture_util.h"
#include "gtest/gtest.h"
#include "unwind/proc_files.h"

namespace hangwatch::symbols {
namespace {

using symtest::TempDir;

void Append(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
}

std::string NameAt(const PerfMap& map, uint64_t addr) {
  std::string name;
  return map.Find(addr, &name) ? name : "<none>";
}

TEST(PerfMapTest, ParsesTheLinesRuntimesWrite) {
  uint64_t start = 0, size = 0;
  std::string_view name;
  ASSERT_TRUE(
      PerfMap::ParseLine("3ef0a4c0 2a LazyCompile:*busy /tmp/app.js:3:14", &start, &size, &name));
  EXPECT_EQ(start, 0x3ef0a4c0u);
  EXPECT_EQ(size, 0x2au);
  EXPECT_EQ(name, "LazyCompile:*busy /tmp/app.js:3:14");
  ASSERT_TRUE(
      PerfMap::ParseLine("0x7f00001000 0x40 py::blocked:/srv/app.py\r", &start, &size, &name));
  EXPECT_EQ(start, 0x7f00001000u);
  EXPECT_EQ(name, "py::blocked:/srv/app.py");
  for (const char* bad :
       {"", "zz 10 f", "1000", "1000 10", "1000 10 ", "1000 0 empty", "1000  10 two-spaces",
        "ffffffffffffffff 10 wraps", "11112222333344445 10 too-long", "1000 10 tab\tinside"}) {
    EXPECT_FALSE(PerfMap::ParseLine(bad, &start, &size, &name)) << bad;
  }
}

TEST(PerfMapTest, ReadsWhatWasAppendedSinceTheLastRefresh) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-1.map";
  PerfMap map(path);
  EXPECT_EQ(map.Refresh(), 0u) << "no file yet";
  Append(path, "1000 100 first\n2000 10 second\n3000 10 incompl");
  EXPECT_EQ(map.Refresh(), 2u);
  EXPECT_EQ(NameAt(map, 0x1000), "first");
  EXPECT_EQ(NameAt(map, 0x10ff), "first");
  EXPECT_EQ(NameAt(map, 0x1100), "<none>");
  EXPECT_EQ(NameAt(map, 0x3000), "<none>") << "a line being written is not read yet";
  uint64_t offset = 0;
  std::string name;
  ASSERT_TRUE(map.Find(0x2004, &name, &offset));
  EXPECT_EQ(offset, 4u);
  Append(path, "ete\ngarbage line\n\n4000 10 fourth\n");
  EXPECT_EQ(map.Refresh(), 2u);
  EXPECT_EQ(NameAt(map, 0x3001), "incomplete");
  EXPECT_EQ(NameAt(map, 0x4000), "fourth");
  EXPECT_EQ(map.size(), 4u);
  EXPECT_EQ(map.Refresh(), 0u) << "nothing new";
}

TEST(PerfMapTest, ALaterEntryReplacesTheCodeItOverlaps) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-2.map";
  Append(path, "1000 100 old-a\n1100 100 old-b\n1200 100 old-c\n10f0 20 new\n");
  PerfMap map(path);
  EXPECT_EQ(map.Refresh(), 4u);
  EXPECT_EQ(NameAt(map, 0x1000), "<none>") << "old-a was freed";
  EXPECT_EQ(NameAt(map, 0x10f0), "new");
  EXPECT_EQ(NameAt(map, 0x1105), "new");
  EXPECT_EQ(NameAt(map, 0x1110), "<none>");
  EXPECT_EQ(NameAt(map, 0x1250), "old-c");
}

TEST(PerfMapTest, AVanishedMapKeepsItsNamesAReplacedOneIsReadAgain) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-3.map";
  Append(path, "1000 10 kept\n");
  PerfMap map(path);
  EXPECT_EQ(map.Refresh(), 1u);
  ASSERT_EQ(unlink(path.c_str()), 0);
  EXPECT_EQ(map.Refresh(), 0u);
  EXPECT_EQ(NameAt(map, 0x1000), "kept");
  Append(path, "5000 10 other\n");  // a new file (another inode): another process's map
  EXPECT_EQ(map.Refresh(), 1u);
  EXPECT_EQ(NameAt(map, 0x1000), "<none>");
  EXPECT_EQ(NameAt(map, 0x5000), "other");
}

// The JVM's Compiler.perfmap rewrites the whole file in place, in address order: a method compiled
// since sits among the old lines, and a method freed since is gone.
TEST(PerfMapTest, AMapRewrittenInPlaceIsReadAgainFromItsStartWhenSaid) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-4.map";
  Append(path, "1000 10 Interpreter\n3000 10 freed\n");
  PerfMap map(path);
  EXPECT_EQ(map.Refresh(), 2u);
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC);  // the same inode, the same head
  ASSERT_GE(fd, 0);
  const std::string rewritten = "1000 10 Interpreter\n2000 10 compiled-since\n4000 10 last\n";
  ASSERT_EQ(write(fd, rewritten.data(), rewritten.size()), static_cast<ssize_t>(rewritten.size()));
  close(fd);
  map.ReadAgainFromStart();
  EXPECT_EQ(map.Refresh(), 3u);
  EXPECT_EQ(NameAt(map, 0x2000), "compiled-since");
  EXPECT_EQ(NameAt(map, 0x3000), "<none>");
  EXPECT_EQ(NameAt(map, 0x4000), "last");
  EXPECT_EQ(map.Refresh(), 0u) << "once";
}

// A process that writes no map of its own must not be named from the one an earlier process with
// the same pid left in /tmp: a file last modified before the process started is not read.
TEST(PerfMapTest, AMapOlderThanTheProcessIsNotRead) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-5.map";
  Append(path, "1000 10 earlier-process\n");
  const timeval old[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};  // 2001
  ASSERT_EQ(utimes(path.c_str(), old), 0);
  PerfMapLimits limits;
  limits.not_before_unix_ms = unwind::ProcessStartUnixMs(0) - 2000;
  PerfMap map(path, limits);
  EXPECT_EQ(map.Refresh(), 0u);
  EXPECT_EQ(NameAt(map, 0x1000), "<none>");
  Append(path, "2000 10 ours\n");  // written now: this process's
  EXPECT_EQ(map.Refresh(), 2u);
  EXPECT_EQ(NameAt(map, 0x2000), "ours");
}

TEST(PerfMapTest, AMapOwnedByAnotherUserIsNotRead) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-7.map";
  Append(path, "1000 10 planted\n");
  if (chown(path.c_str(), 65534, 65534) != 0) GTEST_SKIP() << "cannot chown (not root)";
  PerfMap map(path);
  EXPECT_EQ(map.Refresh(), 0u);
  EXPECT_EQ(NameAt(map, 0x1000), "<none>");
  ASSERT_EQ(chown(path.c_str(), geteuid(), getegid()), 0);
  EXPECT_EQ(map.Refresh(), 1u);
  EXPECT_EQ(NameAt(map, 0x1000), "planted");
}

TEST(PerfMapTest, BoundedReadsEntriesAndNames) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-4.map";
  std::string text;
  for (int i = 0; i < 100; ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "%x 10 f%03d\n", 0x10000 + i * 0x100, i);
    text += line;
  }
  Append(path, text);
  PerfMapLimits limits;
  limits.max_read_bytes = 200;  // about 15 lines per refresh
  limits.max_entries = 40;
  limits.max_name_bytes = 3;
  PerfMap map(path, limits);
  const size_t first = map.Refresh();
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, 100u);
  size_t total = first, rounds = 1;
  while (size_t n = map.Refresh()) {
    total += n;
    ++rounds;
  }
  EXPECT_EQ(total, 100u);
  EXPECT_GT(rounds, 5u);
  EXPECT_LE(map.size(), 40u);
  EXPECT_EQ(NameAt(map, 0x10000 + 99 * 0x100), "f09") << "the newest kept, names cut";
  EXPECT_EQ(NameAt(map, 0x10000), "<none>") << "the oldest dropped";
}

TEST(PerfMapTest, ALineLongerThanAReadIsSkippedNotStuckOn) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-5.map";
  Append(path, "1000 10 " + std::string(500, 'x') + "\n2000 10 after\n");
  PerfMapLimits limits;
  limits.max_read_bytes = 100;
  PerfMap map(path, limits);
  for (int i = 0; i < 20 && NameAt(map, 0x2000) == "<none>"; ++i) map.Refresh();
  EXPECT_EQ(NameAt(map, 0x2000), "after");
  EXPECT_EQ(NameAt(map, 0x1000), "<none>");
}

// Random bytes between valid lines (a torn write, another program's file): the valid lines are
// read, nothing else, never a crash. Deterministic (fixed seed).
TEST(PerfMapTest, RandomGarbageBetweenValidLinesIsIgnored) {
  TempDir dir;
  const std::string path = dir.path() + "/perf-6.map";
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::string text;
  for (int i = 0; i < 200; ++i) {
    const size_t n = next() % 300;
    for (size_t k = 0; k < n; ++k) {
      char c = static_cast<char>(next());
      if (c == '\n') c = 'x';  // garbage stays inside its own line
      text.push_back(c);
    }
    text += "\n";
    char line[64];
    std::snprintf(line, sizeof line, "%x 10 valid%d\n", 0x100000 + i * 0x100, i);
    text += line;
  }
  Append(path, text);
  PerfMapLimits limits;
  limits.max_read_bytes = 1000;
  PerfMap map(path, limits);
  // Each refresh consumes the complete lines of its 1000 bytes (at least ~700 of them).
  for (size_t read = 0; read < 2 * text.size(); read += limits.max_read_bytes) map.Refresh();
  EXPECT_EQ(map.size(), 200u);
  EXPECT_EQ(NameAt(map, 0x100000 + 123 * 0x100), "valid123");
}

}  // namespace
}  // namespace hangwatch::symbols
