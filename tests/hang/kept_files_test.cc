// Descriptors kept for files a process may lose the right to open by name
// (hang/files/kept_files.h): a copy is handed out only while the kept number still refers to the
// file it was kept for, and the JSON Lines writer uses one when the name no longer opens (after a
// switch to `nobody`, in a forked child: needs root), without rotating the file.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "hang/files/jsonl_writer.h"
#include "hang/files/kept_files.h"

namespace hangwatch::agent {
namespace {

class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/hangwatch-kept.XXXXXX";
    path_ = mkdtemp(t) ? t : "";
  }
  ~TempDir() {
    if (!path_.empty()) (void)!std::system(("rm -rf '" + path_ + "'").c_str());
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool SameFile(int a, int b) {
  struct stat sa {
  }, sb{};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

TEST(KeptFiles, CopyIsOfTheKeptFileUntilTheNumberIsReused) {
  TempDir dir;
  const std::string kept_path = dir / "kept", other_path = dir / "other";
  const int fd = open(kept_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(KeepFile(kept_path.c_str(), fd));
  EXPECT_FALSE(KeepFile(kept_path.c_str(), fd)) << "the first descriptor kept for a path stays";
  EXPECT_EQ(DupKeptFile((dir / "never-kept").c_str()), -1);

  const int copy = DupKeptFile(kept_path.c_str());
  ASSERT_GE(copy, 0);
  EXPECT_NE(copy, fd);
  EXPECT_TRUE(SameFile(copy, fd));
  EXPECT_NE(fcntl(copy, F_GETFD) & FD_CLOEXEC, 0);
  close(copy);

  // The program closes the number and opens a file of its own on it: no copy of that.
  close(fd);
  const int other = open(other_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_EQ(other, fd);
  EXPECT_EQ(DupKeptFile(kept_path.c_str()), -1);
  ForgetKeptFile(kept_path.c_str());
  EXPECT_NE(fcntl(other, F_GETFD), -1) << "the program's descriptor was closed";
  close(other);
}

TEST(KeptFiles, ForgetClosesTheKeptDescriptor) {
  TempDir dir;
  const std::string path = dir / "forgotten";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_TRUE(KeepFile(path.c_str(), fd));
  ForgetKeptFile(path.c_str());
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(DupKeptFile(path.c_str()), -1);
}

// Exit codes of the child below, one per check.
enum ChildResult { kOk = 0, kNoSwitch = 10, kAppendFailed, kNoNotice, kNoticeTwice };

// In a child that switched to `nobody`: the report (root's, 0600, in root's 0700 directory) is
// written through the kept descriptor, past max_bytes, without rotation, said once.
int WriteAfterSwitch(const std::string& path, uid_t uid, gid_t gid) {
  const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || !KeepFile(path.c_str(), fd)) return kNoSwitch;
  if (setgid(gid) != 0 || setuid(uid) != 0 || open(path.c_str(), O_RDONLY) >= 0) return kNoSwitch;
  JsonlWriter writer(path, 250);
  std::string error;
  const std::string line(100, 'x');
  int notices = 0;
  for (int i = 0; i < 4; ++i) {
    if (!writer.Append("{\"n\":\"" + line + "\"}", &error)) return kAppendFailed;
    notices += writer.TakeNotice().empty() ? 0 : 1;
  }
  if (notices == 0) return kNoNotice;
  return notices == 1 ? kOk : kNoticeTwice;
}

TEST(KeptFiles, JsonlWriterWritesThroughKeptDescriptorAfterSwitchingUser) {
  const passwd* nobody = getpwnam("nobody");
  if (geteuid() != 0 || nobody == nullptr) GTEST_SKIP() << "needs root and a `nobody` user";
  TempDir dir;  // mkdtemp: 0700, root's
  const std::string path = dir / "report.jsonl";
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  const pid_t child = fork();
  if (child == 0) _exit(WriteAfterSwitch(path, uid, gid));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kOk);
  const std::string text = ReadAll(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_NE(stat((dir / "report.jsonl.1").c_str(), &st), 0);
}

}  // namespace
}  // namespace hangwatch::agent
