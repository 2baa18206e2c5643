#include "tools/reader/report_frames.h"

#include <cstdio>
#include <ctime>

#include "report/names.h"
#include "report/stack_identity.h"

namespace hangwatch::tools {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string FrameName(const Frame& f) {
  // Never the code object's address: it means nothing to a reader and moves in every run.
  if (IsInterpreted(f.language)) {
    return report::PythonFunctionLabel(f.symbol, f.file, f.line);
  }
  if (!f.symbol.empty()) return f.symbol;
  if (!f.module.empty()) return std::string(report::ModuleFileName(f.module)) + "+" + Hex(f.offset);
  return Hex(f.addr);
}

std::string FrameLocation(const Frame& f) { return FileLine(f.file, f.line); }

Culprit HangCulprit(const HangRecord& h) {
  if (!h.culprit.empty()) return h.culprit;
  return report::HangCulprit(h.stacks);
}

std::string CulpritLocation(const Culprit& c) { return FileLine(c.file, c.line); }

void RefreshHangIdentity(HangRecord* h) {
  const Stack* d = h->dominant();
  if (d == nullptr) return;
  h->culprit = report::HangCulprit(h->stacks);
  if (h->signature.empty()) h->signature = report::HangSignature(h->stacks, h->culprit);
}

namespace {
// Frames are "the same" in two stacks when they are the same code location.
bool SameFrame(const Frame& a, const Frame& b) {
  if (a.language != b.language) return false;
  // A Java frame has no address: the JVM's thread dump names it.
  if (a.language == FrameLanguage::kJava) {
    return a.symbol == b.symbol && a.file == b.file && a.line == b.line;
  }
  // An interpreter's frame: the same function object at the same instruction (one run, one hang).
  if (IsInterpreted(a.language)) return a.addr == b.addr && a.offset == b.offset;
  if (!a.module.empty() || !b.module.empty()) {
    if (a.build_id != b.build_id || a.module != b.module) return false;
    return a.offset == b.offset || (!a.symbol.empty() && a.symbol == b.symbol);
  }
  return a.addr == b.addr;
}
}  // namespace

std::vector<uint32_t> DominantPathCounts(const HangRecord& h) {
  const Stack* d = h.dominant();
  if (d == nullptr) return {};
  const size_t n = d->frames.size();
  std::vector<uint32_t> counts(n, 0);
  for (const Stack& s : h.stacks) {
    // Length of the common suffix (outermost frames) of s and d.
    size_t common = 0;
    while (common < n && common < s.frames.size() &&
           SameFrame(d->frames[n - 1 - common], s.frames[s.frames.size() - 1 - common])) {
      ++common;
    }
    for (size_t k = 0; k < common; ++k) counts[n - 1 - k] += s.count;
  }
  return counts;
}

std::string FormatUnixMs(int64_t unix_ms) {
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm;
  if (gmtime_r(&secs, &tm) == nullptr) return std::to_string(unix_ms) + " ms";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000 < 0 ? 0 : unix_ms % 1000));
  return buf;
}

}  // namespace hangwatch::tools
