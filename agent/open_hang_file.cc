#include "agent/open_hang_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/kept_files.h"
#include "agent/materialize.h"
#include "agent/open_hang_cause.h"
#include "agent/regular_file.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {
namespace {

// 3: the cause region after the samples and each sample's cause kind; 2: frame and sample
// methods; 1: without them (all read).
constexpr uint32_t kVersion = 3;
constexpr uint32_t kEndianCheck = 0x01020304;
constexpr size_t kStaticHeaderOffset = 0;
constexpr size_t kLiveHeaderOffset[2] = {256, 512};
constexpr size_t kModulesOffset = 1024;
constexpr size_t kMaxModules = 256;
constexpr size_t kPathBytes = 256;
constexpr size_t kBuildIdBytes = 64;
constexpr size_t kRangesPerModule = 4;
constexpr size_t kMaxFramesInFile = 512;
constexpr size_t kMaxSamplesInFile = 1 << 16;
// Frames of all the unique stacks read back from a file (each becomes a Frame with its strings:
// about 0.5 kB).
constexpr size_t kMaxFramesRead = 1 << 15;

struct StaticHeader {
  char magic[8];
  uint32_t version;
  uint32_t endian_check;
  uint32_t max_frames;
  uint32_t max_samples;
  uint32_t max_modules;
  uint32_t reserved;
  uint64_t modules_offset;
  uint64_t samples_offset;
  uint64_t module_record_size;
  uint64_t sample_record_size;
  uint64_t file_size;
  uint64_t checksum;  // of the bytes above
};
static_assert(sizeof(StaticHeader) <= 256);

struct LiveHeader {
  uint64_t generation;
  uint32_t open;         // 1 while a hang is open
  uint32_t num_records;  // sample records written
  int64_t pid;
  int64_t tid;
  int64_t start_unix_ms;
  uint32_t threshold_ms;
  uint32_t sample_interval_ms;
  uint64_t elapsed_ms;  // time of the last sample
  uint64_t cpu_us;      // CPU since the pass was first seen, as of the last sample
  uint32_t samples;
  uint32_t failed_samples;
  uint32_t dropped_stacks;
  uint32_t num_modules;
  uint64_t modules_checksum;
  uint64_t checksum;  // of the bytes above
};
static_assert(sizeof(LiveHeader) <= 256);

struct ModuleRecord {
  char path[kPathBytes];
  char build_id[kBuildIdBytes];
  uint64_t load_bias;
  uint32_t num_ranges;
  uint32_t reserved;
  uint64_t lo[kRangesPerModule];
  uint64_t hi[kRangesPerModule];
};

// Followed by max_frames uint64 frames, max_frames FrameMethod bytes (padded to 8), then a
// uint64 checksum of everything before it.
struct SampleRecordHead {
  uint32_t t_ms;
  uint32_t cpu_us;
  uint8_t kind;  // 0 failed capture, 1 stack, 2 captured but stack table full
  char state;
  uint16_t num_frames;
  uint8_t method;  // SampleMethod
  uint8_t cause;   // CauseKind (version 3)
  uint8_t reserved[2];
  uint64_t leaf_key;
};

// Method bytes per sample record: none before version 2.
size_t MethodBytes(size_t max_frames, uint32_t version) {
  return version >= 2 ? (max_frames + 7) & ~size_t{7} : 0;
}

// A method byte read back from a file, kUnknown when out of range.
FrameMethod ToFrameMethod(uint8_t b) {
  return b <= static_cast<uint8_t>(FrameMethod::kFramePointerScan) ? static_cast<FrameMethod>(b)
                                                                   : FrameMethod::kUnknown;
}
SampleMethod ToSampleMethod(uint8_t b) {
  return b <= static_cast<uint8_t>(SampleMethod::kMach) ? static_cast<SampleMethod>(b)
                                                        : SampleMethod::kUnknown;
}

uint64_t Checksum(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

size_t SampleRecordSize(size_t max_frames, uint32_t version = kVersion) {
  return sizeof(SampleRecordHead) + max_frames * sizeof(uint64_t) +
         MethodBytes(max_frames, version) + sizeof(uint64_t);
}

void CopyString(char* dst, size_t cap, const std::string& s) {
  // Always NUL-terminated (and NUL-padded, so the checksummed bytes are deterministic).
  std::memset(dst, 0, cap);
  s.copy(dst, std::min(s.size(), cap - 1));
}

std::string ReadString(const char* src, size_t cap) { return std::string(src, strnlen(src, cap)); }

// A copy of the descriptor kept for `path` (kept_files.h) when the name still leads to that
// file or cannot be looked at any more (this process changed user); -1 otherwise.
int KeptOpenHangFile(const std::string& path) {
  const int kept = DupKeptFile(path.c_str());
  if (kept < 0) return -1;
  struct stat mine {
  }, by_name{};
  const bool name_ok = lstat(path.c_str(), &by_name) == 0;
  const bool out_of_reach = !name_ok && (errno == EACCES || errno == EPERM);
  if (out_of_reach || (name_ok && fstat(kept, &mine) == 0 && mine.st_dev == by_name.st_dev &&
                       mine.st_ino == by_name.st_ino)) {
    return kept;
  }
  close(kept);
  return -1;
}

}  // namespace

std::unique_ptr<OpenHangFile> OpenHangFile::Create(const std::string& path,
                                                   const HangLimits& limits, std::string* error) {
  return CreateForTest(path, limits, error, kVersion);
}

std::unique_ptr<OpenHangFile> OpenHangFile::CreateForTest(const std::string& path,
                                                          const HangLimits& limits,
                                                          std::string* error, uint32_t version) {
  std::unique_ptr<OpenHangFile> f(new OpenHangFile());
  f->path_ = path;
  f->version_ = version;
  f->limits_ = limits;
  f->limits_.max_frames = std::min(limits.max_frames, kMaxFramesInFile);
  f->limits_.max_timeline = std::min(std::max<size_t>(limits.max_timeline, 1), kMaxSamplesInFile);
  const size_t record = SampleRecordSize(f->limits_.max_frames, version);
  const size_t samples_offset = kModulesOffset + kMaxModules * sizeof(ModuleRecord);
  f->size_ =
      samples_offset + f->limits_.max_timeline * record + (version >= 3 ? OpenHangCauseBytes() : 0);

  // Created for this process before it changed user (kept_files.h): used as long as the name
  // is still that file, or out of reach; a name removed or replaced since is not.
  if (const int kept = KeptOpenHangFile(path); kept >= 0) {
    f->fd_ = kept;
    return f->Initialize(error) ? std::move(f) : nullptr;
  }
  // A file already at `path` (a previous run's, read by now) is never written into: it may be
  // a hard link to someone else's file. Unless another process holds it, it is removed and a
  // new one created (O_EXCL); symbolic links, FIFOs and devices are refused (regular_file.h).
  std::string why;
  const int old = OpenRegularFile(path, O_RDONLY, 0, &why);
  if (old < 0 && errno != ENOENT) {
    *error = "cannot open " + path + ": " + why;
    return nullptr;
  }
  if (old >= 0) {
    const bool in_use = flock(old, LOCK_EX | LOCK_NB) != 0;
    if (in_use || (unlink(path.c_str()) != 0 && errno != ENOENT)) {
      *error = in_use ? path + " is in use by another process"
                      : "cannot replace " + path + ": " + std::strerror(errno);
      close(old);
      return nullptr;
    }
  }
  f->fd_ = OpenRegularFile(path, O_RDWR | O_CREAT | O_EXCL, 0600, &why);
  if (old >= 0) {
    close(old);  // its lock kept another process off the name until the new file existed
  }
  if (f->fd_ < 0) {
    *error = "cannot create " + path + ": " + why;
    return nullptr;
  }
  return f->Initialize(error) ? std::move(f) : nullptr;
}

bool OpenHangFile::Initialize(std::string* error) {
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    *error = path_ + " is in use by another process";
    return false;
  }
  // Sized and mapped once here, so that a file system that cannot hold it fails Start(); then
  // emptied again: the file holds nothing until a hang opens (Open() maps it, Clear() empties
  // it), so a process that ends outside a hang, however it ends, leaves an empty file at most.
  if (!Map(error)) return false;
  Unmap();
  return true;
}

