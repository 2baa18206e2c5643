// The preload shim's settings, its LD_PRELOAD rewriting, and how it recognises a program whose
// threads wait without libc (Go).
#include "integrations/preload/preload_config.h"
#include "integrations/preload/stderr_policy.h"
#include "integrations/preload/thread_selection.h"
#include "integrations/preload/unseen_waits.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace hangwatch::preload {
namespace {

PreloadConfig Read(const std::map<std::string, std::string>& env,
                   std::vector<std::string>* warnings) {
  return ReadPreloadConfig(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

TEST(PreloadConfig, DefaultsWhenUnset) {
  std::vector<std::string> w;
  const PreloadConfig c = Read({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.threshold_ms, 250u);
  EXPECT_EQ(c.sample_ms, 0u);
  EXPECT_TRUE(c.report_path.empty());
  EXPECT_TRUE(c.log);
  EXPECT_TRUE(c.startup_stall);
  EXPECT_EQ(c.startup_ms, 2000u);
  EXPECT_FALSE(c.inherit);
}

TEST(PreloadConfig, ReadsEveryVariable) {
  std::vector<std::string> w;
  const PreloadConfig c = Read({{"HANGWATCH_THRESHOLD_MS", "120"},
                                {"HANGWATCH_SAMPLE_MS", "7"},
                                {"HANGWATCH_REPORT", "/tmp/x.jsonl"},
                                {"HANGWATCH_LOG", "0"},
                                {"HANGWATCH_STARTUP_STALL", "off"},
                                {"HANGWATCH_STARTUP_MS", "900"},
                                {"HANGWATCH_INHERIT", "1"},
                                {"HANGWATCH_OPEN_HANG_DIR", "/tmp/d"}},
                               &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.threshold_ms, 120u);
  EXPECT_EQ(c.sample_ms, 7u);
  EXPECT_EQ(c.report_path, "/tmp/x.jsonl");
  EXPECT_FALSE(c.log);
  EXPECT_FALSE(c.startup_stall);
  EXPECT_EQ(c.startup_ms, 900u);
  EXPECT_TRUE(c.inherit);
  EXPECT_EQ(c.open_hang_dir, "/tmp/d");
}

TEST(PreloadConfig, MalformedValuesKeepDefaultsAndWarn) {
  std::vector<std::string> w;
  const PreloadConfig c = Read({{"HANGWATCH_THRESHOLD_MS", "12x"},
                                {"HANGWATCH_SAMPLE_MS", "-3"},
                                {"HANGWATCH_STARTUP_MS", "0"},
                                {"HANGWATCH_LOG", "maybe"}},
                               &w);
  EXPECT_EQ(w.size(), 4u);
  EXPECT_EQ(c.threshold_ms, 250u);
  EXPECT_EQ(c.sample_ms, 0u);
  EXPECT_EQ(c.startup_ms, 2000u);
  EXPECT_TRUE(c.log);
  EXPECT_NE(w[0].find("HANGWATCH_THRESHOLD_MS='12x'"), std::string::npos) << w[0];
}

TEST(PreloadConfig, ThreadsMainLoopsOrNamePatterns) {
  std::vector<std::string> w;
  EXPECT_EQ(Read({}, &w).threads.mode, ThreadSelection::Mode::kMain);
  EXPECT_EQ(Read({{"HANGWATCH_THREADS", "main"}}, &w).threads.mode, ThreadSelection::Mode::kMain);
  EXPECT_EQ(Read({{"HANGWATCH_THREADS", "loops"}}, &w).threads.mode, ThreadSelection::Mode::kLoops);
  const PreloadConfig c = Read({{"HANGWATCH_THREADS", "gdbus,io-*,main"}}, &w);
  EXPECT_TRUE(w.empty());
  ASSERT_EQ(c.threads.mode, ThreadSelection::Mode::kNamed);
  EXPECT_EQ(c.threads.patterns, (std::vector<std::string>{"gdbus", "io-*"}));
  EXPECT_TRUE(c.threads.Selects("gdbus"));
  EXPECT_TRUE(c.threads.Selects("io-"));
  EXPECT_TRUE(c.threads.Selects("io-worker-12"));
  EXPECT_FALSE(c.threads.Selects("gdbus2"));
  EXPECT_FALSE(c.threads.Selects("gmain"));
  EXPECT_FALSE(c.threads.Selects("main"));
  // `main` alone in a list: the main thread alone.
  EXPECT_EQ(Read({{"HANGWATCH_THREADS", "main,main"}}, &w).threads.mode,
            ThreadSelection::Mode::kMain);
}

TEST(PreloadConfig, ThreadGlobs) {
  EXPECT_TRUE(GlobMatches("*", ""));
  EXPECT_TRUE(GlobMatches("*", "anything"));
  EXPECT_TRUE(GlobMatches("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatches("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(GlobMatches("Chrome_*IO*", "Chrome_ChildIOT"));
  EXPECT_TRUE(GlobMatches("io-?", "io-7"));
  EXPECT_FALSE(GlobMatches("io-?", "io-12"));
  EXPECT_FALSE(GlobMatches("io", "io-1"));
  EXPECT_TRUE(GlobMatches("**x", "x"));
}

TEST(PreloadConfig, MalformedThreadsWarnAndWatchTheMainThreadAlone) {
  for (const char* bad : {",", "io-*,", ",io-*", "a,,b", "loops,io-*", "main,loops",
                          "a-thread-name-too-long", "io\tx"}) {
    const std::string value = bad;
    std::vector<std::string> w;
    const PreloadConfig c = Read({{"HANGWATCH_THREADS", value}}, &w);
    EXPECT_EQ(c.threads.mode, ThreadSelection::Mode::kMain) << value;
    ASSERT_EQ(w.size(), 1u) << value;
    EXPECT_NE(w[0].find("HANGWATCH_THREADS="), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("watching the main thread only"), std::string::npos) << w[0];
    EXPECT_EQ(w[0].find('\t'), std::string::npos) << "shown without control characters";
  }
  // Patterns as long as a name, their `*` aside, are fine.
  std::vector<std::string> w;
  EXPECT_EQ(Read({{"HANGWATCH_THREADS", "*fifteen-bytes-1*"}}, &w).threads.mode,
            ThreadSelection::Mode::kNamed);
  EXPECT_TRUE(w.empty());
  ThreadSelection s;
  std::string error;
  EXPECT_FALSE(ParseThreadSelection("", &s, &error));
  EXPECT_FALSE(error.empty());
}

TEST(PreloadConfig, SampleIntervalIsCappedByThreshold) {
  std::vector<std::string> w;
  const PreloadConfig c =
      Read({{"HANGWATCH_THRESHOLD_MS", "50"}, {"HANGWATCH_SAMPLE_MS", "80"}}, &w);
  EXPECT_EQ(c.sample_ms, 50u);
  EXPECT_EQ(w.size(), 1u);
}

// HANGWATCH_MAX_FRAMES: the frames kept per sample (a deep Python recursion needs more than the
// default), within the agent's bounds; anything else warns and keeps the default (0).
TEST(PreloadConfig, MaxFramesWithinOneTo1024) {
  std::vector<std::string> w;
  EXPECT_EQ(Read({}, &w).max_frames, 0u);
  EXPECT_EQ(Read({{"HANGWATCH_MAX_FRAMES", "512"}}, &w).max_frames, 512u);
  EXPECT_TRUE(w.empty());
  for (const char* bad : {"0", "1025", "many"}) {
    w.clear();
    EXPECT_EQ(Read({{"HANGWATCH_MAX_FRAMES", bad}}, &w).max_frames, 0u) << bad;
    ASSERT_EQ(w.size(), 1u) << bad;
    EXPECT_NE(w[0].find("HANGWATCH_MAX_FRAMES"), std::string::npos) << w[0];
  }
}

// RemoveShimFromPreload into a buffer of exactly the promised size, as a string.
std::string Without(std::string_view list, std::string_view self) {
  std::string out(list.size() + 1, '#');
  const size_t n = RemoveShimFromPreload(list, self, out.data());
  EXPECT_EQ(out[n], '\0');
  EXPECT_EQ(std::strlen(out.c_str()), n);
  return out.substr(0, n);
}

TEST(RemoveShimFromPreload, RemovesOnlyTheShim) {
  EXPECT_EQ(Without("/a/libhangwatch_preload.so", "/a/libhangwatch_preload.so"), "");
  EXPECT_EQ(Without("/x/liba.so:/a/libhangwatch_preload.so /x/libb.so", ""),
            "/x/liba.so:/x/libb.so");
  EXPECT_EQ(Without("libhangwatch_preload.so.0:/x/libc2.so", ""), "/x/libc2.so");
  EXPECT_EQ(Without("/opt/renamed-shim.so:/x/liba.so", "/opt/renamed-shim.so"), "/x/liba.so");
  EXPECT_EQ(Without("::/x/liba.so::", "/self.so"), "/x/liba.so");
  EXPECT_EQ(Without("", "/self.so"), "");
  EXPECT_EQ(Without("/x/liba.so /x/libb.so", ""), "/x/liba.so:/x/libb.so");
}

TEST(RemoveShimFromPreload, HasShimAgreesWithIt) {
  for (const char* list : {"/a/libhangwatch_preload.so", "/x/liba.so:/a/libhangwatch_preload.so",
                           "/x/liba.so", "", "::", "/opt/renamed-shim.so"}) {
    const bool removed = Without(list, "/opt/renamed-shim.so") != Without(list, "/nothing");
    EXPECT_EQ(HasShim(list, "/opt/renamed-shim.so"),
              removed || std::string_view(list).find("libhangwatch_preload") != std::string::npos)
        << list;
  }
  EXPECT_TRUE(HasShim("/a/libhangwatch_preload.so", ""));
  EXPECT_FALSE(HasShim("/x/liba.so:/x/libb.so", "/x/libc.so"));
}

// A set-user-ID process: nothing of its caller's environment, nothing printed or written.
TEST(PreloadConfig, SecureExecutionPrintsAndWritesNothing) {
  const PreloadConfig c = SecureExecutionConfig();
  EXPECT_FALSE(c.log);
  EXPECT_FALSE(c.log_lag);
  EXPECT_FALSE(c.startup_stall);
  EXPECT_TRUE(c.report_path.empty());
  EXPECT_TRUE(c.open_hang_dir.empty());
  EXPECT_EQ(c.threshold_ms, PreloadConfig{}.threshold_ms);
}

TEST(PreloadConfig, LagLineOnlyWhenAsked) {
  std::vector<std::string> w;
  EXPECT_FALSE(Read({}, &w).log_lag);
  EXPECT_TRUE(Read({{"HANGWATCH_LOG_LAG", "1"}}, &w).log_lag);
}

StderrFile File(mode_t mode, bool terminal, dev_t dev = 5, ino_t ino = 77) {
  StderrFile f;
  f.open = true;
  f.mode = mode;
  f.is_terminal = terminal;
  f.dev = dev;
  f.ino = ino;
  return f;
}

TEST(StderrPolicy, TerminalPipeOrHandedOverFileOnly) {
  const char* none[] = {nullptr, ""};
  EXPECT_TRUE(MayPrintOn(File(S_IFCHR, true), none, 2));
  EXPECT_TRUE(MayPrintOn(File(S_IFIFO, false), none, 2));
  // A daemon's data file, a socket to a client, /dev/null: not without being handed over.
  EXPECT_FALSE(MayPrintOn(File(S_IFREG, false), none, 2));
  EXPECT_FALSE(MayPrintOn(File(S_IFSOCK, false), none, 2));
  EXPECT_FALSE(MayPrintOn(File(S_IFCHR, false), none, 2));
  EXPECT_FALSE(MayPrintOn(StderrFile{}, none, 2)) << "descriptor 2 closed";
  const char* run[] = {"5:77", nullptr};
  EXPECT_TRUE(MayPrintOn(File(S_IFREG, false), run, 2));
  const char* journal[] = {nullptr, "5:77"};
  EXPECT_TRUE(MayPrintOn(File(S_IFSOCK, false), journal, 2));
  const char* other[] = {"5:78", "6:77"};
  EXPECT_FALSE(MayPrintOn(File(S_IFREG, false), other, 2));
  for (const char* bad : {"5", "5:", ":77", "5:77x", "x5:77", "5:77:1", ""}) {
    EXPECT_FALSE(IsNamedFile(File(S_IFREG, false), bad)) << bad;
  }
}

// Go is recognised by its .go.buildinfo section, which `strip` keeps: a copy of this test
// binary is not Go, the same copy with that section (allocated, as Go's linker makes it) is, and
// still is once stripped; a file that is not ELF is not.
TEST(UnseenWaits, GoBuildInfoSectionIsFoundEvenInAStrippedFile) {
  char dir_template[] = "/tmp/hangwatch-unseen-waits.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto has_go_section = [](const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << path;
    const bool found = ElfHasSection(fd, ".go.buildinfo");
    close(fd);
    return found;
  };
  const std::string plain = dir + "/plain", go = dir + "/go", info = dir + "/info";
  {
    std::FILE* f = std::fopen(info.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("\xff Go buildinf:", f);
    std::fclose(f);
  }
  const std::string commands = "cp /proc/" + std::to_string(getpid()) + "/exe " + plain +
                               " && objcopy --add-section " + ".go.buildinfo=" + info +
                               " --set-section-flags .go.buildinfo=alloc,data,contents " + plain +
                               " " + go + " && strip " + go;
  ASSERT_EQ(std::system(commands.c_str()), 0) << commands;
  EXPECT_FALSE(has_go_section(plain));
  EXPECT_TRUE(has_go_section(go));
  EXPECT_FALSE(has_go_section(info)) << "not ELF";
  EXPECT_EQ(WhyWaitsAreUnseen(), nullptr) << "this test is not a Go program";
  EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

}  // namespace
}  // namespace hangwatch::preload
