// `hangwatch run`: runs a command with the preload shim injected, then reports its hangs (--help).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "tools/command.h"
#include "tools/junit.h"
#include "tools/report_formats.h"
#include "tools/report_reader.h"
#include "tools/report_symbolize.h"

extern char** environ;

namespace hangwatch::tools {
namespace {

constexpr int kExitHang = 3;

constexpr char kUsage[] =
    "usage: hangwatch run [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with libhangwatch_preload.so injected (LD_PRELOAD): its main thread is watched\n"
    "from the moment it first waits for events (epoll_wait, poll, select, ...). When COMMAND\n"
    "ends, its hangs are summarized on stderr. Exits with COMMAND's status (128+N when killed\n"
    "by signal N), or 3 with --fail-on-hang when a hang was seen.\n"
    "\n"
    "  --threshold-ms N   a run-loop pass longer than N ms is a hang (default 250)\n"
    "  --sample-ms N      sample a slow pass every N ms (default threshold / 10)\n"
    "  --report FILE      append the hangs to FILE as JSON Lines (see hangwatch report)\n"
    "  --fail-on-hang     exit 3 when a hang (or a start-up stall) was seen\n"
    "  --junit FILE       write JUnit XML: one test case per hang fingerprint\n"
    "  --startup-ms N     reaching the event loop later than N ms after start is a start-up\n"
    "                     stall (default 2000)\n"
    "  --no-startup-stall do not report slow start-ups\n"
    "  --inherit          also watch the programs COMMAND executes (keeps LD_PRELOAD)\n"
    "  --live             log each hang on stderr as it happens, too\n"
    "  --quiet            no summary on stderr\n"
    "\n"
    "The shim is looked for in $HANGWATCH_PRELOAD_LIB, next to this program, in ../lib and\n"
    "../lib/<multiarch> relative to it, and in the build tree. Exit status 2: bad usage, or\n"
    "the shim is missing; 127: COMMAND cannot be executed.\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "hangwatch run: %s\n", message.c_str());
  return kExitUsage;
}

bool ParseMs(const std::string& s, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno != 0 || v < 1 || v > 3600000) {
    return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string FindShim() {
  if (const char* env = std::getenv("HANGWATCH_PRELOAD_LIB"); env != nullptr && *env) {
    return access(env, R_OK) == 0 ? std::string(env) : std::string();
  }
  const std::string dir = SelfDir();
  const char* kName = "libhangwatch_preload.so";
  for (const std::string& candidate :
       {dir + "/" + kName, dir + "/../lib/" + kName, dir + "/../lib64/" + kName,
        dir + "/../lib/x86_64-linux-gnu/" + kName, dir + "/../lib/aarch64-linux-gnu/" + kName,
        dir + "/../integrations/preload/" + kName}) {
    if (access(candidate.c_str(), R_OK) == 0) {
      char* real = realpath(candidate.c_str(), nullptr);
      std::string r = real ? real : candidate;
      std::free(real);
      return r;
    }
  }
  return "";
}

std::string AbsolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return p;
  return std::string(cwd) + "/" + p;
}

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Removes the temporary directory and what the shim left in it.
void RemoveTree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) {
        unlink((dir + "/" + e->d_name).c_str());
      }
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

