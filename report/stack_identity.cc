#include "report/stack_identity.h"

#include <cstdio>
#include <string_view>
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

FrameKind Kind(const Frame& f) { return ClassifyFrame(f.module, f.symbol); }

// Index of the innermost application frame (else 0), or -1 when `s` has no frames.
int FirstAppIndex(const Stack& s) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (Kind(s.frames[i]) == FrameKind::kApp) return static_cast<int>(i);
  }
  return s.frames.empty() ? -1 : 0;
}

// Index of the culprit frame in `s`, or -1 when `s` has no frames.
int CulpritIndex(const Stack& s) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const Frame& f = s.frames[i];
    if (Kind(f) != FrameKind::kApp) continue;
    if (f.symbol.empty() && IsRuntimeModule(f.module)) {
      // An anonymous C function of the interpreter (CPython's time.sleep in a stripped
      // python3): the script's own function, named by the runtime's perf map (python3.12 -X
      // perf, node --perf-basic-prof), is the better name when there is one further out.
      for (size_t j = i + 1; j < s.frames.size(); ++j) {
        const Frame& g = s.frames[j];
        if (g.module.empty() && !g.symbol.empty()) return static_cast<int>(j);
      }
    }
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

}  // namespace

Culprit FindCulprit(const Stack& s) {
  Culprit c;
  const int i = CulpritIndex(s);
  if (i < 0) return c;
  const Frame& f = s.frames[static_cast<size_t>(i)];
  c.symbol = f.symbol;
  c.module = f.module;
  c.offset = f.offset;
  c.file = f.file;
  c.line = f.line;
  c.frame = i;
  return c;
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

std::string Signature(const Stack& s) {
  if (s.frames.empty()) return "";
  std::vector<const Frame*> picked;
  const int culprit = FirstAppIndex(s);
  for (size_t i = 0; i < s.frames.size() && picked.size() < kSignatureFrames; ++i) {
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
    if (!f->symbol.empty()) {
      h.Str(NormalizeForSignature(f->symbol));
    } else {
      h.Str("?@");
      h.Str(ModuleFileName(f->module));
    }
    h.Bytes("|", 1);
  }
  return Hex16(h.value());
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
