#include "report/stack_identity.h"

#include <algorithm>
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

// Whether some frame of `stacks` was named from a runtime's perf map (code outside every module,
// with a name): the process writes one.
bool HasPerfMapNames(std::span<const Stack> stacks) {
  for (const Stack& s : stacks) {
    for (const Frame& f : s.frames) {
      if (f.module.empty() && !f.symbol.empty()) return true;
    }
  }
  return false;
}

// ClassifyFrame, and code outside every module that the perf map of a process that has one does
// not name is the runtime's: V8 copies its builtins into anonymous memory (node
// --perf-basic-prof lists only the JavaScript functions), so such a frame is machinery and the
// JS function out from it is the culprit.
FrameKind Kind(const Frame& f, bool perf_map) {
  if (perf_map && f.module.empty() && f.symbol.empty()) return FrameKind::kRuntime;
  return ClassifyFrame(f.module, f.symbol);
}
FrameKind Kind(const Frame& f) { return ClassifyFrame(f.module, f.symbol); }

// Index of the innermost application frame (else 0), or -1 when `s` has no frames.
int FirstAppIndex(const Stack& s) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (Kind(s.frames[i]) == FrameKind::kApp) return static_cast<int>(i);
  }
  return s.frames.empty() ? -1 : 0;
}

// An anonymous C function of the interpreter (CPython's time.sleep in a stripped python3):
// the script's own function, named by the runtime's perf map (python3.12 -X perf, node
// --perf-basic-prof), is the better name when there is one further out. That frame's index,
// or 0.
size_t JitNameFurtherOut(const Stack& s, size_t i) {
  const Frame& f = s.frames[i];
  if (!f.symbol.empty() || !IsRuntimeModule(f.module)) return 0;
  for (size_t j = i + 1; j < s.frames.size(); ++j) {
    const Frame& g = s.frames[j];
    if (g.module.empty() && !g.symbol.empty()) return j;
  }
  return 0;
}
bool GivesWayToJit(const Stack& s, size_t i) { return JitNameFurtherOut(s, i) != 0; }

// Index of the culprit frame in `s`, or -1 when `s` has no frames.
int CulpritIndex(const Stack& s, bool perf_map) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (Kind(s.frames[i], perf_map) != FrameKind::kApp) continue;
    if (const size_t j = JitNameFurtherOut(s, i); j != 0) return static_cast<int>(j);
    return static_cast<int>(i);
  }
  return s.frames.empty() ? -1 : 0;
}

// Whether frame i (> 0) is part of a runtime's machinery for identity purposes: a kRuntime frame,
// or (past the first application frame, `culprit`) an unnamed frame leading, through more unnamed
// frames of its module, to a kRuntime frame of the same module: call dispatch, which an interpreter
// may skip.
bool IsMachinery(const Stack& s, size_t i, int culprit) {
  const Frame& f = s.frames[i];
  if (Kind(f) == FrameKind::kRuntime) return true;
  if (static_cast<int>(i) <= culprit || !f.symbol.empty() || f.module.empty()) return false;
  const size_t n = s.frames.size();
  size_t j = i + 1;
  while (j < n && s.frames[j].module == f.module && s.frames[j].symbol.empty()) ++j;
  return j < n && s.frames[j].module == f.module && Kind(s.frames[j]) == FrameKind::kRuntime;
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
  return c;
}

}  // namespace

Culprit FindCulprit(const Stack& s) {
  return CulpritAt(s, CulpritIndex(s, HasPerfMapNames(std::span<const Stack>(&s, 1))), 0);
}

std::string FunctionIdentity(const Frame& f, bool leaf) {
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
  // Each function's weight: the samples of the stacks that hold one of its application frames.
  std::unordered_map<std::string, uint64_t> weight;
  std::vector<std::vector<std::string>> ids(stacks.size());
  uint64_t total = 0;
  for (size_t k = 0; k < stacks.size(); ++k) {
    const Stack& s = stacks[k];
    if (s.frames.empty()) continue;
    total += s.count;
    ids[k].resize(s.frames.size());
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (Kind(s.frames[i], perf_map) != FrameKind::kApp || GivesWayToJit(s, i)) continue;
      ids[k][i] = FunctionIdentity(s.frames[i], i == 0);
      if (seen.insert(ids[k][i]).second) weight[ids[k][i]] += s.count;
    }
  }
  // The lightest function present in at least three quarters of the samples, else half of them
  // (the innermost of a chain of callers, which are each present wherever their callee is);
  // among equals, the first met in the stacks' order (most samples first), innermost frame
  // first.
  // Three quarters first: a helper function that holds about half of the samples (a C builtin's
  // inner loop, between runs 40% and 60%) would otherwise be the culprit in some runs only.
  uint64_t best = 0;
  for (const uint64_t quarters : {3u, 2u}) {
    for (const auto& [id, w] : weight) {
      if (4 * w >= quarters * total && w > 0 && (best == 0 || w < best)) best = w;
    }
    if (best != 0) break;
  }
  if (best != 0) {
    for (size_t k = 0; k < stacks.size(); ++k) {
      for (size_t i = 0; i < ids[k].size(); ++i) {
        if (ids[k][i].empty() || weight[ids[k][i]] != best) continue;
        // The dominant stack's own frame of that function when it has one, so that readers
        // that know only `frame` find it there.
        if (k != 0 && !stacks[0].frames.empty()) {
          for (size_t j = 0; j < ids[0].size(); ++j) {
            if (ids[0][j] == ids[k][i]) return CulpritAt(stacks[0], static_cast<int>(j), 0);
          }
        }
        return CulpritAt(stacks[k], static_cast<int>(i), static_cast<int>(k));
      }
    }
  }
  return CulpritAt(stacks[0], CulpritIndex(stacks[0], perf_map), 0);
}

std::string CulpritName(const Culprit& c) {
  if (c.empty()) return "?";
  if (!c.symbol.empty()) return c.symbol;
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(c.offset));
  if (c.module.empty()) return buf;
  return std::string(ModuleFileName(c.module)) + "+" + buf;
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
  std::vector<const Frame*> picked;
  if (from >= s.frames.size()) from = 0;
  const int culprit = std::max(FirstAppIndex(s), static_cast<int>(from));
  for (size_t i = from; i < s.frames.size() && picked.size() < kSignatureFrames; ++i) {
    const Frame& f = s.frames[i];
    if (Kind(f) == FrameKind::kApp && !IsMachinery(s, i, culprit)) picked.push_back(&f);
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
  const int culprit = FirstAppIndex(s);
  Fnv64 h;
  size_t keys = 0;
  for (size_t i = 0; i < n && keys < kFingerprintFrames; ++i) {
    const Frame& f = s.frames[i];
    if (i > 0 && IsMachinery(s, i, culprit)) continue;
    const uint64_t offset = i == 0 ? leaf_offset : f.offset;
    if (!f.build_id.empty()) {
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
