// libFuzzer target: PerfMap (symbols/perf_map.h), the reader of /tmp/perf-PID.map that any
// runtime of the process (or, without the owner check, anyone) writes. The input is the file;
// it is read in two steps (a first part, then the rest appended, as a runtime writes it), with
// limits small enough that reads stop mid-line and old entries are dropped, then looked up.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "symbols/perf_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hangwatch::symbols::PerfMap;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::string_view rest = text; !rest.empty();) {
    const size_t nl = rest.find('\n');
    uint64_t start, length;
    std::string_view name;
    if (PerfMap::ParseLine(rest.substr(0, nl), &start, &length, &name)) {
      if (length == 0 || start + length < start || name.empty()) __builtin_trap();
    }
    rest.remove_prefix(nl == rest.npos ? rest.size() : nl + 1);
  }

  const std::string path = hangwatch::fuzz::ScratchDir() + "/perf.map";
  hangwatch::fuzz::WriteFile(path, text.substr(0, size / 2));
  PerfMap map(path, {.max_read_bytes = 256, .max_entries = 16, .max_name_bytes = 24});
  map.Refresh();
  hangwatch::fuzz::WriteFile(path, text);
  for (int i = 0; i < 8 && map.Refresh() > 0; ++i) {
  }
  if (map.size() > 16) __builtin_trap();
  std::string name;
  uint64_t offset = 0;
  for (uint64_t addr : {uint64_t{0}, uint64_t{0x1000}, uint64_t{0x7f0000001000}, ~uint64_t{0}}) {
    if (map.Find(addr, &name, &offset) && (name.size() > 24 || offset > addr)) __builtin_trap();
  }
  return 0;
}
