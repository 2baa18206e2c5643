#include "symbols/cfi_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "symbols/module_map.h"

namespace hangwatch::symbols {

namespace {

#if defined(__x86_64__)
constexpr unsigned kDwarfFp = 6;  // rbp
constexpr unsigned kDwarfSp = 7;  // rsp
constexpr int kFpBreg = DW_OP_breg6;
#elif defined(__aarch64__)
constexpr unsigned kDwarfFp = 29;  // x29
constexpr unsigned kDwarfSp = 31;  // sp
constexpr unsigned kDwarfLr = 30;  // x30
constexpr int kFpBreg = DW_OP_breg29;
#else
#error "CfiUnwinder supports x86_64 and aarch64"
#endif

// What the CFI says about the frame at one pc, cached per pc.
enum class PcClass : uint8_t {
  kFramePointer,  // CFA = fp + 16: the frame-pointer step is exact here
  kOther,         // CFI exists and describes another frame layout
  kNoCfi,         // no module or no CFI for this pc
};

// The cache of classifications is dropped when it grows past this (pcs of unloaded modules
// and rare paths must not accumulate forever).
constexpr size_t kMaxCachedPcs = 1 << 16;

struct Regs {
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  uintptr_t fp = 0;
  uintptr_t lr = 0;
  bool fp_known = false;
  bool lr_known = false;
};

}  // namespace

struct CfiUnwinder::State {
  Dwfl* dwfl = nullptr;
  pid_t pid = 0;
  bool self = false;
  std::shared_ptr<const ModuleMap> module_map;  // self: the map the Dwfl was built from
  std::string maps_text;  // another process: its /proc/PID/maps, for the first build only
  std::unordered_map<uintptr_t, PcClass> classes;

  // ---- per libdwfl run ----
  std::span<const unwind::MemoryView> memory;
  Regs start;
  uintptr_t* frames = nullptr;
  FrameMethod* methods = nullptr;
  size_t max_frames = 0;
  size_t n = 0;
  bool hybrid = true;
  bool skipped_initial = false;
  bool handed_back = false;   // the run stopped at a frame-pointer frame: `next` holds its regs
  uintptr_t prev_lookup = 0;  // where the frame the run steps out of is looked up
  Regs last;                  // the last frame the run produced
  bool last_valid = false;
  Regs next;
  size_t cfi_frames = 0;
  size_t dwfl_fp_frames = 0;

  ~State() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  bool Read(uintptr_t addr, uintptr_t* out) const {
    for (const unwind::MemoryView& v : memory) {
      if (v.ReadWord(addr, out)) return true;
    }
    return false;
  }

  PcClass Classify(uintptr_t lookup_pc) {
    auto it = classes.find(lookup_pc);
    if (it != classes.end()) return it->second;
    if (classes.size() >= kMaxCachedPcs) classes.clear();
    PcClass c = PcClass::kNoCfi;
    Dwfl_Module* mod = dwfl_addrmodule(dwfl, lookup_pc);
    if (mod != nullptr) {
      Dwarf_Addr bias = 0;
      Dwarf_CFI* cfi = dwfl_module_eh_cfi(mod, &bias);
      Dwarf_Frame* frame = nullptr;
      if (cfi == nullptr || dwarf_cfi_addrframe(cfi, lookup_pc - bias, &frame) != 0) {
        frame = nullptr;
        cfi = dwfl_module_dwarf_cfi(mod, &bias);
        if (cfi != nullptr && dwarf_cfi_addrframe(cfi, lookup_pc - bias, &frame) != 0) {
          frame = nullptr;
        }
      }
      if (frame != nullptr) {
        Dwarf_Op* ops = nullptr;
        size_t nops = 0;
        c = PcClass::kOther;
        constexpr int64_t kRecord = 2 * sizeof(uintptr_t);
        if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 &&
            ((ops[0].atom == kFpBreg && static_cast<int64_t>(ops[0].number) == kRecord) ||
             (ops[0].atom == DW_OP_bregx && ops[0].number == kDwarfFp &&
              static_cast<int64_t>(ops[0].number2) == kRecord))) {
          c = PcClass::kFramePointer;
        }
        free(frame);
      }
    }
    classes.emplace(lookup_pc, c);
    return c;
  }

  bool IsExecutable(uintptr_t pc) { return dwfl_addrmodule(dwfl, pc) != nullptr; }

