// A file system on which writes block, for tests of what happens while the agent's report
// write is stuck (as on a hung network file system). Header-only.
#ifndef HANGWATCH_TESTS_FROZEN_FILE_SYSTEM_H_
#define HANGWATCH_TESTS_FROZEN_FILE_SYSTEM_H_

#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace hangwatch::testing {

// A small ext4 file system of this test's, mounted from a file; Freeze() makes every write to
// it block (as on a hung network file system) until Thaw(). Everything is undone on
// destruction. Needs root and loop devices: ok() says whether it could be set up.
class FreezableFileSystem {
 public:
  explicit FreezableFileSystem(const std::string& dir)
      : image_(dir + "/fs.img"), mnt_(dir + "/mnt") {
    mkdir(mnt_.c_str(), 0700);
    ok_ = Run("truncate -s 8M '" + image_ + "' && mkfs.ext4 -q -F '" + image_ +
              "' >/dev/null 2>&1 && mount -o loop '" + image_ + "' '" + mnt_ + "' 2>/dev/null");
  }
  ~FreezableFileSystem() {
    Thaw();
    if (ok_) Run("umount '" + mnt_ + "'");
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return mnt_; }
  bool Freeze() { return frozen_ = Run("fsfreeze -f '" + mnt_ + "'"); }
  void Thaw() {
    if (frozen_) Run("fsfreeze -u '" + mnt_ + "'");
    frozen_ = false;
  }

 private:
  static bool Run(const std::string& command) { return std::system(command.c_str()) == 0; }
  std::string image_, mnt_;
  bool ok_ = false, frozen_ = false;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_FROZEN_FILE_SYSTEM_H_
