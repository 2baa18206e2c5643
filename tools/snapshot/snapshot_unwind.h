// Unwinding the stack copies of a ptrace snapshot (unwind/ptrace_capture.h), after the target
// runs again: symbols::CfiUnwinder's hybrid walk (frame-pointer steps where the CFI says they are
// equivalent, DWARF CFI elsewhere: libc and other code without frame pointers, leaves, prologues)
// over the copies, for the target's modules; the plain frame-pointer walk
// (unwind/frame_walker.h) when CFI is unavailable or finds less.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_
#define HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "symbols/cfi_unwinder.h"
#include "unwind/memory_view.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

enum class SnapshotUnwindMethod : uint8_t { kNone, kFramePointers, kHybrid };
const char* SnapshotUnwindMethodName(SnapshotUnwindMethod m);  // "none", "fp", "hybrid"

struct UnwoundStack {
  std::vector<uint64_t> frames;  // frames[0] = pc; then return addresses, innermost first
  // Per frame: "pc", "fp", "cfi" or "lr" (symbols::FrameMethodName).
  std::vector<const char*> methods;
  SnapshotUnwindMethod method = SnapshotUnwindMethod::kNone;
  bool truncated = false;  // max_frames reached
};

class SnapshotUnwinder {
 public:
  // `snapshot` must outlive the unwinder. CFI is set up lazily, once, from `maps_text` (the
  // target's /proc/PID/maps as the caller read it; read again from /proc when empty).
  SnapshotUnwinder(const unwind::PtraceSnapshot& snapshot, size_t max_frames, bool use_cfi,
                   std::string maps_text = {});
  ~SnapshotUnwinder();
  SnapshotUnwinder(const SnapshotUnwinder&) = delete;
  SnapshotUnwinder& operator=(const SnapshotUnwinder&) = delete;

  // Sets up CFI now (reads the target's modules) instead of at the first Unwind.
  void Prepare();

  // The hybrid CFI walk; the frame-pointer walk when it finds more (or CFI is unavailable).
  UnwoundStack Unwind(const unwind::PtraceThread& thread);

  // Why CFI is unavailable ("" when it is).
  const std::string& cfi_error() const { return cfi_error_; }

 private:
  const unwind::PtraceSnapshot& snapshot_;
  size_t max_frames_;
  bool use_cfi_;
  bool cfi_ready_ = false;
  std::string cfi_error_;
  std::string maps_text_;
  std::unique_ptr<symbols::CfiUnwinder> cfi_;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_UNWIND_H_
