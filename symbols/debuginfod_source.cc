// DebuginfodSource and the libdebuginfod client it asks (loaded with dlopen).
#include "symbols/debuginfod_source.h"

#include <elfutils/debuginfod.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "symbols/elf_file.h"
#include "symbols/shared_library.h"
#include "symbols/url_credentials.h"

namespace hangwatch::symbols {
namespace {

std::atomic<int> g_requests{0};

// The functions of libdebuginfod this file uses, from one dlopen for the whole process.
struct Libdebuginfod {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_set_user_data) set_user_data = nullptr;
  decltype(&debuginfod_get_user_data) get_user_data = nullptr;
  decltype(&debuginfod_get_url) get_url = nullptr;
  // The C library's free() as the library sees it: the paths it returns are malloc'ed by the
  // libc it was loaded with, which in a static executable is not the executable's own.
  void (*free_fn)(void*) = nullptr;
  std::string error;  // why it could not be loaded; "" when loaded
};

const Libdebuginfod& LoadLibdebuginfod() {
  static const Libdebuginfod* lib = [] {
    auto* l = new Libdebuginfod;
    void* handle = OpenSharedLibrary(DEBUGINFOD_SONAME, "libdebuginfod1", &l->error);
    if (handle == nullptr) return l;
    if (!LoadFunction(handle, "debuginfod_begin", &l->begin) ||
        !LoadFunction(handle, "debuginfod_end", &l->end) ||
        !LoadFunction(handle, "debuginfod_find_debuginfo", &l->find_debuginfo) ||
        !LoadFunction(handle, "debuginfod_set_progressfn", &l->set_progressfn) ||
        !LoadFunction(handle, "debuginfod_set_user_data", &l->set_user_data) ||
        !LoadFunction(handle, "debuginfod_get_user_data", &l->get_user_data) ||
        !LoadFunction(handle, "debuginfod_get_url", &l->get_url) ||
        !LoadFunction(handle, "free", &l->free_fn)) {
      l->error = DEBUGINFOD_SONAME " lacks a function this build needs (elfutils >= 0.179)";
    }
    return l;
  }();
  return *lib;
}

void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// A positive decimal number from the environment, else `fallback`.
int64_t PositiveFromEnvironment(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t x = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &x) || x <= 0) return fallback;
  return x;
}

// Why a download was stopped by the progress function.
enum class Stopped { kNo, kTooLarge, kTooSlow };

// One request in flight: what the progress function needs.
struct Download {
  const Libdebuginfod* lib;
  const LibdebuginfodOptions* options;
  std::string build_id;
  DebuginfodLimits limits;
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point last_shown{};
  bool shown = false;
  bool tty = false;
  Stopped stopped = Stopped::kNo;
};

std::string Megabytes(long bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

// libdebuginfod calls this while it waits and downloads: a = bytes so far, b = total (<= 0 when
// unknown). Shows a line once the download has taken longer than progress_after_ms, then at most
// once a second (rewritten in place on a terminal). Returning 0 lets the transfer go on.
// Returning non-zero stops the transfer: when it is past its size or time bound.
int ShowProgress(debuginfod_client* client, long a, long b) {
  const Libdebuginfod& lib = LoadLibdebuginfod();
  auto* d = static_cast<Download*>(lib.get_user_data(client));
  if (d == nullptr) return 0;
  const auto now = std::chrono::steady_clock::now();
  if (a > 0 && static_cast<uint64_t>(a) > d->limits.max_bytes) d->stopped = Stopped::kTooLarge;
  if (now - d->start > std::chrono::seconds(d->limits.max_seconds)) d->stopped = Stopped::kTooSlow;
  if (d->stopped != Stopped::kNo) return 1;
  if (d->options->progress_fd < 0) return 0;
  if (now - d->start < std::chrono::milliseconds(d->options->progress_after_ms)) return 0;
  if (d->shown && now - d->last_shown < std::chrono::seconds(1)) return 0;
  d->shown = true;
  d->last_shown = now;
  // The server's URL as $DEBUGINFOD_URLS names it, which may hold a user name and password.
  const char* url = lib.get_url(client);
  std::string line =
      absl::StrCat(d->tty ? "\r" : "", "hangwatch: downloading debug info ", d->build_id,
                   url != nullptr ? " from " : "", url != nullptr ? RedactUrlCredentials(url) : "",
                   ": ", Megabytes(a));
  if (b > 0) absl::StrAppend(&line, " of ", Megabytes(b), " (", a * 100 / b, "%)");
  absl::StrAppend(
      &line, absl::StrFormat(", %.0f s", std::chrono::duration<double>(now - d->start).count()));
  if (!d->tty) line += '\n';
  WriteAll(d->options->progress_fd, line);
  return 0;
}

// libdebuginfod reads DEBUGINFOD_MAXSIZE / DEBUGINFOD_MAXTIME from the environment only: the
// defaults go there, unless the user set them. Once, before the first request (the command line
// makes it from one thread; nothing else reads the environment meanwhile).
void PutDefaultLimitsInEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    setenv("DEBUGINFOD_MAXSIZE", std::to_string(kDefaultDebuginfodMaxBytes).c_str(), 0);
    setenv("DEBUGINFOD_MAXTIME", std::to_string(kDefaultDebuginfodMaxSeconds).c_str(), 0);
  });
}

class LibdebuginfodClient : public DebuginfodClient {
 public:
  explicit LibdebuginfodClient(LibdebuginfodOptions options) : options_(options) {}
  ~LibdebuginfodClient() override {
    if (client_ != nullptr) LoadLibdebuginfod().end(client_);
  }

