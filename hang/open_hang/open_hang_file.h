// The open-hang file: the hang in progress and its samples, in a memory-mapped file updated at
// each sample, so that a hang that kills the process (SIGKILL from a system watchdog, a user
// giving up) is reported as fatal by the next start of the agent or by `hangwatch report`.
//
// Fixed binary layout (native byte order; read on the machine that wrote it):
//   [0, 256)      StaticHeader: magic "HWOPENHG", version, capacities, region offsets, checksum
//   [256, 512)    LiveHeader copy 0 (the hang's counters so far; from version 4 also the main
//                 thread's pause for captures, so a fatal hang keeps monitor_pause_us)
//   [512, 768)    LiveHeader copy 1
//   modules       max_modules ModuleRecords (path, build-id, load bias, executable ranges)
//   samples       max_samples SampleRecords (t, CPU delta, state, how the sample was taken,
//                 the cause kind, leaf key, frames and how each was found), each with its own
//                 checksum
//   cause         (version 3) two copies of the hang's WaitCause (open_hang_cause.h)
//   python names  (version 6) the function, file and line of each Python frame of the samples,
//                 as resolved on the watchdog (open_hang_python_names.h); the live header says
//                 how many of its bytes hold whole entries
//   context       (version 8) two copies of the hang's HangContext: its labels, trigger, source
//                 and callback, input and perceived verdict (open_hang_context.h); from version
//                 9 also the run of samples counted for the source's choice
// The file is empty (0 bytes) while no hang is open: Open() sizes and maps it, Clear() writes
// "no open hang", unmaps it and empties it again, so that a process that ends outside a hang
// (even killed) leaves nothing of size behind and nothing that reads as a hang.
// Writes never go in place over the newest valid state: a sample record is written, then the
// live header copy that is NOT the newest is rewritten with generation + 1 and its checksum.
// A reader takes the valid copy with the highest generation and stops at the first sample
// whose checksum fails, so a write torn by the process dying loses at most that sample.
// What a reader returns is one state: the live header copy it took (its samples and
// failed_samples counters) and the sample records that copy counts; a kill between a sample's
// record and the header counting it loses that sample whole, never mixes two states. As in a
// live hang, samples counts the captures with a stack and failed_samples the failed ones.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_FILE_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "hang/model/hang_data.h"
#include "hang/model/runtime_names.h"
#include "hang/open_hang/open_hang_python_names.h"
#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

// The first 8 bytes of every open-hang file: how readers of reports tell one from a JSON Lines
// file (tools/reader/input_file.h).
inline constexpr std::string_view kOpenHangFileMagic{"HWOPENHG", 8};

class OpenHangFile {
 public:
  // Creates `path` (mode 0600, O_EXCL), empty (checked once that it can be sized for `limits`
  // and mapped), and takes an exclusive lock on it
  // (another live process using the same path makes this fail). A file already there is
  // removed first, never written into, and its content is lost: read it first with
  // ReadOpenHangFile(). A symbolic link, FIFO or device at `path` is refused (regular_file.h).
  // A file created for this process under `path` before it changed user (the preload shim's,
  // hang/files/kept_files.h) is used through its kept descriptor while the name still leads to it
  // or is out of the new user's reach; removing it at the end then needs the name (left in place,
  // holding no hang, when it is out of reach: `hangwatch run` removes it).
  static std::unique_ptr<OpenHangFile> Create(const std::string& path, const HangLimits& limits,
                                              std::string* error);
  // Same, writing format `version` as an older agent did (1: without frame and sample
  // methods; 2: without the cause; 3: without the pause; 4: without Python frames; 5: without
  // their names; 6: without the thread; 7: without the context; 8: without the source's run): for
  // tests of reading what an older agent left behind.
  static std::unique_ptr<OpenHangFile> CreateForTest(const std::string& path,
                                                     const HangLimits& limits, std::string* error,
                                                     uint32_t version);
  ~OpenHangFile();  // closes any open hang, removes the file (it holds nothing), unlocks
  OpenHangFile(const OpenHangFile&) = delete;
  OpenHangFile& operator=(const OpenHangFile&) = delete;

