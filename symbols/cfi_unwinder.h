// CfiUnwinder: unwinds a captured thread from its registers and a copy of its stack, with
// DWARF call-frame information (.eh_frame / .debug_frame) read by elfutils' libdwfl from the
// modules on disk, and the frame-pointer chain where the CFI says it is equivalent.
//
// Runs on the watchdog (or any normal) thread, after the capture returned: never in a signal
// handler and never while the target is paused. Every stack word it reads comes from the
// MemoryViews it is given (the copy), never from the live stack, which has moved on.
//
// The hybrid walk, frame by frame:
//   - frame 0 -> 1 always uses CFI at the interrupted pc, so a leaf, or a function interrupted
//     in its prologue before it pushed its frame record, still shows its caller;
//   - at a return address whose CFI says "CFA = frame pointer + 16" (a function built with
//     frame pointers, at that pc), the cheap frame-pointer step is taken (classification cached
//     per pc);
//   - anywhere else (no frame pointer, e.g. libc or -fomit-frame-pointer code) a libdwfl CFI
//     run takes over until it reaches a frame-pointer frame again;
//   - where there is no CFI at all (JIT code, a module unloaded since the capture), the
//     frame-pointer step is tried with validation and the walk stops when it fails.
// Each frame records the method that produced it.
//
// Modules: this process's (refreshed when symbols::CurrentModuleMap() changes) or another
// process's (/proc/PID/maps, refreshed on request). The Dwfl and its per-module CFI are kept
// across unwinds.
#ifndef HANGWATCH_SYMBOLS_CFI_UNWINDER_H_
#define HANGWATCH_SYMBOLS_CFI_UNWINDER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hangwatch/hang_record.h"
#include "unwind/memory_view.h"
#include "unwind/registers.h"

namespace hangwatch::symbols {

// Which method produced a frame: the public vocabulary of the reports (include/hangwatch/
// hang_record.h), so that frames go from the unwinder to a HangRecord unchanged. The unwinder
// never produces kUnknown. kFramePointerScan: the frame pointer was not known (a /proc
// capture) where the CFI needed it, and a frame record was found by scanning the stack. A
// record a callee left behind (returning into this very function) gives the frame pointer for
// certain; failing that, the first plausible record is a heuristic (stale records among a
// frame's locals can be taken for the real one). Later frames follow that record's chain.
using ::hangwatch::FrameMethod;
using ::hangwatch::FrameMethodName;

// Where the walk starts.
struct UnwindStart {
  unwind::Registers regs;
  // False when the frame pointer is not known (e.g. a thread read through /proc, which gives
  // only pc and sp): CFI then recovers it from where a callee saved it.
  bool fp_known = true;
};

struct UnwindResult {
  size_t num_frames = 0;
  bool truncated = false;  // max_frames reached
  size_t cfi_frames = 0;   // how many frames came from CFI
  size_t fp_frames = 0;    // ... and from frame records
};

class CfiUnwinder {
 public:
  enum class Mode : uint8_t {
    kHybrid,   // as described above
    kCfiOnly,  // libdwfl for every frame (benchmarks, cross-checks)
  };

  // This process's modules. Errors: libdwfl cannot read the module list or attach.
  static absl::StatusOr<std::unique_ptr<CfiUnwinder>> ForSelf();
  // Another process's modules, read from /proc/PID/maps (its ELF files are read from disk).
  // `maps_text`, when not empty, is that file's text as the caller just read it (it is then
  // not read again; Refresh reads the process again).
  static absl::StatusOr<std::unique_ptr<CfiUnwinder>> ForProcess(pid_t pid,
                                                                 std::string_view maps_text = {});

  ~CfiUnwinder();
  CfiUnwinder(const CfiUnwinder&) = delete;
  CfiUnwinder& operator=(const CfiUnwinder&) = delete;

  // Re-reads the module list: for this process only when CurrentModuleMap() changed (dlopen,
  // dlclose), unless `force`; for another process always. Drops cached classifications. Call it
  // off the capture path (it allocates and reads files), e.g. before each unwind. On an error
  // the unwinder has no modules until a later Refresh succeeds (Unwind then returns nothing).
  absl::Status Refresh(bool force);

  // Unwinds from `start`, reading stack words from `memory` (the first view holding an address
  // wins). Writes up to max_frames pcs (frames[0] = start.regs.pc, then return addresses,
  // innermost first) and, when `methods` is not null, the method of each. Stops cleanly, with
  // what it has, at the outermost frame, missing CFI, unreadable memory or a failed validation.
  UnwindResult Unwind(const UnwindStart& start, std::span<const unwind::MemoryView> memory,
                      uintptr_t* frames, FrameMethod* methods, size_t max_frames,
                      Mode mode = Mode::kHybrid);

  struct State;  // libdwfl state (cfi_unwinder.cc)

 private:
  explicit CfiUnwinder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_CFI_UNWINDER_H_