  // [lo, hi) of the function holding `lookup_pc`, from the module's symbol table.
  bool FunctionRange(uintptr_t lookup_pc, uintptr_t* lo, uintptr_t* hi) {
    Dwfl_Module* mod = dwfl_addrmodule(dwfl, lookup_pc);
    if (mod == nullptr) return false;
    GElf_Off offset = 0;
    GElf_Sym sym{};
    const char* name =
        dwfl_module_addrinfo(mod, lookup_pc, &offset, &sym, nullptr, nullptr, nullptr);
    if (name == nullptr || sym.st_size == 0 || offset >= sym.st_size) return false;
    *lo = lookup_pc - offset;
    *hi = *lo + sym.st_size;
    return true;
  }

  // One frame-pointer step from `r` (whose frame record `r.fp` points at). Validated: the
  // record is in the copy, aligned, at or above sp; the saved fp grows; the return address is
  // in a known module.
  bool FpStep(const Regs& r, Regs* caller) {
    if (!r.fp_known || r.fp < r.sp || r.fp % sizeof(uintptr_t) != 0) return false;
    uintptr_t saved_fp = 0;
    uintptr_t ra = 0;
    if (!Read(r.fp, &saved_fp) || !Read(r.fp + sizeof(uintptr_t), &ra)) return false;
    ra = StripPointerAuth(ra);
    if (ra == 0 || !IsExecutable(ra)) return false;
    caller->pc = ra;
    caller->sp = r.fp + 2 * sizeof(uintptr_t);
    caller->fp = saved_fp;
    // An outermost frame has fp == 0; a saved fp that does not grow ends the chain at the
    // caller (which is still reported).
    caller->fp_known = saved_fp > r.fp;
    caller->lr_known = false;
    return true;
  }

  static uintptr_t StripPointerAuth(uintptr_t addr) {
#if defined(__aarch64__)
    // User-space addresses fit in 48 bits; higher bits carry a PAC signature.
    return addr & ((uintptr_t{1} << 48) - 1);
#else
    return addr;
#endif
  }

  // A frame whose CFI says "CFA = fp + 16" but whose fp is unknown (a thread read through
  // /proc: only pc and sp are known, and the syscall wrappers below it never saved fp). Its
  // frame record lies above its sp, past its locals.
  //
  // First, the certain answer: a record left among those locals by a function this frame
  // called (a call that returned, or the frame-pointer callee now asleep) has its return
  // address inside this frame's function, and the fp it saved is this frame's own fp. Stale
  // records of deeper calls can sit below it (they are why the first plausible record is not
  // taken blindly); only a recursive function defeats this (its own record also returns into
  // it, and one level of the recursion is then skipped).
  //
  // Otherwise, the first slot that holds a plausible record (return address in a module, at a
  // pc with CFI; saved fp a higher, in-copy address whose return-address slot is plausible
  // too) is taken. The saved fp found there is not required to climb further: the outermost
  // frame-pointer frame (main) saved whatever its frameless caller left in the register. A
  // record ending the chain (saved fp 0) is taken only when no chained one is found: a stale
  // zero beside a code address among the locals would otherwise cut the stack short. Bounded
  // to kScanBytes.
  static constexpr size_t kScanBytes = 4096;
  bool ScanForRecord(uintptr_t sp, uintptr_t frame_pc, uintptr_t* record) {
    const uintptr_t start = (sp + sizeof(uintptr_t) - 1) & ~(uintptr_t{sizeof(uintptr_t)} - 1);
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    if (FunctionRange(frame_pc - 1, &lo, &hi)) {
      for (uintptr_t at = start; at < start + kScanBytes; at += sizeof(uintptr_t)) {
        uintptr_t saved = 0;
        uintptr_t ra = 0;
        if (!Read(at, &saved) || !Read(at + sizeof(uintptr_t), &ra)) break;
        ra = StripPointerAuth(ra);
        if (ra <= lo || ra > hi || saved <= at || saved % sizeof(uintptr_t) != 0) continue;
        uintptr_t saved2 = 0;
        uintptr_t ra2 = 0;
        if (Read(saved, &saved2) && Read(saved + sizeof(uintptr_t), &ra2) && PlausibleReturn(ra2)) {
          *record = saved;
          return true;
        }
      }
    }
    uintptr_t terminal = 0;  // first plausible record with saved fp 0
    for (uintptr_t at = start; at < start + kScanBytes; at += sizeof(uintptr_t)) {
      uintptr_t saved = 0;
      uintptr_t ra = 0;
      if (!Read(at, &saved) || !Read(at + sizeof(uintptr_t), &ra)) break;
      if (!PlausibleReturn(ra)) continue;
      if (saved == 0) {
        if (terminal == 0) terminal = at;
        continue;
      }
      uintptr_t saved2 = 0;
      uintptr_t ra2 = 0;
      if (saved <= at || saved % sizeof(uintptr_t) != 0 || !Read(saved, &saved2) ||
          !Read(saved + sizeof(uintptr_t), &ra2) || !PlausibleReturn(ra2)) {
        continue;
      }
      *record = at;
      return true;
    }
    if (terminal == 0) return false;
    *record = terminal;
    return true;
  }
  bool PlausibleReturn(uintptr_t ra) {
    ra = StripPointerAuth(ra);
    return ra > 1 && Classify(ra - 1) != PcClass::kNoCfi;
  }