bool OpenHangFile::Map(std::string* error) {
  if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    *error = "cannot size " + path_ + ": " + std::strerror(errno);
    return false;
  }
  void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED) {
    *error = "cannot map " + path_ + ": " + std::strerror(errno);
    if (ftruncate(fd_, 0) != 0) {
      // Left sized, holding zeros: a reader finds no valid header and ignores it.
    }
    return false;
  }
  map_ = static_cast<unsigned char*>(m);
  std::memset(map_, 0, 1024);

  StaticHeader h{};
  std::memcpy(h.magic, kOpenHangFileMagic.data(), kOpenHangFileMagic.size());
  h.version = version_;
  h.endian_check = kEndianCheck;
  h.max_frames = static_cast<uint32_t>(limits_.max_frames);
  h.max_samples = static_cast<uint32_t>(limits_.max_timeline);
  h.max_modules = kMaxModules;
  h.modules_offset = kModulesOffset;
  h.samples_offset = kModulesOffset + kMaxModules * sizeof(ModuleRecord);
  h.module_record_size = sizeof(ModuleRecord);
  h.sample_record_size = SampleRecordSize(limits_.max_frames, version_);
  h.file_size = size_;
  h.checksum = Checksum(&h, offsetof(StaticHeader, checksum));
  std::memcpy(map_ + kStaticHeaderOffset, &h, sizeof(h));
  generation_ = 0;          // the file starts anew
  WriteClosedLiveHeader();  // a valid "no open hang" state from the start
  return true;
}