int Run(int argc, char** argv) {
  uint32_t threshold_ms = 250, sample_ms = 0, startup_ms = 2000;
  std::string report_path, junit_path;
  bool fail_on_hang = false, startup_stall = true, inherit = false, live = false, quiet = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string v;
    auto value = [&](std::string_view flag) {
      if (a == flag) {
        if (i + 1 >= argc) return false;
        v = argv[++i];
        return true;
      }
      if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
        v = std::string(a.substr(flag.size() + 1));
        return true;
      }
      return false;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--") {
      ++i;
      break;
    } else if (value("--threshold-ms")) {
      if (!ParseMs(v, &threshold_ms))
        return Fail("--threshold-ms wants 1..3600000, not '" + v + "'");
    } else if (value("--sample-ms")) {
      if (!ParseMs(v, &sample_ms)) return Fail("--sample-ms wants 1..3600000, not '" + v + "'");
    } else if (value("--startup-ms")) {
      if (!ParseMs(v, &startup_ms)) return Fail("--startup-ms wants 1..3600000, not '" + v + "'");
    } else if (value("--report")) {
      report_path = AbsolutePath(v);
    } else if (value("--junit")) {
      junit_path = v;
    } else if (a == "--fail-on-hang") {
      fail_on_hang = true;
    } else if (a == "--no-startup-stall") {
      startup_stall = false;
    } else if (a == "--inherit") {
      inherit = true;
    } else if (a == "--live") {
      live = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail("unknown option '" + std::string(a) +
                  "' or missing value (see hangwatch run --help)");
    } else {
      break;  // the command
    }
  }
  if (i >= argc) return Fail("no command given (hangwatch run [options] -- COMMAND [ARGS...])");
  if (sample_ms > threshold_ms) return Fail("--sample-ms must not be larger than --threshold-ms");
  const std::string shim = FindShim();
  if (shim.empty()) {
    const char* env = std::getenv("HANGWATCH_PRELOAD_LIB");
    return Fail(
        env != nullptr && *env
            ? std::string("HANGWATCH_PRELOAD_LIB=") + env + " is not readable"
            : std::string("cannot find libhangwatch_preload.so (set HANGWATCH_PRELOAD_LIB)"));
  }

  char tmpl[] = "/tmp/hangwatch-run.XXXXXX";
  const char* tmp = mkdtemp(tmpl);
  if (tmp == nullptr)
    return Fail(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string tmpdir = tmp;
  const bool own_report = report_path.empty();
  if (own_report) report_path = tmpdir + "/report.jsonl";
  const off_t report_offset = FileSize(report_path);

  // The child's environment: ours, with the shim first in LD_PRELOAD and HANGWATCH_* set.
  std::vector<std::string> env;
  std::string preload = shim;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv = *e;
    if (kv.substr(0, 11) == "LD_PRELOAD=") {
      if (kv.size() > 11) preload += ":" + std::string(kv.substr(11));
      continue;
    }
    if (kv.substr(0, 10) == "HANGWATCH_" && kv.substr(0, 22) != "HANGWATCH_CACHE_DIR=") continue;
    env.emplace_back(kv);
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("HANGWATCH_THRESHOLD_MS=" + std::to_string(threshold_ms));
  if (sample_ms) env.push_back("HANGWATCH_SAMPLE_MS=" + std::to_string(sample_ms));
  env.push_back("HANGWATCH_REPORT=" + report_path);
  env.push_back("HANGWATCH_OPEN_HANG_DIR=" + tmpdir);
  env.push_back(std::string("HANGWATCH_LOG=") + (live ? "1" : "0"));
  env.push_back(std::string("HANGWATCH_STARTUP_STALL=") + (startup_stall ? "1" : "0"));
  env.push_back("HANGWATCH_STARTUP_MS=" + std::to_string(startup_ms));
  if (inherit) env.push_back("HANGWATCH_INHERIT=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  // While COMMAND runs, terminal signals reach it directly (same process group): ignore them
  // here; forward the ones sent to us alone.
  struct sigaction ign {
  }, fwd{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ign.sa_handler = SIG_IGN;
  fwd.sa_handler = Forward;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) {
    RemoveTree(tmpdir);
    return Fail(std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    execvpe(argv[i], argv + i, envp.data());
    std::fprintf(stderr, "hangwatch run: cannot execute '%s': %s\n", argv[i], std::strerror(errno));
    _exit(127);
  }
  g_child = child;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const int exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                        : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                              : 1;

  // What the run appended to the report, plus hangs that were open when a process died.
  Report report;
  {
    std::ifstream in(report_path, std::ios::binary);
    if (in) {
      if (FileSize(report_path) >= report_offset) in.seekg(report_offset);
      std::ostringstream buf;
      buf << in.rdbuf();
      std::string error;
      ParseJsonLines(buf.str(), &report, &error);  // torn lines are counted in the report
    }
  }
  if (DIR* d = opendir(tmpdir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "open-hang.", 10) != 0) continue;
      HangRecord fatal;
      std::string error;
      const std::string path = tmpdir + "/" + e->d_name;
      if (agent::ReadOpenHangFile(path, &fatal, &error) == agent::OpenHangReadStatus::kFound) {
        // Its frames were resolved against the dead process's modules but not named (that
        // needs the same build loaded here): name them offline, from the binaries on disk.
        Report one;
        one.hangs.push_back(std::move(fatal));
        std::vector<std::string> warnings;
        SymbolizeReport(ReportSymbolizeOptions{}, &one, &warnings);
        fatal = std::move(one.hangs[0]);
        if (!own_report) {
          const std::string line = ToJsonLine(fatal) + "\n";
          const int fd = open(report_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
          if (fd >= 0) {
            ssize_t unused = write(fd, line.data(), line.size());
            (void)unused;
            close(fd);
          }
        }
        report.hangs.push_back(std::move(fatal));
      }
    }
    closedir(d);
  }
  RemoveTree(tmpdir);

  const bool stalled = !report.hangs.empty() || !report.startup_stalls.empty();
  if (!quiet) {
    if (stalled) {
      std::fprintf(stderr, "hangwatch run: %zu hang%s in %s (threshold %u ms)\n",
                   report.hangs.size(), report.hangs.size() == 1 ? "" : "s", argv[i], threshold_ms);
      const std::string summary = FormatSummary(report, 16);
      std::fwrite(summary.data(), 1, summary.size(), stderr);
      if (!own_report) {
        std::fprintf(stderr, "hangwatch run: details: hangwatch report %s\n", report_path.c_str());
      }
    } else {
      std::fprintf(stderr, "hangwatch run: no hangs in %s (threshold %u ms)\n", argv[i],
                   threshold_ms);
    }
  }
  if (!junit_path.empty()) {
    std::string suite;
    for (int k = i; k < argc; ++k) suite += (k > i ? " " : "") + std::string(argv[k]);
    const std::string xml = FormatJunit(report, suite, elapsed);
    std::ofstream out(junit_path, std::ios::binary | std::ios::trunc);
    out << xml;
    out.close();
    if (!out) std::fprintf(stderr, "hangwatch run: cannot write %s\n", junit_path.c_str());
  }
  return fail_on_hang && stalled ? kExitHang : exit_code;
}

const CommandRegistration kRegistration(
    {"run", "run a command with the agent injected; report its hangs (CI gate)", Run});

}  // namespace
}  // namespace hangwatch::tools
