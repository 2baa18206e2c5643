#include "report/stack_identity.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "report/frame_classifier.h"

namespace hangwatch::report {
namespace {

// FNV-1a, 64 bits: stable across builds, platforms and runs (unlike std::hash).
class Fnv64 {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
  }
  void Str(std::string_view s) { Bytes(s.data(), s.size()); }
  void U64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    Bytes(b, sizeof(b));
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string Hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool IsPython(const Frame& f) { return IsInterpreted(f.language); }

// A frame named from a runtime's perf map: code outside every module, with a name (a Python
// frame has no module either, but is not machine code).
bool IsPerfMapNamed(const Frame& f) {
  return !IsPython(f) && f.module.empty() && !f.symbol.empty();
}

// Whether some frame of `stacks` was named from a runtime's perf map: the process writes one.
bool HasPerfMapNames(std::span<const Stack> stacks) {
  for (const Stack& s : stacks) {
    for (const Frame& f : s.frames) {
      if (IsPerfMapNamed(f)) return true;
    }
  }
  return false;
}

// ClassifyFrame, and code outside every module that the perf map of a process that has one does
// not name is the runtime's: V8 copies its builtins into anonymous memory (node
// --perf-basic-prof lists only the JavaScript functions), so such a frame is machinery and the
// JS function out from it is the culprit.
FrameKind Kind(const Frame& f, bool perf_map) {
  if (IsPython(f)) return ClassifyFrame(f);
  if (perf_map && f.module.empty() && f.symbol.empty()) return FrameKind::kRuntime;
  return ClassifyFrame(f.module, f.symbol);
}

// Each frame's kind in its stack: Kind, and in a stack with Python frames, the interpreter's
// native frames are its runtime (the Python frames name what its eval loop ran), and so is native
// code called from Python (a C extension's or a builtin's: _json's encoder, time.sleep) when the
// stack has an application or library Python frame: the Python function that called it is what
// a Python user names (and it is the same in every interpreter build).
std::vector<FrameKind> Kinds(const Stack& s, bool perf_map) {
  const size_t n = s.frames.size();
  std::vector<FrameKind> kinds(n);
  size_t outermost_python = n;
  bool python_candidate = false;
  for (size_t i = 0; i < n; ++i) {
    kinds[i] = Kind(s.frames[i], perf_map);
    // Java frames are the JVM's thread dump's, not what ran the native frames above them: those
    // (a JIT-compiled method named by the perf map, a JNI function) keep their kinds.
    if (IsPython(s.frames[i]) && s.frames[i].language != FrameLanguage::kJava) {
      outermost_python = i;
      python_candidate =
          python_candidate || kinds[i] == FrameKind::kApp || kinds[i] == FrameKind::kLibrary;
    }
  }
  if (outermost_python == n) return kinds;
  for (size_t i = 0; i < n; ++i) {
    const Frame& f = s.frames[i];
    if (IsPython(f) || kinds[i] != FrameKind::kApp) continue;
    if (IsRuntimeModule(f.module) || (python_candidate && i < outermost_python)) {
      kinds[i] = FrameKind::kRuntime;
    }
  }
  return kinds;
}

// An anonymous C function of the interpreter (CPython's time.sleep in a stripped python3):
// the script's own function, named by the runtime's perf map (python3.12 -X perf, node
// --perf-basic-prof), is the better name when there is one further out. That frame's index,
// or 0.
size_t JitNameFurtherOut(const Stack& s, size_t i) {
  const Frame& f = s.frames[i];
  if (!f.symbol.empty() || IsPython(f) || !IsRuntimeModule(f.module)) return 0;
  for (size_t j = i + 1; j < s.frames.size(); ++j) {
    if (IsPerfMapNamed(s.frames[j])) return j;
  }
  return 0;
}
bool GivesWayToJit(const Stack& s, size_t i) { return JitNameFurtherOut(s, i) != 0; }

// The kinds a culprit is taken from, best first: the application's, then (Python) third-party
// packages'.
constexpr FrameKind kCandidateKinds[] = {FrameKind::kApp, FrameKind::kLibrary};

// Index of the culprit frame in `s` (kinds: Kinds(s, perf_map)), or -1 when `s` has no frames:
// the innermost application frame, else the innermost library frame, else the innermost Python
// frame, else the innermost frame. `jit`: an anonymous frame of an interpreter gives way to a
// perf-map name further out (JitNameFurtherOut); the signature and fingerprint count from the
// frame itself.
int CulpritIndex(const Stack& s, const std::vector<FrameKind>& kinds, bool jit = true) {
  for (const FrameKind tier : kCandidateKinds) {
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (kinds[i] != tier) continue;
      if (const size_t j = jit ? JitNameFurtherOut(s, i) : 0; j != 0) return static_cast<int>(j);
      return static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (IsPython(s.frames[i])) return static_cast<int>(i);
  }
  return s.frames.empty() ? -1 : 0;
}

// Whether frame i (> 0) is part of a runtime's machinery for identity purposes: a kRuntime frame,
// or (past the culprit frame, `culprit`) an unnamed frame leading, through more unnamed
// frames of its module, to a kRuntime frame of the same module: call dispatch, which an interpreter
// may skip.
bool IsMachinery(const Stack& s, const std::vector<FrameKind>& kinds, size_t i, int culprit) {
  const Frame& f = s.frames[i];
  if (kinds[i] == FrameKind::kRuntime) return true;
  if (static_cast<int>(i) <= culprit || !f.symbol.empty() || f.module.empty()) return false;
  const size_t n = s.frames.size();
  size_t j = i + 1;
  while (j < n && s.frames[j].module == f.module && s.frames[j].symbol.empty()) ++j;
  return j < n && s.frames[j].module == f.module && kinds[j] == FrameKind::kRuntime;
}

Culprit CulpritAt(const Stack& s, int i, int stack) {
  Culprit c;
  if (i < 0) return c;
  const Frame& f = s.frames[static_cast<size_t>(i)];
  c.symbol = f.symbol;
  c.module = f.module;
  c.offset = f.offset;
  c.file = f.file;
  c.line = f.line;
  c.frame = i;
  c.stack = stack;
  c.language = f.language;
  c.line_is_definition = f.line_is_definition;
  return c;
}

// The candidate functions of a hang, for one tier of kinds: each frame's function identity
// (empty for frames of other kinds); each function's weight (the samples of the stacks that
// hold it) and the samples of the partial stacks that hold it; the functions in the order
// first met (stacks in order, innermost frame first).
struct CandidateIds {
  std::vector<std::vector<std::string>> ids;
  std::unordered_map<std::string, uint64_t> weight;
  std::unordered_map<std::string, uint64_t> partial_weight;
  std::vector<std::string> first_met;
};

CandidateIds CandidatesOf(std::span<const Stack> stacks,
                          const std::vector<std::vector<FrameKind>>& kinds, FrameKind tier,
                          const std::vector<bool>& partial) {
  CandidateIds c;
  c.ids.resize(stacks.size());
  for (size_t k = 0; k < stacks.size(); ++k) {
    const Stack& s = stacks[k];
    c.ids[k].resize(s.frames.size());
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (kinds[k][i] != tier || GivesWayToJit(s, i)) continue;
      const std::string& id = c.ids[k][i] = FunctionIdentity(s.frames[i], i == 0);
      if (c.weight.emplace(id, 0).second) c.first_met.push_back(id);
      if (!seen.insert(id).second) continue;
      c.weight[id] += s.count;
      if (partial[k]) c.partial_weight[id] += s.count;
    }
  }
  return c;
}

// Of the functions `shared` (in first-met order), the innermost: the one that is, in the samples
// holding both, inside each other one at least as often as outside it (its innermost frame
// nearer the leaf). Among several (functions never in one stack together), the one with the
// most samples, then the first met; when none is (recursion through each other), the one with
// the fewest samples. By position, not by weight: a caller missing from a sample whose chain
// was cut short has fewer samples than its callee, and is still outside it.
std::string Innermost(std::span<const Stack> stacks, const CandidateIds& c,
                      const std::vector<std::string>& shared) {
  const size_t n = shared.size();
  std::unordered_map<std::string, size_t> index;
  for (size_t j = 0; j < n; ++j) index.emplace(shared[j], j);
  // inside[j * n + l]: samples in which shared[j] is inside shared[l].
  std::vector<uint64_t> inside(n * n, 0);
  std::vector<size_t> at(n);
  constexpr size_t kAbsent = SIZE_MAX;
  for (size_t k = 0; k < stacks.size(); ++k) {
    std::fill(at.begin(), at.end(), kAbsent);
    for (size_t i = 0; i < c.ids[k].size(); ++i) {
      const auto it = c.ids[k][i].empty() ? index.end() : index.find(c.ids[k][i]);
      if (it != index.end() && at[it->second] == kAbsent) at[it->second] = i;
    }
    for (size_t j = 0; j < n; ++j) {
      for (size_t l = 0; l < n; ++l) {
        if (j != l && at[j] != kAbsent && at[l] != kAbsent && at[j] < at[l]) {
          inside[j * n + l] += stacks[k].count;
        }
      }
    }
  }
  size_t best = kAbsent;
  size_t lightest = 0;
  for (size_t j = 0; j < n; ++j) {
    const uint64_t w = c.weight.at(shared[j]);
    if (w < c.weight.at(shared[lightest])) lightest = j;
    bool innermost = true;
    for (size_t l = 0; l < n && innermost; ++l) {
      innermost = inside[j * n + l] >= inside[l * n + j];
    }
    if (innermost && (best == kAbsent || w > c.weight.at(shared[best]))) best = j;
  }
  return shared[best != kAbsent ? best : lightest];
}

}  // namespace

