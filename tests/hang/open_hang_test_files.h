// Files for the open-hang file's tests: a fresh path in $TMPDIR, one byte flipped in place.
#ifndef HANGWATCH_TESTS_HANG_OPEN_HANG_TEST_FILES_H_
#define HANGWATCH_TESTS_HANG_OPEN_HANG_TEST_FILES_H_

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>

namespace hangwatch::testing {

// $TMPDIR/hangwatch_PREFIX_NAME_PID.bin, removed if it was there.
inline std::string OpenHangTempPath(const char* prefix, const char* name) {
  const char* dir = std::getenv("TMPDIR");
  std::string p = std::string(dir ? dir : "/tmp") + "/hangwatch_" + prefix + "_" + name + "_" +
                  std::to_string(getpid()) + ".bin";
  unlink(p.c_str());
  return p;
}

// Flips bits of the byte at `offset` of `path`.
inline void CorruptByte(const std::string& path, size_t offset) {
  const int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char b = 0;
  ASSERT_EQ(pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= 0x5a;
  ASSERT_EQ(pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  close(fd);
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_HANG_OPEN_HANG_TEST_FILES_H_