  void Push(uintptr_t pc, FrameMethod m) {
    frames[n] = pc;
    if (methods != nullptr) methods[n] = m;
    ++n;
  }

  // ---- libdwfl callbacks ----
  static bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    uintptr_t w = 0;
    if (!static_cast<State*>(arg)->Read(addr, &w)) return false;
    *result = w;
    return true;
  }
  static pid_t NextThread(Dwfl*, void*, void** thread_argp) {
    *thread_argp = nullptr;
    return 0;
  }
  static bool GetThread(Dwfl*, pid_t, void* arg, void** thread_argp) {
    *thread_argp = arg;
    return true;
  }
  static bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
    const Regs& r = static_cast<State*>(arg)->start;
    Dwarf_Word sp = r.sp;
    if (!dwfl_thread_state_registers(thread, kDwarfSp, 1, &sp)) return false;
    if (r.fp_known) {
      Dwarf_Word fp = r.fp;
      if (!dwfl_thread_state_registers(thread, kDwarfFp, 1, &fp)) return false;
    }
#if defined(__aarch64__)
    if (r.lr_known) {
      Dwarf_Word lr = r.lr;
      if (!dwfl_thread_state_registers(thread, kDwarfLr, 1, &lr)) return false;
    }
#endif
    dwfl_thread_state_register_pc(thread, r.pc);
    return true;
  }
  static int Frame(Dwfl_Frame* frame, void* arg) {
    auto* s = static_cast<State*>(arg);
    if (!s->skipped_initial) {  // the first frame is the start state itself
      s->skipped_initial = true;
      return DWARF_CB_OK;
    }
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
    if (s->n >= s->max_frames) return DWARF_CB_ABORT;
    // Where the frame stepped out of has no CFI, libdwfl itself fell back to its frame record:
    // say so.
    if (s->Classify(s->prev_lookup) == PcClass::kNoCfi) {
      s->Push(pc, FrameMethod::kFramePointer);
      ++s->dwfl_fp_frames;
    } else {
      s->Push(pc, FrameMethod::kCfi);
      ++s->cfi_frames;
    }
    s->prev_lookup = activation ? pc : pc - 1;
    if (s->hybrid) {
      Regs& r = s->last;
      r = Regs{};
      s->last_valid = true;
      r.pc = pc;
      Dwarf_Word v = 0;
      // libdwfl does not always keep the caller's sp (it is the callee's CFA); the sp of the
      // frame stepped out of is a valid lower bound for the frame-pointer checks.
      r.sp = dwfl_frame_reg(frame, kDwarfSp, &v) == 0 ? v : s->start.sp;
      if (dwfl_frame_reg(frame, kDwarfFp, &v) == 0) {
        r.fp = v;
        r.fp_known = true;
      }
      // Hand back to the cheap walk where the CFI says this frame is a frame-pointer frame.
      if (r.fp_known && s->Classify(activation ? pc : pc - 1) == PcClass::kFramePointer) {
        s->next = r;
        s->handed_back = true;
        return DWARF_CB_ABORT;
      }
    }
    return DWARF_CB_OK;
  }
};

namespace {

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    CfiUnwinder::State::NextThread,
    CfiUnwinder::State::GetThread,
    CfiUnwinder::State::MemoryRead,
    CfiUnwinder::State::SetInitialRegisters,
    nullptr,
    nullptr,
};

