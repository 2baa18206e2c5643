// A hang's culprit as one line of text: the one rule every reader of hang records uses (the
// command line's formats, top, the exporters, the Prometheus adapter, the agent's log line).
// Inline, so that code that sees only the public API (the Prometheus adapter) uses the same
// rule, not a copy of it.
//
// The function is named the same way in every style:
// - a native function: its symbol ("debugCommand"), else its module's file name and offset
//   ("python3.11+0x5d64b4"), else, for code outside any module (JIT code), its offset alone
//   ("0x7f00aa");
// - a Python function: its qualified name ("Handler.handle"), "?" when unknown (its offset is an
//   instruction index, not worth printing);
// - no culprit (Culprit::empty()): "?" (a reader with a word of its own for a hang without a
//   stack, such as "(no stack)" or "none", checks empty() first).
// The styles differ only in where the function is, printed after it in parentheses.
#ifndef HANGWATCH_CULPRIT_LABEL_H_
#define HANGWATCH_CULPRIT_LABEL_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "hangwatch/hang_record.h"

namespace hangwatch {

enum class CulpritLabelStyle {
  // The function alone, for a field beside which the file and line are given:
  // "debugCommand", "Handler.handle".
  kFunction,
  // With the file's base name and line: "debugCommand (debug.c:1033)",
  // "Handler.handle (app.py:42)" (" (file)" without a line, nothing without a file).
  kBaseFileLine,
  // With the file's whole path and line: "Handler.handle (/srv/app.py:42)".
  kPathFileLine,
  // The name a culprit goes by (the HTML flame graph's, the trace's, the gate's glob's): a
  // native function alone, a Python function as py-spy prints it, with its file's base name and
  // line ("Handler.handle (app.py:42)"), since a qualified name alone is often not unique.
  kName,
  // As kName, a Python function without its line ("Handler.handle (app.py)"): one series per
  // function for a metric's label, whichever of its lines was running.
  kSeries,
};

namespace culprit_label_internal {

// What follows the last '/' or '\\' of a path (report::ModuleFileName's rule).
inline std::string_view BaseName(std::string_view path) {
  const size_t slash = path.find_last_of("/\\");
  return slash == path.npos ? path : path.substr(slash + 1);
}

inline std::string Function(const Culprit& c) {
  if (c.empty()) return "?";
  if (IsInterpreted(c.language)) return c.symbol.empty() ? "?" : c.symbol;
  if (!c.symbol.empty()) return c.symbol;
  char offset[24];
  std::snprintf(offset, sizeof offset, "0x%llx", static_cast<unsigned long long>(c.offset));
  if (c.module.empty()) return offset;
  return std::string(BaseName(c.module)) + "+" + offset;
}

}  // namespace culprit_label_internal

inline std::string CulpritLabel(const Culprit& c, CulpritLabelStyle style) {
  std::string label = culprit_label_internal::Function(c);
  const bool python = IsInterpreted(c.language);
  bool base_name = true;
  bool with_line = true;
  switch (style) {
    case CulpritLabelStyle::kFunction:
      return label;
    case CulpritLabelStyle::kBaseFileLine:
      break;
    case CulpritLabelStyle::kPathFileLine:
      base_name = false;
      break;
    case CulpritLabelStyle::kName:
      if (!python) return label;
      break;
    case CulpritLabelStyle::kSeries:
      if (!python) return label;
      with_line = false;
      break;
  }
  if (c.empty() || c.file.empty()) return label;
  label += " (";
  label += base_name ? culprit_label_internal::BaseName(c.file) : std::string_view(c.file);
  if (with_line && c.line > 0) label += ":" + std::to_string(c.line);
  label += ")";
  return label;
}

}  // namespace hangwatch

#endif  // HANGWATCH_CULPRIT_LABEL_H_
