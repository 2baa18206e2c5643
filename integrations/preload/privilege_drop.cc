// The calls that change a process's user or groups (setuid, setgid, setgroups, initgroups and
// their e-, re-, res- variants), interposed so that a server that starts as root and switches to
// a service user (nginx's, Apache's and Postfix's workers, sshd's privilege-separated children)
// is still watched.
//
// After the switch the process cannot open what the shim writes: the report and the launch log
// are 0600 files of the user who started the watch, the open-hang files live in a 0700
// directory of that user. So, on the first such call in a process and before the real call,
// the shim opens them and keeps the descriptors (hang/files/kept_files.h; close-on-exec, so an
// executed program never inherits them):
//   - the report (HANGWATCH_REPORT) and the launch log (HANGWATCH_LAUNCH_LOG): opened for
//     appending (created 0600 when missing);
//   - this process's open-hang file (HANGWATCH_OPEN_HANG_DIR/open-hang.PID): created now, 0600,
//     O_EXCL, and locked as the agent locks it, unless a file is there already (the armed
//     agent's own, or one a process that died left, which is not taken over).
// The agent writes through a copy of a kept descriptor only when the name no longer opens, and
// only while the kept number still refers to the file it was kept for (a program that closes
// every descriptor and reuses the numbers keeps its files to itself). The files stay owned by,
// and private to, the user who started the watch: nothing is chmod'ed or chown'ed.
//
// A child forked after the switch inherits the kept report and launch log, and writes through
// them. It cannot create its own open-hang file (the directory is out of the new user's reach,
// and the kernel checks the directory's permissions against the caller's credentials even
// through a directory descriptor opened before, so no descriptor helps there): it is watched
// without one, and a hang that kills it is not reported as fatal.
//
// The agent library (libhangwatch_preload_agent.so) is loaded at the first such call too, before
// the real call, so that a process that changed user still finds it (shim_state.h: PrepareAgent).
// The kept descriptors live in the loader's table; the agent library reads them through its
// services (agent_entry.h: dup_kept_file).
//
// Everything else here is libc-only and allocation-free (fixed buffers): setuid() may be called
// by a thread while another holds malloc's lock, or in a vfork child (which the shim leaves
// alone: it shares its parent's memory and executes next).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "hang/files/kept_files.h"
#include "integrations/preload/launch_log.h"
#include "integrations/preload/open_hang_path.h"
#include "integrations/preload/shim_state.h"

