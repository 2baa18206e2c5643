// FormatPprof: every sample of every hang as a gzipped profile.proto (pprof, Pyroscope, Parca).
//
// One pprof sample per (hang, unique stack): values samples/count (the stack's count),
// wall/nanoseconds (count x the hang's sample interval: what each sample stands for) and
// cpu/nanoseconds (the stack's CPU time: the sum of the CPU deltas of its timeline samples; from
// the stack, so a truncated timeline loses nothing). Labels: class, signature, host, process,
// cause (the kind of the hang's cause: lock, io, ...) (strings; empty ones left out) and pid (a
// number).
//
// Mappings: one per loaded module of each process (path, build-id, load bias): memory_start is
// the load bias and file_offset 0, so address - memory_start is the module's ELF virtual address,
// and the build-id lets pprof, Pyroscope or Parca symbolize frames the report could not. Frames
// that offline symbolization expanded into inlined functions (same address, innermost first)
// become one location with one line per function, as profile.proto wants.
//
// A Python frame is a location of its own without a mapping or an address (its code object's
// address is no machine code, and moves in every run): one line, its function (the qualified
// name and co_filename) and line number; recursion repeats it, never folds it as inlining.
#include <zlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "profile.pb.h"
#include "report/names.h"
#include "report/record_types.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

namespace pp = perftools::profiles;

class ProfileBuilder {
 public:
  ProfileBuilder() { Str(""); }

  int64_t Str(const std::string& s) {
    auto [it, inserted] = strings_.emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) profile_.add_string_table(s);
    return it->second;
  }

  void AddHang(const HangRecord& h) {
    const std::string process(report::ProcessName(h.process_name, h.process));
    for (const Stack& s : h.stacks) {
      if (s.count == 0 || s.frames.empty()) continue;
      pp::Sample* sample = profile_.add_sample();
      AddLocations(s.frames, sample);
      sample->add_value(s.count);
      sample->add_value(static_cast<int64_t>(s.count) * h.sample_interval_ms * 1'000'000);
      sample->add_value(static_cast<int64_t>(s.cpu_us) * 1000);
      Label(sample, "class", HangClassName(h.hang_class));
      Label(sample, "signature", h.signature);
      Label(sample, "host", h.host);
      Label(sample, "process", process);
      if (!h.cause.empty()) Label(sample, "cause", CauseKindName(h.cause.kind));
      // A watched thread other than main: its role (pprof -tagfocus=thread=render).
      if (report::RoleOrMain(h.thread_role) != report::kMainRole) {
        Label(sample, "thread", h.thread_role);
      }
      pp::Label* pid = sample->add_label();
      pid->set_key(Str("pid"));
      pid->set_num(h.pid);
    }
  }

  pp::Profile& Finish() {
    for (auto& [key, m] : mappings_) {
      pp::Mapping* pm = profile_.mutable_mapping(static_cast<int>(m.id - 1));
      // The end of the last frame seen in it, rounded up to a page.
      pm->set_memory_limit((std::max(m.limit, pm->memory_start() + 1) + 4095) & ~uint64_t{4095});
      pm->set_has_functions(m.all_named);
      pm->set_has_filenames(m.all_named && m.any_file);
      pm->set_has_line_numbers(m.all_named && m.any_line);
      pm->set_has_inline_frames(m.all_named && m.any_file);
    }
    return profile_;
  }

 private:
  struct MappingState {
    uint64_t id = 0;
    uint64_t limit = 0;
    bool all_named = true, any_file = false, any_line = false;
  };

  void Label(pp::Sample* sample, const char* key, const std::string& value) {
    if (value.empty()) return;
    pp::Label* l = sample->add_label();
    l->set_key(Str(key));
    l->set_str(Str(value));
  }

  MappingState* Mapping(const Frame& f) {
    if (f.module.empty()) return nullptr;
    const uint64_t base = f.addr - f.offset;
    auto [it, inserted] = mappings_.try_emplace({f.module, f.build_id, base});
    if (inserted) {
      it->second.id = static_cast<uint64_t>(profile_.mapping_size()) + 1;
      pp::Mapping* m = profile_.add_mapping();
      m->set_id(it->second.id);
      m->set_memory_start(base);
      m->set_file_offset(0);
      m->set_filename(Str(f.module));
      m->set_build_id(Str(f.build_id));
    }
    it->second.limit = std::max(it->second.limit, f.addr + 1);
    return &it->second;
  }

  uint64_t Function(const Frame& f) { return Function(f.symbol, f.file); }
  uint64_t Function(const std::string& name, const std::string& file) {
    auto [it, inserted] = functions_.try_emplace({name, file});
    if (inserted) {
      it->second = static_cast<uint64_t>(profile_.function_size()) + 1;
      pp::Function* fn = profile_.add_function();
      fn->set_id(it->second);
      fn->set_name(Str(name));
      fn->set_system_name(Str(name));
      fn->set_filename(Str(file));
    }
    return it->second;
  }

  // A Python frame's location: no mapping, no address, one line.
  uint64_t PythonLocation(const Frame& f) {
    const std::vector<std::pair<uint64_t, int64_t>> lines = {
        {Function(f.symbol.empty() ? std::string("?") : f.symbol, f.file), f.line}};
    auto [it, inserted] = locations_.try_emplace({0, 0, lines}, 0);
    if (inserted) {
      it->second = static_cast<uint64_t>(profile_.location_size()) + 1;
      pp::Location* loc = profile_.add_location();
      loc->set_id(it->second);
      pp::Line* l = loc->add_line();
      l->set_function_id(lines[0].first);
      l->set_line(lines[0].second);
    }
    return it->second;
  }

  // One location for frames[begin, end): one address, its inlined functions innermost first.
  uint64_t Location(const std::vector<Frame>& frames, size_t begin, size_t end) {
    const Frame& outer = frames[end - 1];
    MappingState* m = Mapping(outer);
    std::vector<std::pair<uint64_t, int64_t>> lines;  // (function id, line)
    for (size_t i = begin; i < end; ++i) {
      const Frame& f = frames[i];
      if (f.symbol.empty()) {
        lines.clear();  // unnamed: the address alone, for a symbolizer to resolve
        if (m != nullptr) m->all_named = false;
        break;
      }
      lines.emplace_back(Function(f), f.line);
      if (m != nullptr) {
        m->any_file = m->any_file || !f.file.empty();
        m->any_line = m->any_line || f.line > 0;
      }
    }
    auto [it, inserted] = locations_.try_emplace({m != nullptr ? m->id : 0, outer.addr, lines}, 0);
    if (inserted) {
      it->second = static_cast<uint64_t>(profile_.location_size()) + 1;
      pp::Location* loc = profile_.add_location();
      loc->set_id(it->second);
      loc->set_mapping_id(m != nullptr ? m->id : 0);
      loc->set_address(outer.addr);
      for (const auto& [fn, line] : lines) {
        pp::Line* l = loc->add_line();
        l->set_function_id(fn);
        l->set_line(line);
      }
    }
    return it->second;
  }

  static bool SameCode(const Frame& a, const Frame& b) {
    return a.addr == b.addr && a.module == b.module && a.symbol == b.symbol && a.file == b.file &&
           a.line == b.line;
  }

  // Frames of one address come from one return address expanded into its inlined functions,
  // or from recursion (the same return address repeated), or both: the run is cut into
  // repetitions of its shortest period, one location each.
  void AddLocations(const std::vector<Frame>& frames, pp::Sample* sample) {
    for (size_t i = 0; i < frames.size();) {
      if (IsInterpreted(frames[i].language)) {
        sample->add_location_id(PythonLocation(frames[i]));
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < frames.size() && frames[j].language == FrameLanguage::kNative &&
             frames[j].addr == frames[i].addr && frames[j].module == frames[i].module) {
        ++j;
      }
      const size_t n = j - i;
      size_t period = n;
      for (size_t p = 1; p < n; ++p) {
        if (n % p != 0) continue;
        bool repeats = true;
        for (size_t k = p; k < n && repeats; ++k)
          repeats = SameCode(frames[i + k], frames[i + k % p]);
        if (repeats) {
          period = p;
          break;
        }
      }
      for (size_t k = i; k < j; k += period)
        sample->add_location_id(Location(frames, k, k + period));
      i = j;
    }
  }

  pp::Profile profile_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::tuple<std::string, std::string, uint64_t>, MappingState> mappings_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::map<std::tuple<uint64_t, uint64_t, std::vector<std::pair<uint64_t, int64_t>>>, uint64_t>
      locations_;
};

