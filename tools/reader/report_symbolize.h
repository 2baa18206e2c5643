// Offline symbolization of a report: frames are looked up by (build-id, module offset) in the
// binaries and debug files of this machine, or of directories given on the command line, so a
// report recorded elsewhere gets function names, files, lines and inlined frames.
#ifndef HANGWATCH_TOOLS_REPORT_SYMBOLIZE_H_
#define HANGWATCH_TOOLS_REPORT_SYMBOLIZE_H_

#include <string>
#include <vector>

#include "symbols/offline_symbolizer.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

struct ReportSymbolizeOptions {
  symbols::OfflineSymbolizerOptions symbolizer;
  // Print "symbolizing k/n" on stderr while working (when stderr is a terminal).
  bool progress = false;
  const char* command = "report";  // the subcommand that progress line names
};

// Replaces each frame that the symbolizer can answer by one frame per inlined function
// (innermost first, same address), with symbol, file and line; frames of JIT code are named from
// the perf map their process left (NameJitFrames). Frames it cannot answer keep what the report
// recorded. The files it gives frames are added to report->dwarf_source_files.
// Warnings (missing binaries, rejected debug files) are appended to
// *warnings, once each.
void SymbolizeReport(const ReportSymbolizeOptions& options, Report* report,
                     std::vector<std::string>* warnings);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_SYMBOLIZE_H_