Culprit FindCulprit(const Stack& s) {
  const bool perf_map = HasPerfMapNames(std::span<const Stack>(&s, 1));
  return CulpritAt(s, CulpritIndex(s, Kinds(s, perf_map)), 0);
}

std::string PythonFunctionLabel(std::string_view qualname, std::string_view file, int line) {
  std::string out(qualname.empty() ? std::string_view("?") : qualname);
  if (file.empty()) return out;
  out += " (";
  out += ModuleFileName(file);
  if (line > 0) {
    out += ':';
    out += std::to_string(line);
  }
  out += ')';
  return out;
}

std::string FunctionIdentity(const Frame& f, bool leaf) {
  // Its name and file, never the code object's address (another in every run).
  if (IsPython(f)) return PythonFunctionLabel(f.symbol, f.file, 0);
  if (!f.symbol.empty()) return NormalizeForSignature(f.symbol);
  std::string id = "?@";
  id += ModuleFileName(f.module);
  if (f.module.empty()) return id;
  if (!f.build_id.empty()) {
    id += '#';
    id += f.build_id;
  }
  char buf[32];
  if (f.function_start != 0) {
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(f.function_start));
    id += buf;
  } else if (!leaf) {
    // A call site, the same in every run of the build (the interrupted instruction is not).
    std::snprintf(buf, sizeof buf, "@0x%llx", static_cast<unsigned long long>(f.offset));
    id += buf;
  }
  return id;
}