bool Gzip(const std::string& in, std::string* out) {
  z_stream z = {};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return false;
  }
  out->resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace

bool FormatPprof(const Report& report, std::string* out, std::string* error) {
  ProfileBuilder b;
  int64_t first = INT64_MAX, last = INT64_MIN;
  uint32_t interval_ms = 0;
  for (const HangRecord& h : report.hangs) {
    b.AddHang(h);
    first = std::min(first, h.start_unix_ms);
    last = std::max(last, h.start_unix_ms + static_cast<int64_t>(h.duration_ms));
    if (interval_ms == 0) interval_ms = h.sample_interval_ms;
  }
  pp::Profile& p = b.Finish();
  const std::pair<const char*, const char*> types[] = {
      {"samples", "count"}, {"wall", "nanoseconds"}, {"cpu", "nanoseconds"}};
  for (const auto& [type, unit] : types) {
    pp::ValueType* vt = p.add_sample_type();
    vt->set_type(b.Str(type));
    vt->set_unit(b.Str(unit));
  }
  p.mutable_period_type()->set_type(b.Str("wall"));
  p.mutable_period_type()->set_unit(b.Str("nanoseconds"));
  p.set_period(static_cast<int64_t>(interval_ms) * 1'000'000);
  p.set_default_sample_type(b.Str("wall"));
  if (!report.hangs.empty()) {
    p.set_time_nanos(first * 1'000'000);
    p.set_duration_nanos((last - first) * 1'000'000);
  }
  p.add_comment(
      b.Str("hangwatch: " + std::to_string(report.hangs.size()) + " main-thread hang(s)"));
  std::string raw;
  if (!p.SerializeToString(&raw)) {
    *error = "cannot encode the profile";
    return false;
  }
  if (raw.size() > UINT32_MAX || !Gzip(raw, out)) {
    *error = "cannot gzip the profile";
    return false;
  }
  return true;
}

}  // namespace hangwatch::tools