  absl::StatusOr<std::string> FindDebuginfo(const std::string& build_id) override {
    const Libdebuginfod& lib = LoadLibdebuginfod();
    if (!lib.error.empty()) return absl::UnavailableError(lib.error);
    if (client_ == nullptr) {
      PutDefaultLimitsInEnvironment();
      client_ = lib.begin();
      if (client_ == nullptr) return absl::UnavailableError("debuginfod_begin failed");
      lib.set_progressfn(client_, ShowProgress);
    }
    Download d{&lib, &options_, build_id, DebuginfodLimitsFromEnvironment(),
               std::chrono::steady_clock::now()};
    d.tty = options_.progress_fd >= 0 && isatty(options_.progress_fd) == 1;
    lib.set_user_data(client_, &d);
    char* path = nullptr;
    g_requests.fetch_add(1, std::memory_order_relaxed);
    const int fd = lib.find_debuginfo(
        client_, reinterpret_cast<const unsigned char*>(build_id.c_str()), 0, &path);
    lib.set_user_data(client_, nullptr);
    if (d.shown && options_.progress_fd >= 0) {
      WriteAll(options_.progress_fd,
               absl::StrCat(d.tty ? "\r" : "", "hangwatch: debug info ", build_id,
                            fd >= 0 ? " downloaded" : " failed", "\n"));
    }
    std::string result = path != nullptr ? path : "";
    if (path != nullptr) lib.free_fn(path);
    // A complete answer past the size bound (a server that lied about its length) goes too.
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > d.limits.max_bytes) {
      d.stopped = Stopped::kTooLarge;
      if (!result.empty()) ::unlink(result.c_str());
    }
    if (fd >= 0) ::close(fd);
    if (fd < 0 || d.stopped != Stopped::kNo) {
      // A stopped transfer ends as "not found" in libdebuginfod (0.188).
      if (fd == -ENOENT && d.stopped == Stopped::kNo) {
        return absl::NotFoundError("no server has it");
      }
      const auto elapsed = std::chrono::steady_clock::now() - d.start;
      std::string why = absl::StrCat("debuginfod: no debug info for ", build_id, ": ");
      if (d.stopped == Stopped::kTooLarge || fd == -EFBIG) {  // EFBIG: by its Content-Length
        absl::StrAppend(&why, "larger than ", d.limits.max_bytes, " bytes (DEBUGINFOD_MAXSIZE)");
      } else if (d.stopped == Stopped::kTooSlow ||
                 ((fd == -ETIME || fd == -ETIMEDOUT) &&
                  elapsed >= std::chrono::seconds(d.limits.max_seconds))) {
        absl::StrAppend(&why, "took more than ", d.limits.max_seconds, " s (DEBUGINFOD_MAXTIME)");
      } else {
        absl::StrAppend(&why, std::strerror(-fd));
        if (fd == -ETIME || fd == -ETIMEDOUT) absl::StrAppend(&why, " (DEBUGINFOD_TIMEOUT)");
      }
      if (options_.progress_fd >= 0) WriteAll(options_.progress_fd, "hangwatch: " + why + "\n");
      return absl::UnavailableError(why);
    }
    if (result.empty()) return absl::InternalError("libdebuginfod returned no path");
    return result;
  }

 private:
  LibdebuginfodOptions options_;
  debuginfod_client* client_ = nullptr;
};

}  // namespace

DebuginfodLimits DebuginfodLimitsFromEnvironment() {
  DebuginfodLimits l;
  l.max_bytes = static_cast<uint64_t>(PositiveFromEnvironment(
      "DEBUGINFOD_MAXSIZE", static_cast<int64_t>(kDefaultDebuginfodMaxBytes)));
  l.max_seconds = PositiveFromEnvironment("DEBUGINFOD_MAXTIME", kDefaultDebuginfodMaxSeconds);
  return l;
}

std::unique_ptr<DebuginfodClient> NewLibdebuginfodClient(LibdebuginfodOptions options) {
  return std::make_unique<LibdebuginfodClient>(options);
}

int LibdebuginfodRequestCount() { return g_requests.load(std::memory_order_relaxed); }

DebuginfodSource::DebuginfodSource(std::shared_ptr<DebuginfodClient> client)
    : client_(std::move(client)) {}

std::string DebuginfodSource::Find(const DebugFileQuery& query,
                                   std::vector<std::string>* rejected) {
  if (query.build_id.size() < 2) return {};
  if (auto it = answers_.find(query.build_id); it != answers_.end()) return it->second;
  std::string& answer = answers_[query.build_id];
  auto found = client_->FindDebuginfo(query.build_id);
  if (!found.ok()) return answer;
  // A server may answer with another build's file (a mis-indexed archive): verify, as every
  // other source does.
  auto file = ElfFile::Open(*found);
  const std::string got = file.ok() ? ReadBuildId((*file)->elf()) : "";
  if (got == query.build_id) {
    answer = *found;
  } else {
    rejected->push_back(*found + " (from debuginfod: build-id " + (got.empty() ? "none" : got) +
                        ", wanted " + query.build_id + ")");
  }
  return answer;
}

std::shared_ptr<DebugFileSource> DebuginfodSourceFromEnvironment(LibdebuginfodOptions options) {
  const char* urls = std::getenv(DEBUGINFOD_URLS_ENV_VAR);
  if (urls == nullptr ||
      std::string_view(urls).find_first_not_of(" \t") == std::string_view::npos) {
    return nullptr;
  }
  return std::make_shared<DebuginfodSource>(NewLibdebuginfodClient(options));
}

}  // namespace hangwatch::symbols