// No separate debug files: .eh_frame (and .debug_frame in the file itself) is what unwinding
// needs, and a monitor must not go looking through /usr/lib/debug or the network.
int NoDebuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                char**) {
  return -1;
}

const Dwfl_Callbacks kCallbacks = {dwfl_linux_proc_find_elf, NoDebuginfo, nullptr, nullptr};

// The modules of /proc/PID/maps whose text the caller already read: what
// dwfl_linux_proc_report reports, without reading maps and auxv again. The vDSO (which the
// maps text alone does not identify to libdwfl) is reported under the name that makes
// dwfl_linux_proc_find_elf read its image from the process's memory.
int ReportMapsText(Dwfl* dwfl, pid_t pid, std::string_view maps) {
  FILE* f = fmemopen(const_cast<char*>(maps.data()), maps.size(), "r");
  if (f == nullptr) return errno;
  int err = dwfl_linux_proc_maps_report(dwfl, f);
  std::fclose(f);
  if (err != 0) return err;
  constexpr std::string_view kVdso = "[vdso]";
  for (size_t at = 0; at < maps.size();) {
    size_t eol = maps.find('\n', at);
    if (eol == std::string_view::npos) eol = maps.size();
    std::string_view line = maps.substr(at, eol - at);
    at = eol + 1;
    if (line.size() < kVdso.size() || line.substr(line.size() - kVdso.size()) != kVdso) continue;
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(std::string(line).c_str(), "%llx-%llx", &lo, &hi) != 2 || hi <= lo) break;
    const std::string name = "[vdso: " + std::to_string(pid) + "]";
    if (dwfl_report_module(dwfl, name.c_str(), lo, hi) == nullptr) return -1;
    break;
  }
  return 0;
}

absl::Status BuildDwfl(CfiUnwinder::State* s) {
  if (s->dwfl != nullptr) {
    dwfl_end(s->dwfl);
    s->dwfl = nullptr;
  }
  s->classes.clear();
  Dwfl* dwfl = dwfl_begin(&kCallbacks);
  if (dwfl == nullptr) return absl::InternalError(dwfl_errmsg(-1));
  dwfl_report_begin(dwfl);
  // The caller's maps text serves the first build only; a refresh reads the process again.
  int err = s->maps_text.empty() ? dwfl_linux_proc_report(dwfl, s->pid)
                                 : ReportMapsText(dwfl, s->pid, s->maps_text);
  s->maps_text.clear();
  if (dwfl_report_end(dwfl, nullptr, nullptr) != 0 || err != 0) {
    absl::Status status = err > 0 ? absl::Status(absl::ErrnoToStatusCode(err), std::strerror(err))
                                  : absl::UnavailableError(dwfl_errmsg(-1));
    dwfl_end(dwfl);
    return status;
  }
  if (!dwfl_attach_state(dwfl, nullptr, s->pid, &kThreadCallbacks, s)) {
    absl::Status status = absl::UnavailableError(dwfl_errmsg(-1));
    dwfl_end(dwfl);
    return status;
  }
  s->dwfl = dwfl;
  return absl::OkStatus();
}

}  // namespace

CfiUnwinder::CfiUnwinder(std::unique_ptr<State> state) : state_(std::move(state)) {}
CfiUnwinder::~CfiUnwinder() = default;

absl::StatusOr<std::unique_ptr<CfiUnwinder>> CfiUnwinder::ForSelf() {
  auto s = std::make_unique<State>();
  s->pid = getpid();
  s->self = true;
  s->module_map = CurrentModuleMap();
  if (absl::Status status = BuildDwfl(s.get()); !status.ok()) return status;
  return std::unique_ptr<CfiUnwinder>(new CfiUnwinder(std::move(s)));
}

absl::StatusOr<std::unique_ptr<CfiUnwinder>> CfiUnwinder::ForProcess(pid_t pid,
                                                                     std::string_view maps_text) {
  auto s = std::make_unique<State>();
  s->pid = pid;
  s->maps_text = maps_text;
  if (absl::Status status = BuildDwfl(s.get()); !status.ok()) return status;
  return std::unique_ptr<CfiUnwinder>(new CfiUnwinder(std::move(s)));
}