Culprit HangCulprit(std::span<const Stack> stacks) {
  if (stacks.empty()) return Culprit{};
  const bool perf_map = HasPerfMapNames(stacks);
  std::vector<std::vector<FrameKind>> kinds(stacks.size());
  bool any_whole = false;
  for (size_t k = 0; k < stacks.size(); ++k) {
    kinds[k] = Kinds(stacks[k], perf_map);
    any_whole = any_whole || (!stacks[k].frames.empty() && !stacks[k].partial);
  }
  // A partial stack (Stack::partial: its outer frames were not read) counts for the functions
  // it holds, and for no other: a function it lacks may be among the frames not read. (When no
  // stack is whole, they count as whole ones.)
  std::vector<bool> partial(stacks.size());
  uint64_t whole = 0;
  for (size_t k = 0; k < stacks.size(); ++k) {
    partial[k] = any_whole && stacks[k].partial;
    if (!partial[k] && !stacks[k].frames.empty()) whole += stacks[k].count;
  }
  // The application's functions first; a third-party package's (Python) only when no
  // application function is in half of the samples.
  for (const FrameKind tier : kCandidateKinds) {
    const CandidateIds c = CandidatesOf(stacks, kinds, tier, partial);
    // The functions present in at least three quarters of the samples, else half of them.
    // Three quarters first: a helper function that holds about half of the samples (a C
    // builtin's inner loop, between runs 40% and 60%) would otherwise be the culprit in some
    // runs only.
    std::vector<std::string> shared;
    for (const uint64_t quarters : {3u, 2u}) {
      for (const std::string& id : c.first_met) {
        const uint64_t w = c.weight.at(id);
        const auto p = c.partial_weight.find(id);
        const uint64_t known = whole + (p == c.partial_weight.end() ? 0 : p->second);
        if (w > 0 && 4 * w >= quarters * known) shared.push_back(id);
      }
      if (!shared.empty()) break;
    }
    if (shared.empty()) continue;
    const std::string id = Innermost(stacks, c, shared);
    // The dominant stack's own frame of that function when it has one, so that readers that
    // know only `frame` find it there; else the first stack that has one.
    for (size_t k = 0; k < stacks.size(); ++k) {
      for (size_t i = 0; i < c.ids[k].size(); ++i) {
        if (c.ids[k][i] == id) {
          return CulpritAt(stacks[k], static_cast<int>(i), static_cast<int>(k));
        }
      }
    }
  }
  return CulpritAt(stacks[0], CulpritIndex(stacks[0], kinds[0]), 0);
}

