// ReadLineAt and SymbolizeTopCulprits.
#include "tools/top/top_symbolize.h"

#include <string_view>
#include <utility>

#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"
#include "tools/reader/report_frames.h"
#include "tools/reader/report_reader.h"
#include "tools/top/top_scan.h"

namespace hangwatch::tools {
namespace {

// The line read again is still a hang with the culprit its group was counted under, as the
// scan's parser reads it: else it is another line now (the file was rewritten or rotated).
bool SameHang(TopLineParser* parser, std::string_view line, const TopCulprit& group) {
  TopHang h;
  return parser->ParseUnpadded(line, &h) == LineKind::kHang && h.has_culprit &&
         h.culprit_symbol == group.symbol && h.culprit_module == group.module &&
         h.culprit_file == group.file && h.culprit_line == group.line &&
         h.culprit_offset == group.offset && h.culprit_language == group.language;
}

}  // namespace

bool ReadLineAt(const std::string& path, uint64_t offset, std::string* line, size_t max_bytes) {
  line->clear();
  InputFile file;  // the same rule as the scan: a regular file, never blocking
  std::string error;
  if (!file.Open(path, &error)) return false;
  LineReader reader(file, offset, max_bytes);
  Line next;
  // A last line without its newline is read too; one past max_bytes is not.
  if (!reader.Next(&next) || next.too_long) return false;
  line->assign(next.text);
  return true;
}

void SymbolizeTopCulprits(const std::vector<std::string>& paths,
                          const ReportSymbolizeOptions& options, size_t count,
                          std::vector<TopGroup>* groups, std::vector<std::string>* notes,
                          std::vector<std::string>* warnings) {
  if (count == 0 || count > groups->size()) count = groups->size();
  // All the hangs in one report, so that each module is one batch for all groups.
  Report report;
  std::vector<TopGroup*> owners;  // the group of each hang of `report`
  std::string line;
  TopLineParser parser(/*want_labels=*/false);
  for (size_t i = 0; i < count; ++i) {
    TopGroup& g = (*groups)[i];
    if (!g.culprit || !g.culprit_line || g.culprit_line->file >= paths.size()) continue;
    const std::string& path = paths[g.culprit_line->file];
    if (!ReadLineAt(path, g.culprit_line->offset, &line) || !SameHang(&parser, line, *g.culprit)) {
      notes->push_back(path + ": the hang at byte " + std::to_string(g.culprit_line->offset) +
                       " cannot be read again (the file changed?): culprit " +
                       CulpritLabel(g.culprit->AsCulprit(), CulpritLabelStyle::kPathFileLine) +
                       " as recorded");
      continue;
    }
    // A line that top reads but the report decoder does not (a hang line without the fields
    // only report needs: `hangwatch report` skips it) keeps its culprit as recorded.
    HangRecord h;
    std::string error;
    if (!ParseHangLine(line, &h, &error)) continue;
    // The culprit comes from every stack (RefreshHangIdentity, report::HangCulprit: what most
    // samples share), so all of them are symbolized, as `hangwatch report` does.
    h.timeline.clear();
    report.hangs.push_back(std::move(h));
    owners.push_back(&g);
  }
  if (report.hangs.empty()) return;
  SymbolizeReport(options, &report, warnings);
  for (size_t k = 0; k < report.hangs.size(); ++k) {
    const Culprit c = HangCulprit(report.hangs[k]);
    if (c.empty()) continue;  // no stack: the recorded culprit stays
    TopCulprit& tc = *owners[k]->culprit;
    tc.symbol = c.symbol;
    tc.module = c.module;
    tc.file = c.file;
    tc.offset = c.offset;
    tc.line = c.line;
    tc.language = c.language;
  }
}

}  // namespace hangwatch::tools