void OpenHangFile::Unmap() {
  if (map_ == nullptr) return;
  munmap(map_, size_);
  map_ = nullptr;
  // Nothing in it any more: 0 bytes (ReadOpenHangFile: no open hang). A failure leaves the
  // closed state just written, which says the same.
  if (ftruncate(fd_, 0) != 0) {
  }
}

OpenHangFile::~OpenHangFile() {
  if (fd_ >= 0) {
    Clear();
    // Holding no open hang, the file says nothing: it goes (a prefork server's exited workers
    // would otherwise leave one each). Only while the name is still this file.
    struct stat mine {
    }, by_name{};
    if (fstat(fd_, &mine) == 0 && lstat(path_.c_str(), &by_name) == 0 &&
        mine.st_dev == by_name.st_dev && mine.st_ino == by_name.st_ino) {
      unlink(path_.c_str());
    }
  }
  if (fd_ >= 0) {
    close(fd_);  // releases the lock
  }
}

void OpenHangFile::ReleaseAfterFork() {
  if (map_ != nullptr) {
    munmap(map_, size_);
    map_ = nullptr;
  }
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  open_ = false;
}

void OpenHangFile::WriteLiveHeader(const HangData& hang, bool open) {
  LiveHeader h{};
  h.generation = ++generation_;
  h.open = open ? 1 : 0;
  h.num_records = records_written_;
  const HangSummary& s = hang.summary;
  h.pid = s.pid;
  h.tid = s.tid;
  h.start_unix_ms = s.start_unix_ms;
  h.threshold_ms = s.threshold_ms;
  h.sample_interval_ms = s.sample_interval_ms;
  h.elapsed_ms = hang.timeline_size() > 0 ? hang.timeline()[hang.timeline_size() - 1].t_ms : 0;
  h.cpu_us = cpu_us_;
  h.samples = s.samples;
  h.failed_samples = s.failed_samples;
  h.dropped_stacks = s.dropped_stacks;
  h.num_modules = num_modules_;
  h.modules_checksum = modules_checksum_;
  h.checksum = Checksum(&h, offsetof(LiveHeader, checksum));
  // Overwrite the older copy; the newer one stays intact if this write is torn.
  std::memcpy(map_ + kLiveHeaderOffset[generation_ % 2], &h, sizeof(h));
}

