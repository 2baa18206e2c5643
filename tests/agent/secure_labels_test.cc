// HANGWATCH_LABELS in a set-user-ID program that embeds the agent: the environment is its
// caller's, so the labels written on its records must not come from it (secure_getenv, as for
// every other HANGWATCH_* variable).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/sanitizer_allocator.h"

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SecureLabels, SetUserIdProgramTakesNoLabelsFromItsCaller) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a set-user-ID program of another user";
  if (getenv("HANGWATCH_TEST_EXEC_WRAPPER") != nullptr) {
    // Under an emulator (scripts/cross/check-aarch64) the fixture is not executed by the kernel,
    // so its set-user-ID bit means nothing.
    GTEST_SKIP() << "the fixture runs under an emulator: no set-user-ID execution";
  }
#if defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
  // The sanitizers' runtimes take no options from the environment of a set-user-ID process, so
  // LeakSanitizer runs there, cannot stop its threads, and aborts. The rule is the same code in
  // the plain build, where this test runs.
  GTEST_SKIP() << "a set-user-ID program under the sanitizers' runtime aborts at exit";
#endif
  char t[] = "/tmp/hangwatch-secure-labels.XXXXXX";
  ASSERT_NE(mkdtemp(t), nullptr);
  const std::string dir = t;
  const std::string program = dir + "/fixture", report = dir + "/hangs.jsonl";
  {
    std::ifstream in(SECURE_LABELS_FIXTURE, std::ios::binary);
    std::ofstream(program, std::ios::binary) << in.rdbuf();
  }
  // Owned by nobody, set-user-ID, run by root: the effective user changes (AT_SECURE). Nobody
  // writes the report, so the directory is open to it.
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(chown(program.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  const std::string command =
      "HANGWATCH_LABELS=planted=by-the-caller '" + program + "' '" + report + "'";
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char secure[16] = {};
  const bool got = fgets(secure, sizeof secure, p) != nullptr;
  const int status = pclose(p);
  const std::string text = ReadAll(report);
  (void)!std::system(("rm -rf '" + dir + "'").c_str());
  ASSERT_TRUE(got && WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fixture failed";
  if (std::string(secure) != "1\n") GTEST_SKIP() << "AT_SECURE is not set here";
  ASSERT_NE(text.find("\"duration_ms\""), std::string::npos) << "no hang written: " << text;
  EXPECT_EQ(text.find("planted"), std::string::npos) << text;
}

}  // namespace
