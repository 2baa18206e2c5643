// The launch log's exec lines and process names (integrations/preload/launch_log.cc), read back
// by `hangwatch run` (tools/run/launch_log_reader.cc), and what run makes of them
// (tools/run/launch_tree.cc): the programs that ran without the shim, and the launch tree of
// --explain with each reason a process was not watched.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cli_util.h"
#include "integrations/preload/launch_log.h"
#include "tools/run/launch_log_reader.h"
#include "tools/run/launch_tree.h"

extern char* program_invocation_short_name;

namespace hangwatch::testing {
namespace {

using tools::ExecShim;
using tools::LaunchLog;
using tools::ParseLaunchLog;
using tools::ReadLaunchLog;

void UseLog(const std::string& path) {
  if (path.empty()) {
    unsetenv("HANGWATCH_LAUNCH_LOG");
  } else {
    setenv("HANGWATCH_LAUNCH_LOG", path.c_str(), 1);
  }
  preload::LaunchLogInit();
}

// Runs `body` in a forked child (which exits 0 after it) and waits for it.
template <typename Body>
void InChild(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

class LaunchLogExecTest : public ::testing::Test {
 protected:
  void SetUp() override { UseLog(dir_ / "launch.log"); }
  void TearDown() override { UseLog(""); }
  std::string Text() const { return ReadFile(dir_ / "launch.log"); }
  TempDir dir_;
};

TEST_F(LaunchLogExecTest, ExecLinesSayWhatTheNewProgramKeepsOfTheShimAndItsArguments) {
  char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                        const_cast<char*>("node\tserver.js\nx"), nullptr};
  preload::LaunchLogExec("/bin/sh", argv, preload::ExecShim::kStripped, /*spawn=*/true);
  preload::LaunchLogExec("/usr/bin/env", argv, preload::ExecShim::kAbsent, /*spawn=*/false);
  errno = 4321;
  preload::LaunchLogExecFailed(ENOENT);
  EXPECT_EQ(errno, 4321);
  preload::LaunchLogExec("/usr/bin/true", nullptr, preload::ExecShim::kKept, /*spawn=*/false);
  const std::string text = Text();
  EXPECT_TRUE(Has(text, "\tstripped\t/bin/sh\tsh -c node server.js x\n")) << text;
  EXPECT_EQ(text.rfind("spawn ", 0), 0u) << text;
  EXPECT_TRUE(Has(text, "\nexecfail ")) << text;

  const LaunchLog log = ParseLaunchLog(text);
  EXPECT_EQ(log.skipped_lines, 0u) << text;
  ASSERT_EQ(log.processes.size(), 1u);
  const auto& p = log.processes[0];
  ASSERT_EQ(p.images.size(), 1u);
  const auto& execs = p.images[0].execs;
  ASSERT_EQ(execs.size(), 3u);
  EXPECT_TRUE(execs[0].spawn);
  EXPECT_EQ(execs[0].shim, ExecShim::kStripped);
  EXPECT_EQ(execs[0].argv, "sh -c node server.js x");
  EXPECT_EQ(execs[1].shim, ExecShim::kAbsent);
  EXPECT_TRUE(execs[1].failed) << "an execfail line marks the call before it";
  EXPECT_FALSE(execs[0].failed);
  EXPECT_EQ(execs[2].shim, ExecShim::kKept);
  EXPECT_EQ(execs[2].argv, "");
  EXPECT_EQ(p.Became(), &execs[2]) << "its last line is an exec that did not fail";
  EXPECT_EQ(p.images[0].LastExec(), &execs[2]);
}

TEST_F(LaunchLogExecTest, LongArgumentsAreCutShortAtOneKilobyte) {
  std::string big(3000, 'a');
  char* const argv[] = {const_cast<char*>("prog"), big.data(), const_cast<char*>("tail"), nullptr};
  preload::LaunchLogExec("/usr/bin/prog", argv, preload::ExecShim::kKept, false);
  const LaunchLog log = ParseLaunchLog(Text());
  ASSERT_EQ(log.processes.size(), 1u) << Text();
  const std::string& got = log.processes[0].Last().execs.at(0).argv;
  EXPECT_EQ(got.size(), 1024u + 3u);
  EXPECT_EQ(got.rfind("prog aaa", 0), 0u);
  EXPECT_EQ(got.substr(got.size() - 3), "...");
}

TEST_F(LaunchLogExecTest, NameIsArgvZeroAtLoadEvenWhenTheProgramRewritesItsArgv) {
  InChild([] {
    // nginx writes its titles over argv: "nginx: worker process" lands where argv[0]'s
    // basename was (program_invocation_short_name points into argv[0]).
    char* base = program_invocation_short_name;
    const size_t room = std::strlen(base);
    std::memset(base, 'X', room);
    preload::LaunchLogArmed();
  });
  const LaunchLog log = ReadLaunchLog(dir_ / "launch.log");
  ASSERT_EQ(log.processes.size(), 1u) << Text();
  std::string expected = program_invocation_short_name;
  EXPECT_EQ(log.processes[0].Last().name, expected) << Text();
}

TEST_F(LaunchLogExecTest, NameFollowsTheKernelsNameWhenTheProgramRenamesItself) {
  InChild([] {
    preload::LaunchLogLoaded();
    prctl(PR_SET_NAME, "npm", 0, 0, 0);  // what node does for process.title = 'npm'
    preload::LaunchLogArmed();
    char* const argv[] = {const_cast<char*>("sh"), nullptr};
    preload::LaunchLogExec("/bin/sh", argv, preload::ExecShim::kStripped, false);
  });
  const std::string text = Text();
  const LaunchLog log = ParseLaunchLog(text);
  ASSERT_EQ(log.processes.size(), 1u) << text;
  const auto& p = log.processes[0];
  EXPECT_TRUE(Has(text, "load " + std::to_string(p.pid) + " " + std::to_string(getpid()))) << text;
  EXPECT_EQ(p.Last().name, "npm") << "the newest name of the image: " << text;
  EXPECT_EQ(p.Last().execs.at(0).name, "npm");
  // The process ended as the program it executed without the shim: named after that file.
  EXPECT_EQ(p.NewestName(), "sh");
}

TEST(LaunchLogReaderNames, NewestNameOfALiveProcessThatExecutedWithoutTheShimIsItsComm) {
  const std::string self = std::to_string(getpid());
  const std::string start = std::to_string(tools::ReadProcStat(getpid()).start_time);
  const LaunchLog log = ParseLaunchLog("load " + self + " 1 " + start +
                                       " tmux: server\t/usr/bin/tmux\n"
                                       "exec " +
                                       self + " 1 " + start +
                                       " tmux: server\tstripped\t/bin/bash\tbash -c sleep 30\n");
  ASSERT_EQ(log.processes.size(), 1u);
  char comm[64] = {};
  const int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  ASSERT_GT(read(fd, comm, sizeof comm - 1), 0);
  close(fd);
  std::string expected = comm;
  expected.pop_back();
  EXPECT_EQ(log.processes[0].NewestName(), expected) << "not tmux: server, nor bash";
}

TEST(LaunchTree, ProgramsRunWithoutTheShimAreNamedOnceWithTheirCount) {
  const LaunchLog log = ParseLaunchLog(
      "load 10 1 5 npm\t/usr/bin/node\n"
      "armed 10 1 5 npm\t\n"
      "load 11 10 6 npm\t/usr/bin/node\n"
      "exec 11 10 6 npm\tstripped\t/bin/sh\tsh -c node server.js\n"
      "load 12 10 7 npm\t/usr/bin/node\n"
      "exec 12 10 7 npm\tstripped\t/bin/sh\tsh -c node server.js\n"
      "spawn 10 1 5 npm\tstripped\t/bin/sh\tsh -c missing\n"
      "execfail 10 1 5 npm\t2\n"
      "load 13 1 8 env\t/usr/bin/env\n"
      "exec 13 1 8 env\tabsent\t./prog\t\n"
      "exec 14 10 9 npm\tkept\t/bin/true\ttrue\n");
  const auto unwatched = tools::UnwatchedExecs(log);
  ASSERT_EQ(unwatched.size(), 2u);
  EXPECT_EQ(unwatched[0].count, 2u);
  EXPECT_EQ(tools::FormatUnwatchedExecs(unwatched, 5),
            "hangwatch run: npm executed `sh -c node server.js` 2 times without hangwatch; they "
            "were not watched (the launch rule: --no-inherit)\n"
            "hangwatch run: env executed `./prog` without hangwatch; it was not watched (its "
            "environment was cleared of the shim)\n");
  EXPECT_EQ(tools::FormatUnwatchedExecs(unwatched, 1),
            "hangwatch run: npm executed `sh -c node server.js` 2 times without hangwatch; they "
            "were not watched (the launch rule: --no-inherit)\n"
            "hangwatch run: 1 more program was executed without hangwatch (hangwatch run "
            "--explain lists them)\n");
  EXPECT_EQ(tools::FormatUnwatchedExecs({}, 5), "");
}

TEST(LaunchTree, EveryProcessUnderItsParentWithWhyItWasNotWatched) {
  TempDir dir;
  // A set-group-ID copy of a dynamic program: the dynamic linker ignores LD_PRELOAD for it.
  const std::string setgid = dir / "setgid_prog";
  ASSERT_EQ(std::system(("cp /bin/true " + setgid).c_str()), 0);
  ASSERT_EQ(chmod(setgid.c_str(), 02755), 0);
  const LaunchLog log = ParseLaunchLog(
      "load 100 1 5 sh\t/usr/bin/dash\n"
      "exec 100 1 5 sh\tkept\t/usr/bin/python3\tpython3 app.py\n"
      "load 100 1 5 python3\t/usr/bin/python3.11\n"
      "armed 100 1 5 python3\t\n"
      "load 101 100 6 python3\t/usr/bin/python3.11\n"
      "exec 101 100 6 python3\tstripped\t/usr/bin/helper\thelper --once\n"
      "load 102 100 7 python3\t/usr/bin/python3.11\n"
      "exec 102 100 7 python3\tkept\t" STATIC_PROGRAM
      "\tstatic_program 0\n"
      "load 103 100 8 python3\t/usr/bin/python3.11\n"
      "exec 103 100 8 python3\tkept\t" +
      setgid +
      "\tsetgid_prog\n"
      "load 104 1 9 nginx\t/usr/sbin/nginx\n"
      "off 104 1 9 nginx\tcannot open the report: Permission denied\n"
      "load 105 104 10 env\t/usr/bin/env\n"
      "exec 105 104 10 env\tabsent\t/usr/bin/prog\tprog\n"
      "load 106 100 11 python3\t/usr/bin/python3.11\n");
  const std::string tree = tools::FormatLaunchTree(log, 100, "sh", "");
  EXPECT_EQ(tree,
            "hangwatch run: launch tree (every process that loaded the shim, under its parent):\n"
            "hangwatch run:   pid 100 sh (/usr/bin/dash): executed `python3 app.py`\n"
            "hangwatch run:     then python3 (/usr/bin/python3.11): watched\n"
            "hangwatch run:     pid 101 python3 (/usr/bin/python3.11): executed `helper --once` "
            "without the shim (the launch rule: --no-inherit): not watched\n"
            "hangwatch run:     pid 102 python3 (/usr/bin/python3.11): executed `static_program "
            "0` (" STATIC_PROGRAM
            "), which did not load the shim (a statically linked program: nothing can be "
            "preloaded into it): not watched\n"
            "hangwatch run:     pid 103 python3 (/usr/bin/python3.11): executed `setgid_prog` (" +
                setgid +
                "), which did not load the shim (a set-user-ID or set-group-ID program: the "
                "dynamic linker ignores LD_PRELOAD for it): not watched\n"
                "hangwatch run:     pid 106 python3 (/usr/bin/python3.11): never waited for "
                "events\n"
                "hangwatch run:   pid 104 nginx (/usr/sbin/nginx): could not be watched: cannot "
                "open the report: Permission denied\n"
                "hangwatch run:     pid 105 env (/usr/bin/env): executed `prog` with its "
                "environment cleared (no LD_PRELOAD with the shim): not watched\n");
  // The command itself did not load the shim: named first.
  const std::string none = tools::FormatLaunchTree({}, 42, STATIC_PROGRAM, "");
  EXPECT_TRUE(Has(none,
                  "hangwatch run:   pid 42 static_program: did not load the shim (a "
                  "statically linked program"))
      << none;
}

TEST(LaunchTree, AReusedPidIsNotTheParentOfAnEarlierProcess) {
  // pid 200 started at 9 cannot be the parent of a process that started at 7.
  const LaunchLog log = ParseLaunchLog(
      "load 300 200 7 child\t/usr/bin/child\n"
      "load 200 1 9 late\t/usr/bin/late\n");
  const std::string tree = tools::FormatLaunchTree(log, 300, "child", "");
  EXPECT_TRUE(Has(tree, "\nhangwatch run:   pid 300 child")) << tree;
  EXPECT_TRUE(Has(tree, "\nhangwatch run:   pid 200 late")) << tree;
}

}  // namespace
}  // namespace hangwatch::testing