void OpenHangFile::WriteSample(size_t index, const HangData& hang) {
  if (index >= limits_.max_timeline || index >= hang.timeline_size()) {
    return;
  }
  const size_t record = SampleRecordSize(limits_.max_frames, version_);
  unsigned char* p = map_ + kModulesOffset + kMaxModules * sizeof(ModuleRecord) + index * record;
  const TimelineEntry& t = hang.timeline()[index];
  SampleRecordHead head{};
  head.t_ms = t.t_ms;
  head.cpu_us = t.cpu_us;
  head.state = t.state;
  if (version_ >= 2) head.method = static_cast<uint8_t>(t.method);
  if (version_ >= 3) head.cause = static_cast<uint8_t>(t.cause);
  const size_t frames_at = sizeof(SampleRecordHead);
  const size_t methods_at = frames_at + limits_.max_frames * sizeof(uint64_t);
  const bool methods = version_ >= 2;
  std::memset(p + frames_at, 0,
              limits_.max_frames * sizeof(uint64_t) + MethodBytes(limits_.max_frames, version_));
  if (t.stack >= 0) {
    const auto id = static_cast<uint32_t>(t.stack);
    const auto& e = hang.stacks().entry(id);
    head.kind = 1;
    head.leaf_key = e.leaf_key;
    head.num_frames = static_cast<uint16_t>(std::min<size_t>(e.num_frames, limits_.max_frames));
    const uintptr_t* frames = hang.stacks().frames(id);
    for (size_t i = 0; i < head.num_frames; ++i) {
      const uint64_t v = frames[i];
      std::memcpy(p + frames_at + i * sizeof(uint64_t), &v, sizeof(v));
      if (methods) p[methods_at + i] = static_cast<unsigned char>(hang.frame_method(id, i));
    }
  } else {
    head.kind = 0;
  }
  std::memcpy(p, &head, sizeof(head));
  const size_t body = record - sizeof(uint64_t);
  const uint64_t sum = Checksum(p, body);
  std::memcpy(p + body, &sum, sizeof(sum));
  cpu_us_ += t.cpu_us;
  records_written_ = static_cast<uint32_t>(index + 1);
}

void OpenHangFile::Open(const HangData& hang) {
  std::string error;
  if (map_ == nullptr && !Map(&error)) {
    return;  // not mirrored (the file system no longer takes it); reported live all the same
  }
  // Module table: every module loaded now (the hang's frames can only be in those).
  auto map = symbols::CurrentModuleMap();
  auto* records = reinterpret_cast<ModuleRecord*>(map_ + kModulesOffset);
  num_modules_ = 0;
  for (const auto& m : map->modules()) {
    if (num_modules_ == kMaxModules) {
      break;
    }
    ModuleRecord r{};
    CopyString(r.path, sizeof(r.path), m.path);
    CopyString(r.build_id, sizeof(r.build_id), m.build_id);
    r.load_bias = m.load_bias;
    r.num_ranges = static_cast<uint32_t>(std::min(m.exec_ranges.size(), kRangesPerModule));
    for (size_t i = 0; i < r.num_ranges; ++i) {
      r.lo[i] = m.exec_ranges[i].lo;
      r.hi[i] = m.exec_ranges[i].hi;
    }
    std::memcpy(&records[num_modules_++], &r, sizeof(r));
  }
  modules_checksum_ = Checksum(records, num_modules_ * sizeof(ModuleRecord));
  records_written_ = 0;
  cpu_us_ = 0;
  for (size_t i = 0; i < hang.timeline_size(); ++i) {
    WriteSample(i, hang);
  }
  open_ = true;
  WriteCause(hang, /*force=*/true);
  WriteLiveHeader(hang, true);
}

