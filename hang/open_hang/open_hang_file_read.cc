#include "hang/open_hang/open_hang_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "hang/files/kept_files.h"
#include "hang/files/regular_file.h"
#include "hang/model/materialize.h"
#include "hang/model/runtime_frame_word.h"
#include "hang/open_hang/open_hang_cause.h"
#include "hang/open_hang/open_hang_context.h"
#include "hang/open_hang/open_hang_layout.h"
#include "hang/open_hang/open_hang_python_names.h"
#include "report/cause_kinds.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {

using namespace open_hang_layout;  // NOLINT(build/namespaces): the layout is this file's subject

namespace {

// Reads exactly n bytes at `offset`; false on a short read or an error.
bool ReadAt(int fd, void* dst, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r =
        pread(fd, static_cast<char*>(dst) + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

// Closes the descriptor on every way out of ReadOpenHangFile.
struct FdCloser {
  int fd;
  ~FdCloser() { close(fd); }
};

// Why the static header cannot be used with a file of `file_size` bytes; "" when it can.
std::string StaticHeaderProblem(const StaticHeader& sh, uint64_t file_size) {
  if (std::memcmp(sh.magic, kOpenHangFileMagic.data(), kOpenHangFileMagic.size()) != 0) {
    return "not an open-hang file (bad magic)";
  }
  if (sh.checksum != Checksum(&sh, offsetof(StaticHeader, checksum))) {
    return "corrupt header (checksum mismatch)";
  }
  if (sh.version < 1 || sh.version > kVersion) {
    return "unsupported version " + std::to_string(sh.version);
  }
  if (sh.endian_check != kEndianCheck) {
    return "written on a machine of other byte order";
  }
  if (sh.max_frames == 0 || sh.max_frames > kMaxFramesInFile || sh.max_samples == 0 ||
      sh.max_samples > kMaxSamplesInFile || sh.max_modules > kMaxModules ||
      sh.module_record_size != sizeof(ModuleRecord) ||
      sh.sample_record_size != SampleRecordSize(sh.max_frames, sh.version) ||
      sh.modules_offset != kModulesOffset ||
      sh.samples_offset != kModulesOffset + sh.max_modules * sizeof(ModuleRecord) ||
      sh.file_size != sh.samples_offset + sh.max_samples * sh.sample_record_size +
                          CauseBytes(sh.version) + PythonNamesBytes(sh.version) +
                          ContextBytes(sh.version) ||
      file_size < sh.file_size) {
    return "inconsistent layout";
  }
  return "";
}

// The newest of the two live header copies in `head` (of format `version`) whose checksum
// holds; false when both are torn.
bool NewestLiveHeader(const unsigned char* head, uint32_t version, LiveHeader* live) {
  bool have_live = false;
  for (size_t off : kLiveHeaderOffset) {
    LiveHeader h;
    if (!LoadLiveHeader(head + off, version, &h)) {
      continue;
    }
    if (!have_live || h.generation > live->generation) {
      *live = h;
      have_live = true;
    }
  }
  return have_live;
}

// The module table `live` counts; false when it cannot be read whole or its checksum fails.
bool ReadModules(int fd, const StaticHeader& sh, const LiveHeader& live,
                 std::vector<symbols::Module>* modules) {
  std::vector<unsigned char> module_bytes(live.num_modules * sizeof(ModuleRecord));
  const unsigned char* mod_base = module_bytes.data();
  if (!ReadAt(fd, module_bytes.data(), module_bytes.size(), sh.modules_offset) ||
      live.modules_checksum != Checksum(mod_base, module_bytes.size())) {
    return false;
  }
  for (uint32_t i = 0; i < live.num_modules; ++i) {
    ModuleRecord r;
    std::memcpy(&r, mod_base + i * sizeof(ModuleRecord), sizeof(r));
    symbols::Module m;
    m.path = ReadString(r.path, sizeof(r.path));
    m.build_id = ReadString(r.build_id, sizeof(r.build_id));
    m.load_bias = r.load_bias;
    for (uint32_t k = 0; k < std::min<uint32_t>(r.num_ranges, kRangesPerModule); ++k) {
      if (r.lo[k] < r.hi[k]) {
        m.exec_ranges.push_back({r.lo[k], r.hi[k]});
      }
    }
    modules->push_back(std::move(m));
  }
  return true;
}

// The hang's limits when rebuilt from the file: kept as the agent keeps them, a bounded number
// of unique stacks (kMaxFramesRead frames in all), the others counted as dropped; whatever the
// counts, the record built stays within a few tens of MB.
HangLimits ReadBackLimits(const StaticHeader& sh, const LiveHeader& live) {
  HangLimits limits;
  limits.max_frames = sh.max_frames;
  limits.max_timeline = std::max<size_t>(live.num_records, 1);
  limits.max_unique_stacks =
      std::clamp<size_t>(kMaxFramesRead / sh.max_frames, 1, std::max<size_t>(live.num_records, 1));
  return limits;
}

// Adds the samples to `hang`, until the first torn one. Returns their CPU time (microseconds).
uint64_t ReadSamples(int fd, const StaticHeader& sh, const LiveHeader& live, HangData* hang) {
  std::vector<unsigned char> record(sh.sample_record_size);
  std::vector<uintptr_t> frames(sh.max_frames);
  std::vector<FrameMethod> methods(sh.max_frames);
  uint64_t cpu_us = 0;
  for (uint32_t i = 0; i < live.num_records; ++i) {
    const unsigned char* p = record.data();
    if (!ReadAt(fd, record.data(), record.size(),
                sh.samples_offset + uint64_t{i} * sh.sample_record_size)) {
      break;
    }
    const size_t body = sh.sample_record_size - sizeof(uint64_t);
    uint64_t sum;
    std::memcpy(&sum, p + body, sizeof(sum));
    if (sum != Checksum(p, body)) {
      break;
    }
    SampleRecordHead head;
    std::memcpy(&head, p, sizeof(head));
    const size_t n = std::min<size_t>(head.num_frames, sh.max_frames);
    const unsigned char* method_bytes = p + sizeof(head) + sh.max_frames * sizeof(uint64_t);
    for (size_t k = 0; k < n; ++k) {
      uint64_t v;
      std::memcpy(&v, p + sizeof(head) + k * sizeof(uint64_t), sizeof(v));
      frames[k] = static_cast<uintptr_t>(v);
      // Format 5: a Python frame keeps its tag (materialized as an unnamed Python frame), and
      // so does the outermost one of a chain read in part (the stack is partial).
      const bool python = sh.version >= 5 && IsRuntimeTag(method_bytes[k]);
      methods[k] = python            ? static_cast<FrameMethod>(method_bytes[k])
                   : sh.version >= 2 ? ToFrameMethod(method_bytes[k])
                                     : FrameMethod::kUnknown;
    }
    const bool ok = head.kind != 0;
    hang->AddSample(head.t_ms, head.kind == 1 ? frames.data() : nullptr, head.kind == 1 ? n : 0,
                    static_cast<uintptr_t>(head.leaf_key), uint64_t{head.cpu_us} * 1000, head.state,
                    ok, methods.data(), ToSampleMethod(sh.version >= 2 ? head.method : 0));
    if (sh.version >= 3 && report::IsKnownCauseKind(head.cause)) {
      WaitCause kind_only;  // the sample's kind; the hang's cause is read whole afterwards
      kind_only.kind = static_cast<CauseKind>(head.cause);
      hang->NoteCause(kind_only);
    }
    cpu_us += head.cpu_us;
  }
  return cpu_us;
}

// The summary of a fatal hang from the live header and the samples read (cpu_us: their CPU).
void SetFatalSummary(const LiveHeader& live, uint64_t cpu_us, HangData* hang) {
  HangSummary& s = hang->summary;
  s.pid = live.pid;
  s.tid = live.tid;
  // Zero before version 7 (a file of an agent that watched only the main thread): empty.
  std::memcpy(s.thread_role, live.thread_role, sizeof s.thread_role - 1);
  std::memcpy(s.thread_name, live.thread_name, sizeof s.thread_name - 1);
  s.start_unix_ms = live.start_unix_ms;
  s.threshold_ms = live.threshold_ms;
  s.sample_interval_ms = live.sample_interval_ms;
  s.duration_ns = live.elapsed_ms * 1'000'000;
  // CPU from the recorded samples' deltas: the first sample's delta covers the pass from its
  // first sighting, so the sum spans [0, last sample].
  s.cpu_ns = std::min<uint64_t>(cpu_us * 1000, s.duration_ns);
  s.cpu_known = hang->timeline_size() > 0;
  s.samples = std::max(s.samples, live.samples);
  s.failed_samples = std::max(s.failed_samples, live.failed_samples);
  s.dropped_stacks = std::max(s.dropped_stacks, live.dropped_stacks);
  s.pause_ns = live.pause_ns;  // 0 in files of format 3 and older
  s.fatal = true;
}

// The names of the Python frames (format 6): the entries the live header counts, in the region
// after the cause. A region that cannot be read leaves every Python frame unnamed.
void ReadPythonNames(int fd, const StaticHeader& sh, const LiveHeader& live,
                     OpenHangPythonNamesTable* names) {
  const uint64_t bytes = std::min<uint64_t>(live.python_names_bytes, kOpenHangPythonNamesBytes);
  if (sh.version < 6 || bytes == 0) return;
  std::vector<unsigned char> region(bytes);
  const uint64_t offset =
      sh.samples_offset + uint64_t{sh.max_samples} * sh.sample_record_size + CauseBytes(sh.version);
  if (ReadAt(fd, region.data(), region.size(), offset)) names->Parse(region.data(), bytes);
}

// The record of the hang, its addresses resolved against the modules read from the file.
HangRecord MaterializeFromFile(const HangData& hang, std::vector<symbols::Module> modules,
                               const RuntimeNames* python_names) {
  MaterializeOptions options;
  options.runtime_names = python_names;
  options.modules = std::make_shared<const symbols::ModuleMap>(std::move(modules));
  options.addresses_are_local = false;
  options.process = "";
  for (const auto& m : options.modules->modules()) {
    if (!m.path.empty()) {
      options.process = m.path;  // the first module is the main program
      break;
    }
  }
  return Materialize(hang, options);
}

}  // namespace

OpenHangReadStatus ReadOpenHangFile(const std::string& path, HangRecord* out, std::string* error) {
  auto invalid = [&](const std::string& why) {
    *error = path + ": " + why;
    return OpenHangReadStatus::kInvalid;
  };
  // Never a FIFO or a device (opening a device may do something; reading a FIFO blocks).
  struct stat st {};
  int fd = -1;
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return OpenHangReadStatus::kNoOpenHang;
    }
    // Out of reach since this process changed user: the file kept for it, if any (it was
    // created for this process before the change: a regular file).
    fd = err == EACCES || err == EPERM ? DupKeptFile(path.c_str()) : -1;
    if (fd < 0) {
      return invalid(std::string("cannot open: ") + std::strerror(err));
    }
  } else if (!S_ISREG(st.st_mode)) {
    return invalid("not a regular file");
  } else {
    fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  }
  if (fd < 0) {
    return invalid(std::string("cannot open: ") + std::strerror(errno));
  }
  FdCloser closer{fd};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalid("not a regular file");
  }
  // Read piece by piece, only what the newest state uses: memory follows what the file holds,
  // never what its counts claim.
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size == 0) {
    return OpenHangReadStatus::kNoOpenHang;
  }
  unsigned char head[kModulesOffset];
  if (file_size < kModulesOffset || !ReadAt(fd, head, sizeof head, 0)) {
    return invalid("not an open-hang file (too short)");
  }
  StaticHeader sh;
  std::memcpy(&sh, head, sizeof(sh));
  if (const std::string problem = StaticHeaderProblem(sh, file_size); !problem.empty()) {
    return invalid(problem);
  }
  LiveHeader live{};
  if (!NewestLiveHeader(head, sh.version, &live)) {
    return invalid("no valid state (both copies torn)");
  }
  if (live.open == 0) {
    return OpenHangReadStatus::kNoOpenHang;
  }
  if (live.num_modules > sh.max_modules || live.num_records > sh.max_samples) {
    return invalid("inconsistent state");
  }
  std::vector<symbols::Module> modules;
  if (!ReadModules(fd, sh, live, &modules)) {
    return invalid("corrupt module table");
  }
  HangData hang(ReadBackLimits(sh, live));
  const uint64_t cpu_us = ReadSamples(fd, sh, live, &hang);
  SetFatalSummary(live, cpu_us, &hang);
  hang.cause = WaitCause{};
  if (sh.version >= 3) {
    // A torn or foreign cause leaves the hang without one; the hang itself stands.
    ReadOpenHangCause(fd, sh.samples_offset + uint64_t{sh.max_samples} * sh.sample_record_size,
                      &hang.cause);
  }
  hang.context = HangContext{};
  if (sh.version >= 8) {
    // Likewise the context: torn or foreign, the hang stands without it.
    ReadOpenHangContext(fd,
                        sh.samples_offset + uint64_t{sh.max_samples} * sh.sample_record_size +
                            CauseBytes(sh.version) + PythonNamesBytes(sh.version),
                        sh.version, &hang.context);
  }
  OpenHangPythonNamesTable python_names;
  ReadPythonNames(fd, sh, live, &python_names);
  *out = MaterializeFromFile(hang, std::move(modules), &python_names);
  return OpenHangReadStatus::kFound;
}

}  // namespace hangwatch::agent
