#include "hang/open_hang/open_hang_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "hang/files/kept_files.h"
#include "hang/files/regular_file.h"
#include "hang/model/runtime_frame_word.h"
#include "hang/open_hang/open_hang_cause.h"
#include "hang/open_hang/open_hang_context.h"
#include "hang/open_hang/open_hang_layout.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {
namespace {

using namespace open_hang_layout;  // NOLINT(build/namespaces): the layout is this file's subject

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
  f->size_ = samples_offset + f->limits_.max_timeline * record + CauseBytes(version) +
             PythonNamesBytes(version) + ContextBytes(version);
  if (version >= 6) f->python_names_ = std::make_unique<OpenHangPythonNamesWriter>();

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
  static_assert(sizeof h.thread_role == sizeof s.thread_role &&
                sizeof h.thread_name == sizeof s.thread_name);
  std::memcpy(h.thread_role, s.thread_role, sizeof h.thread_role);
  std::memcpy(h.thread_name, s.thread_name, sizeof h.thread_name);
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
  h.pause_ns = s.pause_ns;
  h.python_names_bytes = python_names_ != nullptr ? python_names_->bytes() : 0;
  // Overwrite the older copy; the newer one stays intact if this write is torn.
  StoreLiveHeader(h, version_, map_ + kLiveHeaderOffset[generation_ % 2]);
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
      const uint8_t tag = hang.stacks().tags(id)[i];
      if (methods) p[methods_at + i] = tag;  // a method, or Python
      if (IsRuntimeTag(tag)) NotePythonName(frames[i]);
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

void OpenHangFile::NotePythonName(uintptr_t word) {
  // Appended beyond what the live header counts; counted by the next live header written.
  // name_ keeps its strings' capacity: after the first few names, no allocation here.
  if (python_names_ == nullptr || python_names_source_ == nullptr ||
      !python_names_source_->Find(word, &name_)) {
    return;
  }
  python_names_->Note(word, name_, map_ + PythonNamesOffset());
}

size_t OpenHangFile::PythonNamesOffset() const {
  return kModulesOffset + kMaxModules * sizeof(ModuleRecord) +
         limits_.max_timeline * SampleRecordSize(limits_.max_frames, version_) +
         CauseBytes(version_);
}

size_t OpenHangFile::ContextOffset() const {
  return PythonNamesOffset() + PythonNamesBytes(version_);
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
  if (python_names_ != nullptr) python_names_->Reset();  // a reader reads no further than bytes()
  for (size_t i = 0; i < hang.timeline_size(); ++i) {
    WriteSample(i, hang);
  }
  open_ = true;
  WriteCause(hang, /*force=*/true);
  WriteContext(hang, /*force=*/true);
  WriteLiveHeader(hang, true);
}

void OpenHangFile::WriteCause(const HangData& hang, bool force) {
  if (version_ < 3 || (!force && hang.cause_version() == cause_version_written_)) return;
  cause_version_written_ = hang.cause_version();
  const size_t end = kModulesOffset + kMaxModules * sizeof(ModuleRecord) +
                     limits_.max_timeline * SampleRecordSize(limits_.max_frames, version_);
  WriteOpenHangCause(map_ + end, ++cause_generation_, hang.cause);
}

void OpenHangFile::WriteContext(const HangData& hang, bool force) {
  if (version_ < 8 ||
      (!force && std::memcmp(&hang.context, &context_written_, sizeof(HangContext)) == 0)) {
    return;
  }
  std::memcpy(&context_written_, &hang.context, sizeof(HangContext));  // padding too
  WriteOpenHangContext(map_ + ContextOffset(), ++context_generation_, hang.context, version_);
}

void OpenHangFile::AddLastSample(const HangData& hang) {
  if (!open_) {
    return;
  }
  if (hang.timeline_size() > records_written_) {
    WriteSample(hang.timeline_size() - 1, hang);
  }
  WriteCause(hang, /*force=*/false);
  WriteContext(hang, /*force=*/false);
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
  StoreLiveHeader(h, version_, map_ + kLiveHeaderOffset[generation_ % 2]);
}

size_t OpenHangFileSampleOffset(const HangLimits& limits, size_t index) {
  const size_t frames = std::min(limits.max_frames, kMaxFramesInFile);
  return kModulesOffset + kMaxModules * sizeof(ModuleRecord) + index * SampleRecordSize(frames);
}

size_t OpenHangFileLiveHeaderOffset(int copy) { return kLiveHeaderOffset[copy & 1]; }

size_t OpenHangFilePythonNamesOffset(const HangLimits& limits) {
  const size_t samples = std::min(std::max<size_t>(limits.max_timeline, 1), kMaxSamplesInFile);
  return OpenHangFileSampleOffset(limits, samples) + CauseBytes(kVersion);
}

size_t OpenHangFileContextOffset(const HangLimits& limits) {
  return OpenHangFilePythonNamesOffset(limits) + PythonNamesBytes(kVersion);
}

}  // namespace hangwatch::agent