  // Where the names of the hang's Python frames come from (agent/samplers/python_stacks.h; nullptr:
  // none). Each Python frame of a sample written is looked up there, on the watchdog thread, and
  // its name stored in the file with the sample (format 6). Must outlive this object's writes.
  void set_runtime_names(const RuntimeNames* names) { python_names_source_ = names; }

  // The hang crossed the threshold: sizes and maps the file, writes the module table and every
  // sample so far (nothing when the file can no longer be sized or mapped).
  void Open(const HangData& hang);
  // Writes the newest sample of `hang` (its last timeline entry) and the counters.
  void AddLastSample(const HangData& hang);
  // The hang closed (or was dropped): the file holds no open hang any more, and is empty.
  void Clear();
  // In a forked child: unmaps and closes the inherited descriptor without touching the file
  // (it is the parent's, and the lock must stay the parent's alone). The object is then inert.
  // System calls only: callable from a pthread_atfork child handler.
  void ReleaseAfterFork();

  const std::string& path() const { return path_; }

 private:
  OpenHangFile() = default;
  // Locks, sizes, maps fd_ and writes the headers (no open hang).
  bool Initialize(std::string* error);
  void WriteSample(size_t index, const HangData& hang);
  void WriteLiveHeader(const HangData& hang, bool open);
  void WriteClosedLiveHeader();
  // Sizes the file, maps it and writes its static header and a closed live header; false with
  // *error when it cannot.
  bool Map(std::string* error);
  // Unmaps and empties the file.
  void Unmap();
  // The hang's cause, into the cause region: at Open (force), then only when it changed.
  void WriteCause(const HangData& hang, bool force);
  // The hang's context, into the context region (format 8): at Open (force), then only when
  // its bytes differ from those written last (context_written_; no allocation).
  void WriteContext(const HangData& hang, bool force);
  // The name of the Python frame `word`, into the names region (once per word and name).
  void NotePythonName(uintptr_t word);
  size_t PythonNamesOffset() const;
  size_t ContextOffset() const;

  std::string path_;
  int fd_ = -1;
  unsigned char* map_ = nullptr;
  size_t size_ = 0;
  HangLimits limits_;
  uint64_t generation_ = 0;
  uint32_t num_modules_ = 0;
  uint64_t modules_checksum_ = 0;
  uint32_t records_written_ = 0;
  uint64_t cpu_us_ = 0;
  bool open_ = false;
  uint32_t version_ = 0;  // of the format written
  uint64_t cause_generation_ = 0;
  uint32_t cause_version_written_ = 0;
  uint64_t context_generation_ = 0;
  HangContext context_written_;  // the bytes of the context last written
  const RuntimeNames* python_names_source_ = nullptr;
  std::unique_ptr<OpenHangPythonNamesWriter> python_names_;  // format 6 on
  RuntimeFrameName name_;  // scratch of NotePythonName, its capacity kept
};

enum class OpenHangReadStatus { kNoOpenHang, kFound, kInvalid };

// Reads `path`. kFound: *out is the fatal hang (fatal = true, duration = time of the last
// sample, a lower bound), with frames resolved against the module table of the process that
// died and symbolized when the same build is loaded in this process, its Python frames named as
// the process named them (format 6; unnamed before, or past a torn entry), its context, input
// and perceived verdict as the last sample written saw them (format 8; none before, or when both
// copies are torn), its callback resolved as the frames are. kNoOpenHang: the file is
// valid but holds no open hang (or does not exist). kInvalid: *error says why (also for a FIFO
// or a device, which are never opened). Memory is bounded whatever the file's counts say: a
// sample is read at a time, and at most 32768 frames of unique stacks are kept (more stacks
// are counted in dropped_stacks).
OpenHangReadStatus ReadOpenHangFile(const std::string& path, HangRecord* out, std::string* error);

// Byte offsets of the layout, for tests that tear writes on purpose.
size_t OpenHangFileSampleOffset(const HangLimits& limits, size_t index);
size_t OpenHangFileLiveHeaderOffset(int copy);
size_t OpenHangFilePythonNamesOffset(const HangLimits& limits);
size_t OpenHangFileContextOffset(const HangLimits& limits);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_FILE_H_
