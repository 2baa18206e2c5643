// Debug files fetched by build-id from debuginfod servers ($DEBUGINFOD_URLS), through elfutils'
// libdebuginfod and its cache ($DEBUGINFOD_CACHE_PATH, default ~/.cache/debuginfod_client;
// $DEBUGINFOD_TIMEOUT and the library's other variables apply as they do to gdb or eu-stack).
//
// One more link of the lookup chain of debug_file_locator.h: DebugFileLocator asks it last,
// after every local source (and, for a binary's DWARF, after the binary itself), so a file on
// this machine never costs a download.
//
// libdebuginfod is loaded with dlopen on the first download, not linked: the `hangwatch` CLI is
// a static executable (tools/static_link.cmake) and libdebuginfod has no static archive (it
// pulls in libcurl and a dozen libraries behind it), and nothing of it is loaded, let alone
// asked, unless $DEBUGINFOD_URLS names a server. elfutils' own libdw loads it the same way.
#ifndef HANGWATCH_SYMBOLS_DEBUGINFOD_SOURCE_H_
#define HANGWATCH_SYMBOLS_DEBUGINFOD_SOURCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/debug_file_locator.h"

namespace hangwatch::symbols {

// The downloads a DebuginfodSource makes. An interface so that tests can count the requests.
class DebuginfodClient {
 public:
  virtual ~DebuginfodClient() = default;
  // The path of the debug file of `build_id` (lowercase hex) in the client's cache, fetched from
  // the servers when not cached; NotFound when no server has it, another error when it could
  // not be asked (library missing, network error, timeout).
  virtual absl::StatusOr<std::string> FindDebuginfo(const std::string& build_id) = 0;
};

struct LibdebuginfodOptions {
  // Where progress goes ("hangwatch: downloading debug info ...") for a download that has taken
  // more than `progress_after_ms`, and one line per failed request other than "not found"
  // (timeout, unreachable server); -1 for nowhere.
  int progress_fd = 2;
  int progress_after_ms = 1000;
};

// How much one download may take: a hostile or broken server can send an endless body.
// $DEBUGINFOD_MAXSIZE (bytes) and $DEBUGINFOD_MAXTIME (seconds), as libdebuginfod reads them,
// when set to a positive number; else the defaults below, which the first request also puts in
// the environment (without overwriting) so that libdebuginfod refuses a longer Content-Length
// before a byte is written. hangwatch enforces both itself as well (libdebuginfod 0.188 does not
// check the size of a body sent without Content-Length): the transfer is stopped and what was
// written of it removed.
struct DebuginfodLimits {
  uint64_t max_bytes = 0;
  int64_t max_seconds = 0;
};
// 1 GiB: above nearly every debug file; a larger one needs DEBUGINFOD_MAXSIZE.
inline constexpr uint64_t kDefaultDebuginfodMaxBytes = uint64_t{1} << 30;
inline constexpr int64_t kDefaultDebuginfodMaxSeconds = 300;
DebuginfodLimits DebuginfodLimitsFromEnvironment();

// A DebuginfodClient over libdebuginfod (loaded on the first request). The servers, cache and
// timeouts are the library's: $DEBUGINFOD_URLS, $DEBUGINFOD_CACHE_PATH, $DEBUGINFOD_TIMEOUT...
std::unique_ptr<DebuginfodClient> NewLibdebuginfodClient(LibdebuginfodOptions options = {});

// How many find requests all libdebuginfod clients of this process have made: for tests (the
// network is never asked when $DEBUGINFOD_URLS is unset).
int LibdebuginfodRequestCount();

// The source: a verified debug file by build-id, each build-id asked once per source.
class DebuginfodSource : public DebugFileSource {
 public:
  explicit DebuginfodSource(std::shared_ptr<DebuginfodClient> client);
  std::string Find(const DebugFileQuery& query, std::vector<std::string>* rejected) override;

 private:
  std::shared_ptr<DebuginfodClient> client_;
  std::map<std::string, std::string> answers_;  // build-id -> path, "" when none
};

// The servers of $DEBUGINFOD_URLS, when it is set and names at least one; else nullptr, and
// nothing touches the network.
std::shared_ptr<DebugFileSource> DebuginfodSourceFromEnvironment(LibdebuginfodOptions options = {});

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DEBUGINFOD_SOURCE_H_
