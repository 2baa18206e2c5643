// The exec family and posix_spawn, interposed: the environment handed to the new program keeps
// or loses the shim by the launch rule (shim_state.h), and each exec is noted in the launch log.
//
// Why here and not at load: a wrapper (sh -c, env, timeout, nice, a script ending in exec, a
// version manager's shim) must pass the shim on to what it executes, and shells treat the
// process environment differently (bash keeps its own copy of exported variables), so editing
// our own environment at load cannot work. What a process hands to execve is what the next
// program gets: that is the one place to decide.
//
// Programs that build their own environment (Python's subprocess copies os.environ at start;
// libuv sets environ before execvp) are covered by the interposed calls; calls that glibc makes
// internally (system, popen) use the process environment, which the shim rewrites when it arms
// (StripShimFromOwnEnvironment).
//
// Everything on the exec path is allocation-free (alloca, no dlsym): it may run in a vfork
// child sharing the parent's memory.
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <string_view>

#include "integrations/preload/launch_log.h"
#include "integrations/preload/preload_list.h"
#include "integrations/preload/shim_state.h"

extern "C" char** environ;

namespace hangwatch::preload {
namespace {

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using SpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                        const posix_spawnattr_t*, char* const[], char* const[]);

ExecveFn g_execve;
ExecveFn g_execvpe;
FexecveFn g_fexecve;
SpawnFn g_posix_spawn;
SpawnFn g_posix_spawnp;

constexpr std::string_view kPreload = "LD_PRELOAD=";

// An LD_PRELOAD=... entry that names the shim.
bool IsShimPreload(const char* entry) {
  return strncmp(entry, kPreload.data(), kPreload.size()) == 0 &&
         HasShim(entry + kPreload.size(), ShimPath());
}

// Returns run(env), where env is `envp` as the new program must get it: unchanged when the
// shim is passed on, else without the shim in LD_PRELOAD (an entry left empty is dropped). The
// copy lives on this function's stack while run() executes.
template <typename Run>
int WithChildEnvironment(char* const* envp, Run run) {
  size_t count = 0, bytes = 0;
  if (envp != nullptr && !ExecKeepsShim()) {
    for (; envp[count] != nullptr; ++count) {
      if (IsShimPreload(envp[count])) bytes += strlen(envp[count]) + 1;
    }
  }
  if (bytes == 0) return run(envp);
  char** copy = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  char* buf = static_cast<char*>(alloca(bytes));
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!IsShimPreload(envp[i])) {
      copy[k++] = envp[i];
      continue;
    }
    const std::string_view list(envp[i] + kPreload.size());
    memcpy(buf, kPreload.data(), kPreload.size());
    if (RemoveShimFromPreload(list, ShimPath(), buf + kPreload.size()) > 0) copy[k++] = buf;
    buf += kPreload.size() + list.size() + 1;
  }
  copy[k] = nullptr;
  return run(copy);
}

int NoSuchCall() {
  errno = ENOSYS;
  return -1;
}

// What the new program's environment will hold of the shim (the launch log's SHIM field).
ExecShim ShimFate(char* const* envp) {
  if (!ExecKeepsShim()) return ExecShim::kStripped;
  for (size_t i = 0; envp != nullptr && envp[i] != nullptr; ++i) {
    if (IsShimPreload(envp[i])) return ExecShim::kKept;
  }
  return ExecShim::kAbsent;
}

// An exec-family call, logged: the call itself, then its failure if it returns.
template <typename Call>
int LoggedExec(const char* path, char* const argv[], char* const envp[], Call call) {
  LaunchLogExec(path, argv, ShimFate(envp), /*spawn=*/false);
  const int result = WithChildEnvironment(envp, call);
  LaunchLogExecFailed(errno);
  return result;
}

// posix_spawn, logged: returns an error number, 0 when the program runs.
template <typename Call>
int LoggedSpawn(const char* path, char* const argv[], char* const envp[], Call call) {
  LaunchLogExec(path, argv, ShimFate(envp), /*spawn=*/true);
  const int result = WithChildEnvironment(envp, call);
  if (result != 0) LaunchLogExecFailed(result);
  return result;
}

int Execve(const char* path, char* const argv[], char* const envp[]) {
  if (g_execve == nullptr) return NoSuchCall();
  return LoggedExec(path, argv, envp, [&](char* const* env) { return g_execve(path, argv, env); });
}

int Execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (g_execvpe == nullptr) return NoSuchCall();
  return LoggedExec(file, argv, envp, [&](char* const* env) { return g_execvpe(file, argv, env); });
}

