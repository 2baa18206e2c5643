// RegularFile::Open: only regular files are opened, never blocking, under the caller's rules.
#include "symbols/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/symbols/fixture_util.h"

namespace hangwatch::symbols {
namespace {

class RegularFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_.Join(name);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    return path;
  }
  symtest::TempDir dir_;
};

TEST_F(RegularFileTest, OpensARegularFile) {
  const std::string path = Write("a", "hello");
  auto file = RegularFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->size(), 5u);
  char buf[8] = {};
  EXPECT_EQ(read(file->fd(), buf, sizeof(buf)), 5);
}

TEST_F(RegularFileTest, AFifoWithoutAWriterIsRefusedWithoutBlocking) {
  const std::string path = dir_.Join("fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto file = RegularFile::Open(path);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(file.status().message().find("FIFO"), std::string::npos) << file.status();
}

TEST_F(RegularFileTest, DevicesAndDirectoriesAreRefused) {
  EXPECT_EQ(RegularFile::Open("/dev/zero").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RegularFile::Open(dir_.path()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RegularFile::Open(dir_.Join("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RegularFileTest, ASymbolicLinkIsFollowedOnlyWhenAllowed) {
  const std::string target = Write("target", "x");
  const std::string link = dir_.Join("link");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_TRUE(RegularFile::Open(link).ok());
  EXPECT_FALSE(RegularFile::Open(link, {.no_follow = true}).ok());
  // A link to a FIFO is refused either way.
  const std::string fifo = dir_.Join("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string to_fifo = dir_.Join("to_fifo");
  ASSERT_EQ(symlink(fifo.c_str(), to_fifo.c_str()), 0);
  EXPECT_FALSE(RegularFile::Open(to_fifo).ok());
}

TEST_F(RegularFileTest, SizeBoundIsCheckedBeforeReading) {
  const std::string path = Write("big", "");
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_EQ(ftruncate(fd, off_t{200} << 30), 0);  // sparse: 200 GB, no blocks
  close(fd);
  auto file = RegularFile::Open(path, {.max_bytes = 1 << 20});
  EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted) << file.status();
  EXPECT_TRUE(RegularFile::Open(path).ok());
}

TEST_F(RegularFileTest, AnotherUsersFileIsRefusedWhenOwnUserOnly) {
  const std::string path = Write("theirs", "x");
  if (geteuid() != 0) GTEST_SKIP() << "giving a file away needs root";
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  EXPECT_TRUE(RegularFile::Open(path).ok());
  EXPECT_EQ(RegularFile::Open(path, {.own_user_only = true}).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace hangwatch::symbols
