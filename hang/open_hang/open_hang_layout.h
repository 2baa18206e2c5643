// The open-hang file's layout on disk (hang/open_hang/open_hang_file.h), shared by its writer
// (open_hang_file.cc) and its reader (open_hang_file_read.cc). Internal to agent/.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_LAYOUT_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_LAYOUT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "hang/open_hang/open_hang_cause.h"
#include "hang/open_hang/open_hang_context.h"
#include "hang/open_hang/open_hang_python_names.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent::open_hang_layout {

// 9: the context region's HangContext grows by the run of samples being counted for its source
// (open_hang_context.h; hang/model/source_choice.h: the source of the longest run, not of the
// last sample); 8: the context region at the end, after the Python names (open_hang_context.h: the
// hang's labels, trigger, source and callback, input and perceived verdict); 7: which thread hung
// (its role and name) in the live header; 6: the Python names region at the end
// (open_hang_python_names.h) and the bytes of it in use in the live header; 5: a frame's method
// byte may be kPythonFrameTag (or kPythonPartialTag), its word a Python frame
// (runtime_frame_word.h; a reader of format 4 would take it for a native address, so the version
// says it); 4: the main thread's pause for captures in the live header; 3: the cause region after
// the samples and each sample's cause kind; 2: frame and sample methods; 1: without them (all
// read).
constexpr uint32_t kVersion = 9;
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
  // (version 4) hangwatch's own cost so far: the main thread's pauses for captures, summed
  // (HangSummary::pause_ns). Versions 1 to 3 have their checksum here.
  uint64_t pause_ns;
  // (version 6) bytes of the Python names region filled with whole entries when this state was
  // written (open_hang_python_names.h). Versions 4 and 5 have their checksum here.
  uint64_t python_names_bytes;
  // (version 7) the hung thread's role ("main", "render", ...) and kernel name, NUL-padded
  // (HangSummary::thread_role, thread_name). Version 6 has its checksum here.
  char thread_role[32];
  char thread_name[16];
  uint64_t checksum;  // of the bytes above
};
static_assert(sizeof(LiveHeader) <= 256);
static_assert(offsetof(LiveHeader, pause_ns) == 88 &&
                  offsetof(LiveHeader, python_names_bytes) == 96 &&
                  offsetof(LiveHeader, thread_role) == 104 &&
                  offsetof(LiveHeader, checksum) == 152 && sizeof(LiveHeader) == 160,
              "no padding: the checksum covers every byte before it");

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
inline size_t MethodBytes(size_t max_frames, uint32_t version) {
  return version >= 2 ? (max_frames + 7) & ~size_t{7} : 0;
}

// A method byte read back from a file, kUnknown when out of range. (The Python frame tag is
// read as a tag, not a method: ReadSamples.)
inline FrameMethod ToFrameMethod(uint8_t b) {
  return b <= static_cast<uint8_t>(FrameMethod::kFramePointerScan) ? static_cast<FrameMethod>(b)
                                                                   : FrameMethod::kUnknown;
}
inline SampleMethod ToSampleMethod(uint8_t b) {
  return b <= static_cast<uint8_t>(SampleMethod::kMach) ? static_cast<SampleMethod>(b)
                                                        : SampleMethod::kUnknown;
}

inline uint64_t Checksum(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// Where a live header's checksum sits in format `version`: after the thread (7), after
// python_names_bytes (6), after pause_ns (4 and 5), in its place before (the older formats end
// with modules_checksum).
inline size_t LiveChecksumOffset(uint32_t version) {
  return version >= 7   ? offsetof(LiveHeader, checksum)
         : version >= 6 ? offsetof(LiveHeader, thread_role)
         : version >= 4 ? offsetof(LiveHeader, python_names_bytes)
                        : offsetof(LiveHeader, pause_ns);
}

// Writes `h` into a live header slot as format `version` lays it out, with its checksum.
inline void StoreLiveHeader(const LiveHeader& h, uint32_t version, unsigned char* slot) {
  const size_t at = LiveChecksumOffset(version);
  const uint64_t sum = Checksum(&h, at);
  std::memcpy(slot, &h, at);
  std::memcpy(slot + at, &sum, sizeof(sum));
}

// The live header in `slot` as format `version` lays it out (pause_ns 0 before version 4,
// python_names_bytes 0 before version 6);
// false when its checksum fails.
inline bool LoadLiveHeader(const unsigned char* slot, uint32_t version, LiveHeader* out) {
  const size_t at = LiveChecksumOffset(version);
  LiveHeader h{};
  std::memcpy(&h, slot, at);
  std::memcpy(&h.checksum, slot + at, sizeof(h.checksum));
  if (h.checksum != Checksum(&h, at)) return false;
  *out = h;
  return true;
}

inline size_t SampleRecordSize(size_t max_frames, uint32_t version = kVersion) {
  return sizeof(SampleRecordHead) + max_frames * sizeof(uint64_t) +
         MethodBytes(max_frames, version) + sizeof(uint64_t);
}

// Bytes after the sample records in format `version`: the cause region (3), then the Python
// names region (6), then the context region (8; larger from 9).
inline size_t CauseBytes(uint32_t version) { return version >= 3 ? OpenHangCauseBytes() : 0; }
inline size_t PythonNamesBytes(uint32_t version) {
  return version >= 6 ? kOpenHangPythonNamesBytes : 0;
}
inline size_t ContextBytes(uint32_t version) {
  return version >= 8 ? OpenHangContextBytes(version) : 0;
}

inline void CopyString(char* dst, size_t cap, const std::string& s) {
  // Always NUL-terminated (and NUL-padded, so the checksummed bytes are deterministic).
  std::memset(dst, 0, cap);
  s.copy(dst, std::min(s.size(), cap - 1));
}

inline std::string ReadString(const char* src, size_t cap) {
  return std::string(src, strnlen(src, cap));
}

}  // namespace hangwatch::agent::open_hang_layout

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_LAYOUT_H_
