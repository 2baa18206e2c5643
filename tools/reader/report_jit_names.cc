#include "tools/reader/report_jit_names.h"

#include <unistd.h>

#include <map>
#include <memory>
#include <vector>

#include "symbols/perf_map.h"
#include "tools/reader/report_frames.h"

namespace hangwatch::tools {
namespace {

// A frame of JIT code the record did not name.
bool UnnamedJit(const Frame& f) {
  return f.language == FrameLanguage::kNative && f.module.empty() && f.symbol.empty() &&
         f.addr != 0;
}

bool HasUnnamedJit(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (UnnamedJit(f)) return true;
  }
  return false;
}

// Calls visit(frames) for every list of frames of a hang: its stacks and its cause's threads.
template <typename F>
void ForEachFrameList(HangRecord& h, F&& visit) {
  for (Stack& s : h.stacks) visit(s.frames);
  if (h.cause.has_owner) visit(h.cause.owner.frames);
  for (CauseThread& t : h.cause.chain) visit(t.frames);
  for (CauseThread& t : h.cause.cycle) visit(t.frames);
}

std::string ThisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

size_t NameJitFrames(Report* report, const std::string& dir) {
  const std::string host = ThisHost();
  std::map<int64_t, std::unique_ptr<symbols::PerfMap>> maps;  // by pid, read once each
  size_t named = 0;
  for (HangRecord& h : report->hangs) {
    // Without a start time nothing shows the map is this process's.
    if (h.pid <= 0 || h.start_unix_ms <= 0 || (!h.host.empty() && h.host != host)) continue;
    bool wanted = false;
    ForEachFrameList(h, [&](std::vector<Frame>& frames) { wanted |= HasUnnamedJit(frames); });
    if (!wanted) continue;
    auto& map = maps[h.pid];
    if (map == nullptr) {
      map = std::make_unique<symbols::PerfMap>(dir + "/perf-" + std::to_string(h.pid) + ".map");
      // Each call reads a bounded slice; a map written at exit is read whole (up to 16 slices).
      for (int i = 0; i < 16 && map->Refresh() > 0; ++i) {
      }
    }
    // Written before the hang began: not this process's map.
    if (map->size() == 0 || map->modified_unix_ms() < h.start_unix_ms) continue;
    size_t named_here = 0;
    ForEachFrameList(h, [&](std::vector<Frame>& frames) {
      for (size_t i = 0; i < frames.size(); ++i) {
        Frame& f = frames[i];
        // A caller's frame holds a return address, which may be just past its code's end.
        if (UnnamedJit(f) && map->Find(i > 0 ? f.addr - 1 : f.addr, &f.symbol)) ++named_here;
      }
    });
    if (named_here > 0) RefreshHangIdentity(&h);
    named += named_here;
  }
  return named;
}

}  // namespace hangwatch::tools
