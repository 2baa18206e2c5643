// NearMemoryLimit (memory_headroom.h).
#include "agent/core/memory_headroom.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "unwind/proc_files.h"

namespace hangwatch::agent {
namespace {

// A finite soft limit of `resource`, or 0 when there is none.
uint64_t Limit(int resource) {
  rlimit rl;
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace

bool NearMemoryLimit(size_t headroom) {
  const uint64_t as_limit = Limit(RLIMIT_AS);
  const uint64_t data_limit = Limit(RLIMIT_DATA);
  if (as_limit == 0 && data_limit == 0) return false;
  // "size resident shared text lib data dt", in pages; data counts data and stack.
  char text[256];
  if (unwind::ReadProcFile("/proc/self/statm", text, sizeof(text)) <= 0) return false;
  uint64_t fields[6] = {};
  char* at = text;
  for (uint64_t& f : fields) {
    char* end = nullptr;
    f = std::strtoull(at, &end, 10);
    if (end == at) return false;
    at = end;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t size = fields[0] * page;
  const uint64_t data = fields[5] * page;
  return (as_limit != 0 && size + headroom > as_limit) ||
         (data_limit != 0 && data + headroom > data_limit);
}

}  // namespace hangwatch::agent
