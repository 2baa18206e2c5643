#include "agent/materialize.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <vector>

#include "symbols/in_process_symbolizer.h"

namespace hangwatch::agent {
namespace {

// FNV-1a, 64 bits: stable across builds, platforms and runs (unlike std::hash).
class Fnv64 {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
  }
  void U64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) {
      b[i] = static_cast<unsigned char>(v >> (8 * i));
    }
    Bytes(b, sizeof(b));
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string Hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool SymbolizeFrame(uintptr_t addr, bool is_return_address, const symbols::Module* module,
                    uint64_t offset, const MaterializeOptions& options, std::string* name) {
  symbols::SymbolInfo info;
  if (options.addresses_are_local) {
    if (!symbols::SymbolizeInProcess(addr, is_return_address, &info)) {
      return false;
    }
  } else {
    // Another run of (maybe) the same binary: find the module by build-id here.
    if (module == nullptr || module->build_id.empty()) {
      return false;
    }
    auto here = symbols::CurrentModuleMap();
    const symbols::Module* local = nullptr;
    for (const auto& m : here->modules()) {
      if (m.build_id == module->build_id) {
        local = &m;
        break;
      }
    }
    if (local == nullptr) {
      return false;
    }
    if (!symbols::SymbolizeInProcess(local->load_bias + offset, is_return_address, &info)) {
      return false;
    }
  }
  if (info.name.empty()) {
    return false;
  }
  *name = std::move(info.name);
  return true;
}

}  // namespace

std::string MainExecutablePath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) {
    return "";
  }
  return std::string(buf, static_cast<size_t>(n));
}

std::string Fingerprint(const HangData& hang, uint32_t stack_id,
                        const symbols::ModuleMap& modules) {
  const StackTable& table = hang.stacks();
  if (stack_id >= table.size()) {
    return "";
  }
  const auto& entry = table.entry(stack_id);
  const uintptr_t* frames = table.frames(stack_id);
  Fnv64 h;
  const size_t n = std::min<size_t>(entry.num_frames, kFingerprintFrames);
  for (size_t i = 0; i < n; ++i) {
    const uintptr_t addr = i == 0 && entry.leaf_key != 0 ? entry.leaf_key : frames[i];
    const symbols::ModuleAddress where = modules.Find(addr);
    if (where.module != nullptr && !where.module->build_id.empty()) {
      h.Bytes(where.module->build_id.data(), where.module->build_id.size());
      h.U64(where.offset);
    } else if (where.module != nullptr) {
      // No build-id: the file name is the next most stable identity.
      const std::string& path = where.module->path;
      const size_t slash = path.rfind('/');
      const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
      h.Bytes(base.data(), base.size());
      h.U64(where.offset);
    } else {
      h.U64(addr);
    }
    h.Bytes("|", 1);
  }
  return Hex16(h.value());
}

HangRecord Materialize(const HangData& hang, const MaterializeOptions& options) {
  const HangSummary& s = hang.summary;
  HangRecord r;
  r.pid = s.pid;
  r.tid = s.tid;
  r.process = options.process;
  r.hang_id = s.hang_id;
  r.start_unix_ms = s.start_unix_ms;
  r.duration_ms = s.duration_ns / 1'000'000;
  r.cpu_ms = s.cpu_known ? s.cpu_ns / 1'000'000 : 0;
  r.cpu_percent = hang.CpuPercent();
  r.hang_class = hang.Class();
  r.stopped_ms = s.stopped_ns / 1'000'000;
  r.threshold_ms = s.threshold_ms;
  r.sample_interval_ms = s.sample_interval_ms;
  r.samples = s.samples;
  r.failed_samples = s.failed_samples;
  r.dropped_stacks = s.dropped_stacks;
  r.fatal = s.fatal;
  r.timeline_truncated = s.timeline_truncated;

  const StackTable& table = hang.stacks();
  const symbols::ModuleMap empty_map({});
  const symbols::ModuleMap& map = options.modules ? *options.modules : empty_map;

  // Order: count descending, then first seen.
  std::vector<uint32_t> order(table.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto& ea = table.entry(a);
    const auto& eb = table.entry(b);
    if (ea.count != eb.count) {
      return ea.count > eb.count;
    }
    return ea.first_seen_ms < eb.first_seen_ms;
  });
  std::vector<int> new_id(table.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    new_id[order[i]] = static_cast<int>(i);
  }

  std::map<const symbols::Module*, size_t> module_index;
  // Symbolizing is the expensive part; one lookup per distinct (address, is_return) pair.
  std::map<std::pair<uintptr_t, bool>, std::string> names;
  r.stacks.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t id = order[i];
    const auto& e = table.entry(id);
    Stack st;
    st.id = static_cast<int>(i);
    st.count = e.count;
    st.first_seen_ms = e.first_seen_ms;
    st.last_seen_ms = e.last_seen_ms;
    st.cpu_us = e.cpu_us;
    const uintptr_t* frames = table.frames(id);
    st.frames.reserve(e.num_frames);
    for (size_t f = 0; f < e.num_frames; ++f) {
      Frame fr;
      fr.addr = frames[f];
      fr.method = hang.frame_method(id, f);
      const symbols::ModuleAddress where = map.Find(frames[f]);
      if (where.module != nullptr) {
        fr.module = where.module->path;
        fr.build_id = where.module->build_id;
        fr.offset = where.offset;
        module_index.emplace(where.module, 0);
      } else {
        fr.offset = frames[f];
      }
      if (options.symbolize) {
        const bool is_return = f > 0;
        auto key = std::make_pair(frames[f], is_return);
        auto it = names.find(key);
        if (it == names.end()) {
          std::string name;
          SymbolizeFrame(frames[f], is_return, where.module, where.offset, options, &name);
          it = names.emplace(key, std::move(name)).first;
        }
        fr.symbol = it->second;
      }
      st.frames.push_back(std::move(fr));
    }
    r.stacks.push_back(std::move(st));
  }
  r.dominant_stack = r.stacks.empty() ? -1 : 0;
  r.fingerprint = order.empty() ? "" : Fingerprint(hang, order[0], map);

  r.timeline.reserve(hang.timeline_size());
  for (size_t i = 0; i < hang.timeline_size(); ++i) {
    TimelineEntry t = hang.timeline()[i];
    if (t.stack >= 0 && static_cast<size_t>(t.stack) < new_id.size()) {
      t.stack = new_id[static_cast<size_t>(t.stack)];
    } else {
      t.stack = -1;
    }
    r.timeline.push_back(t);
  }
  for (const auto& [module, unused] : module_index) {
    (void)unused;
    r.modules.push_back(ModuleInfo{module->path, module->load_bias, module->build_id});
  }
  std::sort(r.modules.begin(), r.modules.end(),
            [](const ModuleInfo& a, const ModuleInfo& b) { return a.path < b.path; });
  return r;
}

}  // namespace hangwatch::agent