void OpenHangFile::WriteCause(const HangData& hang, bool force) {
  if (version_ < 3 || (!force && hang.cause_version() == cause_version_written_)) return;
  cause_version_written_ = hang.cause_version();
  const size_t end = kModulesOffset + kMaxModules * sizeof(ModuleRecord) +
                     limits_.max_timeline * SampleRecordSize(limits_.max_frames, version_);
  WriteOpenHangCause(map_ + end, ++cause_generation_, hang.cause);
}

void OpenHangFile::AddLastSample(const HangData& hang) {
  if (!open_) {
    return;
  }
  if (hang.timeline_size() > records_written_) {
    WriteSample(hang.timeline_size() - 1, hang);
  }
  WriteCause(hang, /*force=*/false);
  WriteLiveHeader(hang, true);
}

void OpenHangFile::Clear() {
  open_ = false;
  records_written_ = 0;
  if (map_ == nullptr) return;
  // Closed first, then emptied: a process that dies in between leaves a file that says "no
  // open hang" either way.
  WriteClosedLiveHeader();
  Unmap();
}

void OpenHangFile::WriteClosedLiveHeader() {
  LiveHeader h{};
  h.generation = ++generation_;
  h.checksum = Checksum(&h, offsetof(LiveHeader, checksum));
  std::memcpy(map_ + kLiveHeaderOffset[generation_ % 2], &h, sizeof(h));
}

size_t OpenHangFileSampleOffset(const HangLimits& limits, size_t index) {
  const size_t frames = std::min(limits.max_frames, kMaxFramesInFile);
  return kModulesOffset + kMaxModules * sizeof(ModuleRecord) + index * SampleRecordSize(frames);
}

size_t OpenHangFileLiveHeaderOffset(int copy) { return kLiveHeaderOffset[copy & 1]; }

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
                          (sh.version >= 3 ? OpenHangCauseBytes() : 0) ||
      file_size < sh.file_size) {
    return "inconsistent layout";
  }
  return "";
}

// The newest of the two live header copies in `head` whose checksum holds; false when both
// are torn.
bool NewestLiveHeader(const unsigned char* head, LiveHeader* live) {
  bool have_live = false;
  for (size_t off : kLiveHeaderOffset) {
    LiveHeader h;
    std::memcpy(&h, head + off, sizeof(h));
    if (h.checksum != Checksum(&h, offsetof(LiveHeader, checksum))) {
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
      methods[k] = sh.version >= 2 ? ToFrameMethod(method_bytes[k]) : FrameMethod::kUnknown;
    }
    const bool ok = head.kind != 0;
    hang->AddSample(head.t_ms, head.kind == 1 ? frames.data() : nullptr, head.kind == 1 ? n : 0,
                    static_cast<uintptr_t>(head.leaf_key), uint64_t{head.cpu_us} * 1000, head.state,
                    ok, methods.data(), ToSampleMethod(sh.version >= 2 ? head.method : 0));
    if (sh.version >= 3 && head.cause <= static_cast<uint8_t>(CauseKind::kOther)) {
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
  s.fatal = true;
}

// The record of the hang, its addresses resolved against the modules read from the file.
HangRecord MaterializeFromFile(const HangData& hang, std::vector<symbols::Module> modules) {
  MaterializeOptions options;
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
  if (!NewestLiveHeader(head, &live)) {
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
  *out = MaterializeFromFile(hang, std::move(modules));
  return OpenHangReadStatus::kFound;
}

}  // namespace hangwatch::agent