std::string NormalizeForSignature(const std::string& symbol) {
  std::string_view s = symbol;
  // V8's perf map names: "LazyCompile:*busy /tmp/app.js:3:18", "JS:~busy ...": the tier (and
  // whether the function was lazily compiled) changes while the program runs.
  for (std::string_view prefix :
       {"LazyCompile:", "JS:", "Function:", "InterpretedFunction:", "Script:", "Eval:"}) {
    if (s.substr(0, prefix.size()) == prefix) {
      s.remove_prefix(prefix.size());
      while (!s.empty() && (s[0] == '*' || s[0] == '~' || s[0] == '^' || s[0] == '+')) {
        s.remove_prefix(1);
      }
      break;
    }
  }
  // GCC's clones: "f() [clone .cold]", or the raw "f.cold", "f.isra.0", "f.constprop.0".
  const size_t clone = s.find(" [clone ");
  if (clone != s.npos) s = s.substr(0, clone);
  // (Not in names that carry a path, such as JIT names with their script's file.)
  for (std::string_view suffix : {".cold", ".isra.", ".constprop.", ".part.", ".lto_priv."}) {
    if (s.find('/') != s.npos) break;
    const size_t at = s.find(suffix);
    if (at != s.npos && at > 0) {
      s = s.substr(0, at);
    }
  }
  return std::string(s);
}

std::string Signature(const Stack& s, size_t from) {
  if (s.frames.empty()) return "";
  const std::vector<FrameKind> kinds = Kinds(s, false);
  if (from >= s.frames.size()) from = 0;
  const int culprit = std::max(CulpritIndex(s, kinds, false), static_cast<int>(from));
  // The application's frames; without any from `from` out, the library's (Python), else the
  // Python frames, else all frames.
  std::vector<const Frame*> picked;
  for (const FrameKind tier : kCandidateKinds) {
    for (size_t i = from; i < s.frames.size() && picked.size() < kSignatureFrames; ++i) {
      if (kinds[i] == tier && !IsMachinery(s, kinds, i, culprit)) picked.push_back(&s.frames[i]);
    }
    if (!picked.empty()) break;
  }
  if (picked.empty()) {
    for (const Frame& f : s.frames) {
      if (picked.size() == kSignatureFrames) break;
      if (IsPython(f)) picked.push_back(&f);
    }
  }
  if (picked.empty()) {
    for (const Frame& f : s.frames) {
      if (picked.size() == kSignatureFrames) break;
      picked.push_back(&f);
    }
  }
  Fnv64 h;
  for (const Frame* f : picked) {
    h.Str(FunctionIdentity(*f, f == &s.frames[0]));
    h.Bytes("|", 1);
  }
  return Hex16(h.value());
}

std::string HangSignature(std::span<const Stack> stacks, const Culprit& culprit) {
  if (stacks.empty()) return "";
  const size_t k = culprit.empty() || static_cast<size_t>(culprit.stack) >= stacks.size()
                       ? 0
                       : static_cast<size_t>(culprit.stack);
  return Signature(stacks[k], culprit.empty() || k != static_cast<size_t>(culprit.stack)
                                  ? 0
                                  : static_cast<size_t>(culprit.frame));
}

std::string Fingerprint(const Stack& s, uint64_t leaf_offset) {
  const size_t n = s.frames.size();
  if (n == 0) return "";
  const std::vector<FrameKind> kinds = Kinds(s, false);
  const int culprit = CulpritIndex(s, kinds, false);
  // The innermost Python frame's line moves while its function computes (as frame 0's
  // instruction does): its function identifies it. Every other Python frame is a call site.
  size_t innermost_python = n;
  for (size_t i = 0; i < n && innermost_python == n; ++i) {
    if (IsPython(s.frames[i])) innermost_python = i;
  }
  Fnv64 h;
  size_t keys = 0;
  for (size_t i = 0; i < n && keys < kFingerprintFrames; ++i) {
    const Frame& f = s.frames[i];
    if (i > 0 && IsMachinery(s, kinds, i, culprit)) continue;
    const uint64_t offset = i == 0 ? leaf_offset : f.offset;
    if (IsPython(f)) {
      // Never the code object's address: it changes with every run.
      h.Str("py:");
      h.Str(f.symbol);
      h.Bytes("@", 1);
      h.Str(f.file);
      if (i != innermost_python) h.U64(static_cast<uint64_t>(f.line));
    } else if (!f.build_id.empty()) {
      h.Str(f.build_id);
      h.U64(offset);
    } else if (!f.module.empty()) {
      // No build-id: the file name is the next most stable identity.
      h.Str(ModuleFileName(f.module));
      h.U64(offset);
    } else {
      h.U64(i == 0 ? leaf_offset : f.addr);
    }
    h.Bytes("|", 1);
    ++keys;
  }
  return Hex16(h.value());
}

}  // namespace hangwatch::report