absl::Status CfiUnwinder::Refresh(bool force) {
  if (state_->self) {
    std::shared_ptr<const ModuleMap> now = CurrentModuleMap();
    if (!force && now == state_->module_map && state_->dwfl != nullptr) return absl::OkStatus();
    state_->module_map = std::move(now);
  }
  return BuildDwfl(state_.get());
}

UnwindResult CfiUnwinder::Unwind(const UnwindStart& start,
                                 std::span<const unwind::MemoryView> memory, uintptr_t* frames,
                                 FrameMethod* methods, size_t max_frames, Mode mode) {
  UnwindResult result;
  State& s = *state_;
  if (max_frames == 0 || start.regs.pc == 0 || s.dwfl == nullptr) return result;
  s.memory = memory;
  s.frames = frames;
  s.methods = methods;
  s.max_frames = max_frames;
  s.n = 0;
  s.cfi_frames = 0;
  s.dwfl_fp_frames = 0;
  s.hybrid = mode == Mode::kHybrid;
  size_t fp_frames = 0;

  Regs r;
  r.pc = start.regs.pc;
  r.sp = start.regs.sp;
  r.fp = start.regs.fp;
  r.fp_known = start.fp_known;
  r.lr = start.regs.lr;
  r.lr_known = start.regs.lr != 0;
  s.Push(r.pc, FrameMethod::kPc);

  bool first = true;     // r is the interrupted frame (its pc is not a return address)
  bool scanned = false;  // r.fp was found by ScanForRecord
  while (s.n < max_frames) {
    // The cheap step, where the CFI at this return address says it is exact (or where there is
    // no CFI: the frame record is all there is).
    if (!first && s.hybrid && r.fp_known && s.Classify(r.pc - 1) != PcClass::kOther) {
      Regs caller;
      if (!s.FpStep(r, &caller)) break;
      s.Push(caller.pc, scanned ? FrameMethod::kFramePointerScan : FrameMethod::kFramePointer);
      scanned = false;
      ++fp_frames;
      r = caller;
      continue;
    }
    // CFI from r, until the outermost frame, a failure, or (hybrid) a frame-pointer frame.
    s.start = r;
    s.skipped_initial = false;
    s.handed_back = false;
    s.prev_lookup = first ? r.pc : r.pc - 1;
    s.last_valid = false;
    const size_t before = s.n;
    dwfl_getthread_frames(s.dwfl, s.pid, State::Frame, &s);
    if (s.handed_back) {
      r = s.next;
      first = false;
      continue;
    }
    if (s.n > before) {
      // CFI went as far as it could. If it stopped at a frame-pointer frame only because fp
      // was never known, find that frame's record and go on from there.
      uintptr_t record = 0;
      if (s.hybrid && s.last_valid && !s.last.fp_known && s.n < max_frames &&
          s.Classify(s.last.pc - 1) == PcClass::kFramePointer &&
          s.ScanForRecord(s.last.sp, s.last.pc, &record)) {
        r = s.last;
        r.fp = record;
        r.fp_known = true;
        first = false;
        scanned = true;
        continue;
      }
      break;
    }
    // CFI made no progress from r. Frame 0 of arm64 without CFI: the link register. Code
    // without CFI (JIT, unloaded module): a validated frame-pointer step, unless the CFI said
    // this frame is laid out otherwise.
#if defined(__aarch64__)
    if (first && r.lr_known && s.IsExecutable(s.StripPointerAuth(r.lr))) {
      s.Push(s.StripPointerAuth(r.lr), FrameMethod::kLinkRegister);
      r.pc = s.StripPointerAuth(r.lr);
      r.lr_known = false;
      first = false;
      continue;  // the frame record (if any) still belongs to this caller
    }
#endif
    if (!s.hybrid || s.Classify(first ? r.pc : r.pc - 1) == PcClass::kOther) break;
    Regs caller;
    if (!s.FpStep(r, &caller)) break;
    s.Push(caller.pc, FrameMethod::kFramePointer);
    ++fp_frames;
    r = caller;
    first = false;
  }
  result.num_frames = s.n;
  result.truncated = s.n >= max_frames;
  result.cfi_frames = s.cfi_frames;
  result.fp_frames = fp_frames + s.dwfl_fp_frames;
  s.memory = {};
  s.frames = nullptr;
  s.methods = nullptr;
  return result;
}

}  // namespace hangwatch::symbols