// The arguments of execl/execle/execlp after `arg0`, up to the terminating null pointer, into
// argv (which has room for `n` + 1 pointers); `n` counted by CountArgs on a copy of the list.
// (Through a pointer: a va_list handed over by value may not be used by the caller afterwards,
// and on aarch64 it would not advance.)
size_t CountArgs(va_list* ap) {
  size_t n = 1;
  while (va_arg(*ap, char*) != nullptr) ++n;
  return n;
}
void CollectArgs(const char* arg0, va_list* ap, char** argv, size_t n) {
  argv[0] = const_cast<char*>(arg0);
  for (size_t i = 1; i < n; ++i) argv[i] = va_arg(*ap, char*);
  argv[n] = va_arg(*ap, char*);  // the terminating null pointer: execle's envp comes after it
}

}  // namespace

void ResolveExecCalls() {
  g_execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  g_execvpe = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execvpe"));
  g_fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
  g_posix_spawn = reinterpret_cast<SpawnFn>(dlsym(RTLD_NEXT, "posix_spawn"));
  g_posix_spawnp = reinterpret_cast<SpawnFn>(dlsym(RTLD_NEXT, "posix_spawnp"));
}

void StripShimFromOwnEnvironment() {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!IsShimPreload(*e)) continue;
    // Rewritten in place (never longer), so no thread that is reading the environment meanwhile
    // ever sees freed memory; "LD_PRELOAD=" left empty means nothing to ld.so.
    const std::string_view list(*e + kPreload.size());
    char* out = static_cast<char*>(alloca(list.size() + 1));
    const size_t n = RemoveShimFromPreload(list, ShimPath(), out);
    memcpy(*e + kPreload.size(), out, n + 1);
  }
}

}  // namespace hangwatch::preload

using hangwatch::preload::CollectArgs;
using hangwatch::preload::CountArgs;

#define HW_INTERPOSE __attribute__((visibility("default")))

// Declares `argv`: the execl-style arguments (arg0, ..., a null pointer) collected on the calling
// frame's stack (alloca: it must be this frame); leaves `ap` past the terminating null pointer.
#define HW_COLLECT_EXECL_ARGS(arg0, ap, argv)                               \
  va_list count_;                                                           \
  va_copy(count_, ap);                                                      \
  const size_t n_ = CountArgs(&count_);                                     \
  va_end(count_);                                                           \
  /* NOLINTNEXTLINE(bugprone-macro-parentheses): the name being declared */ \
  char** argv = static_cast<char**>(alloca((n_ + 1) * sizeof(char*)));      \
  CollectArgs((arg0), &(ap), (argv), n_)

extern "C" {

HW_INTERPOSE int execve(const char* path, char* const argv[], char* const envp[]) {
  return hangwatch::preload::Execve(path, argv, envp);
}

HW_INTERPOSE int execv(const char* path, char* const argv[]) {
  return hangwatch::preload::Execve(path, argv, environ);
}

HW_INTERPOSE int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return hangwatch::preload::Execvpe(file, argv, envp);
}

HW_INTERPOSE int execvp(const char* file, char* const argv[]) {
  return hangwatch::preload::Execvpe(file, argv, environ);
}

HW_INTERPOSE int execl(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  HW_COLLECT_EXECL_ARGS(arg0, ap, argv);
  va_end(ap);
  return hangwatch::preload::Execve(path, argv, environ);
}

HW_INTERPOSE int execlp(const char* file, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  HW_COLLECT_EXECL_ARGS(arg0, ap, argv);
  va_end(ap);
  return hangwatch::preload::Execvpe(file, argv, environ);
}

HW_INTERPOSE int execle(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  HW_COLLECT_EXECL_ARGS(arg0, ap, argv);
  char* const* envp = va_arg(ap, char* const*);  // after the terminating null pointer
  va_end(ap);
  return hangwatch::preload::Execve(path, argv, envp);
}

HW_INTERPOSE int fexecve(int fd, char* const argv[], char* const envp[]) {
  using hangwatch::preload::g_fexecve;
  if (g_fexecve == nullptr) return hangwatch::preload::NoSuchCall();
  return hangwatch::preload::LoggedExec("(a file descriptor)", argv, envp,
                                        [&](char* const* env) { return g_fexecve(fd, argv, env); });
}

HW_INTERPOSE int posix_spawn(pid_t* pid, const char* path,
                             const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attr, char* const argv[],
                             char* const envp[]) {
  using hangwatch::preload::g_posix_spawn;
  if (g_posix_spawn == nullptr) return ENOSYS;
  return hangwatch::preload::LoggedSpawn(path, argv, envp, [&](char* const* env) {
    return g_posix_spawn(pid, path, actions, attr, argv, env);
  });
}

HW_INTERPOSE int posix_spawnp(pid_t* pid, const char* file,
                              const posix_spawn_file_actions_t* actions,
                              const posix_spawnattr_t* attr, char* const argv[],
                              char* const envp[]) {
  using hangwatch::preload::g_posix_spawnp;
  if (g_posix_spawnp == nullptr) return ENOSYS;
  return hangwatch::preload::LoggedSpawn(file, argv, envp, [&](char* const* env) {
    return g_posix_spawnp(pid, file, actions, attr, argv, env);
  });
}

}  // extern "C"
