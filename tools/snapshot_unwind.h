// Unwinding the stack copies of a ptrace snapshot (unwind/ptrace_capture.h), after the target
// runs again: the frame-pointer walk (unwind/frame_walker.h) and, where it falls short, DWARF
// call-frame information read by elfutils' libdwfl from the target's modules on disk, with
// every memory read answered from the copies (never from the live, running process).
#ifndef HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_
#define HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

enum class SnapshotUnwindMethod : uint8_t { kNone, kFramePointers, kCfi };
const char* SnapshotUnwindMethodName(SnapshotUnwindMethod m);  // "none", "fp", "cfi"

struct UnwoundStack {
  std::vector<uint64_t> frames;  // frames[0] = pc; then return addresses, innermost first
  SnapshotUnwindMethod method = SnapshotUnwindMethod::kNone;
  bool truncated = false;  // max_frames reached
  size_t fp_frames = 0;    // what the frame-pointer walk alone found
  size_t cfi_frames = 0;   // what CFI alone found (0 when unavailable or failed)
};

class SnapshotUnwinder {
 public:
  // `snapshot` must outlive the unwinder. CFI is set up lazily, once, from /proc/PID/maps.
  SnapshotUnwinder(const unwind::PtraceSnapshot& snapshot, size_t max_frames, bool use_cfi);
  ~SnapshotUnwinder();
  SnapshotUnwinder(const SnapshotUnwinder&) = delete;
  SnapshotUnwinder& operator=(const SnapshotUnwinder&) = delete;

  // Both walks; keeps the longer (CFI on ties: it also sees callers of frameless functions,
  // which the frame-pointer chain skips without knowing it).
  UnwoundStack Unwind(const unwind::PtraceThread& thread);

  // Why CFI is unavailable ("" when it is).
  const std::string& cfi_error() const { return cfi_error_; }

  struct Cfi;  // libdwfl state (snapshot_unwind.cc)

 private:
  const unwind::PtraceSnapshot& snapshot_;
  size_t max_frames_;
  bool use_cfi_;
  bool cfi_ready_ = false;
  std::string cfi_error_;
  std::unique_ptr<Cfi> cfi_;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_