namespace hangwatch::preload {
namespace {

using IdFn = int (*)(uid_t);
using GidFn = int (*)(gid_t);
using Id2Fn = int (*)(uid_t, uid_t);
using Gid2Fn = int (*)(gid_t, gid_t);
using Id3Fn = int (*)(uid_t, uid_t, uid_t);
using Gid3Fn = int (*)(gid_t, gid_t, gid_t);
using SetgroupsFn = int (*)(size_t, const gid_t*);
using InitgroupsFn = int (*)(const char*, gid_t);

IdFn g_setuid, g_seteuid;
GidFn g_setgid, g_setegid;
Id2Fn g_setreuid;
Gid2Fn g_setregid;
Id3Fn g_setresuid;
Gid3Fn g_setresgid;
SetgroupsFn g_setgroups;
InitgroupsFn g_initgroups;

template <typename Fn>
Fn Real(Fn* slot, const char* name) {
  Fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    // Only when a constructor that ran before the shim's changed user: resolved here.
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f;
}

// The process whose files were kept (a forked child keeps its own at its own first call), and
// whether this process or one it was forked from changed user since.
pid_t g_kept_pid = 0;
bool g_changed_user = false;
// The open-hang file kept by this process ("" when none): forgotten by a forked child.
char g_open_hang_kept[4096];

// open() by the agent's rules for its files (hang/files/regular_file.h): never through a symbolic
// link, never a FIFO or a device, close-on-exec. -1 with errno set.
int OpenRegular(const char* path, int flags, mode_t mode) {
  struct stat st {};
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return -1;
  }
  const int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

void KeepReport(const char* path) {
  if (path[0] != '/') return;  // a relative path names another file after a chdir
  // Read access too, for the writer's torn-line check (jsonl_writer.h).
  int fd = OpenRegular(path, O_RDWR | O_APPEND | O_CREAT, 0600);
  if (fd < 0 && errno == EACCES) fd = OpenRegular(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd >= 0 && !agent::KeepFile(path, fd)) close(fd);  // kept already (by the parent)
}

void KeepOpenHangFile(const char* dir) {
  char path[sizeof g_open_hang_kept];
  if (dir[0] != '/' || !FormatOpenHangPath(dir, getpid(), path, sizeof path)) return;
  // A file there already is the armed agent's (it has its descriptor), or a dead process's,
  // left for the agent to read and replace (hang/open_hang/open_hang_file.h): not taken over.
  struct stat st {};
  if (lstat(path, &st) == 0 || errno != ENOENT) return;
  const int fd = OpenRegular(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return;
  // Locked like the agent's (run tells a live process's file by its lock); the agent's copy of
  // this descriptor shares the lock.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 || !agent::KeepFile(path, fd)) {
    unlink(path);
    close(fd);
    return;
  }
  memcpy(g_open_hang_kept, path, strlen(path) + 1);
}

// Before the real call. Everything is done once per process, at its first call: later calls
// (setgid, then initgroups, then setuid) find the files kept.
void BeforeUserChange() {
  const int saved_errno = errno;
  const pid_t pid = getpid();
  // A vfork child shares its parent's memory and executes next: left alone (no dlopen there).
  if (InVforkChild() || __atomic_load_n(&g_kept_pid, __ATOMIC_ACQUIRE) == pid) {
    errno = saved_errno;
    return;
  }
  // The agent library is loaded and reads the settings now, before the real call: after it,
  // the new user may not be able to open that library (a build or install directory private to
  // the user who started the watch), and the files below are named by its settings. Once per
  // process image (a forked child has it already).
  if (Phase() != kOff) PrepareAgent();
  ShimFiles files;
  if (!ShimFilesOfThisProcess(&files)) {
    errno = saved_errno;
    return;
  }
  pid_t expected = __atomic_load_n(&g_kept_pid, __ATOMIC_ACQUIRE);
  if (!__atomic_compare_exchange_n(&g_kept_pid, &expected, pid, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    errno = saved_errno;
    return;  // another thread of this process is keeping them
  }
  LaunchLogKeep();
  if (files.report_path[0] != '\0') KeepReport(files.report_path);
  if (files.open_hang_dir[0] != '\0' && !files.armed) KeepOpenHangFile(files.open_hang_dir);
  errno = saved_errno;
}

int AfterUserChange(int result) {
  const int saved_errno = errno;
  ShimFiles files;
  // Not in a vfork child: the flag would be its parent's.
  if (result == 0 && ShimFilesOfThisProcess(&files)) {
    __atomic_store_n(&g_changed_user, true, __ATOMIC_RELEASE);
  }
  errno = saved_errno;
  return result;
}

int NoSuchCall() {
  errno = ENOSYS;
  return -1;
}

}  // namespace

void ResolveUserChangeCalls() {
  Real(&g_setuid, "setuid");
  Real(&g_seteuid, "seteuid");
  Real(&g_setgid, "setgid");
  Real(&g_setegid, "setegid");
  Real(&g_setreuid, "setreuid");
  Real(&g_setregid, "setregid");
  Real(&g_setresuid, "setresuid");
  Real(&g_setresgid, "setresgid");
  Real(&g_setgroups, "setgroups");
  Real(&g_initgroups, "initgroups");
}

void ForgetParentsKeptFiles() {
  if (g_open_hang_kept[0] == '\0') return;
  agent::ForgetKeptFile(g_open_hang_kept);
  g_open_hang_kept[0] = '\0';
}

bool OpenHangFileOutOfReach(const char* path) {
  if (!__atomic_load_n(&g_changed_user, __ATOMIC_ACQUIRE) || strcmp(path, g_open_hang_kept) == 0) {
    return false;
  }
  const char* slash = strrchr(path, '/');
  if (slash == nullptr || slash == path) return false;
  char dir[sizeof g_open_hang_kept];
  const size_t n = static_cast<size_t>(slash - path);
  if (n >= sizeof dir) return false;
  memcpy(dir, path, n);
  dir[n] = '\0';
  const int saved_errno = errno;
  // The effective user's rights (AT_EACCESS), which open() would be checked against.
  const bool out =
      faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0 && (errno == EACCES || errno == EPERM);
  errno = saved_errno;
  return out;
}

}  // namespace hangwatch::preload

using hangwatch::preload::AfterUserChange;
using hangwatch::preload::BeforeUserChange;
using hangwatch::preload::NoSuchCall;
using hangwatch::preload::Real;

#define HW_INTERPOSE __attribute__((visibility("default")))
#define HW_CALL(slot, name, ...)                               \
  do {                                                         \
    BeforeUserChange();                                        \
    auto f = Real(&hangwatch::preload::slot, name);            \
    return AfterUserChange(f ? f(__VA_ARGS__) : NoSuchCall()); \
  } while (0)

extern "C" {

HW_INTERPOSE int setuid(uid_t uid) { HW_CALL(g_setuid, "setuid", uid); }
HW_INTERPOSE int seteuid(uid_t uid) { HW_CALL(g_seteuid, "seteuid", uid); }
HW_INTERPOSE int setgid(gid_t gid) { HW_CALL(g_setgid, "setgid", gid); }
HW_INTERPOSE int setegid(gid_t gid) { HW_CALL(g_setegid, "setegid", gid); }
HW_INTERPOSE int setreuid(uid_t r, uid_t e) { HW_CALL(g_setreuid, "setreuid", r, e); }
HW_INTERPOSE int setregid(gid_t r, gid_t e) { HW_CALL(g_setregid, "setregid", r, e); }
HW_INTERPOSE int setresuid(uid_t r, uid_t e, uid_t s) {
  HW_CALL(g_setresuid, "setresuid", r, e, s);
}
HW_INTERPOSE int setresgid(gid_t r, gid_t e, gid_t s) {
  HW_CALL(g_setresgid, "setresgid", r, e, s);
}
HW_INTERPOSE int setgroups(size_t n, const gid_t* groups) {
  HW_CALL(g_setgroups, "setgroups", n, groups);
}
HW_INTERPOSE int initgroups(const char* user, gid_t group) {
  HW_CALL(g_initgroups, "initgroups", user, group);
}

}  // extern "C"
