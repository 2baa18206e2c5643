// FormatHtml: the report as one self-contained, interactive page. The page's template, style
// sheet and script are the files of tools/report/formats/html/, embedded at build time
// (tools/report/formats/html/embed.cmake); the data is report_html_data.h's.
#include <string>
#include <string_view>

#include "tools/common/xml_escape.h"
#include "tools/report/formats/report_formats.h"
#include "tools/report/formats/report_html_assets.h"
#include "tools/report/formats/report_html_data.h"

namespace hangwatch::tools {

std::string FormatHtml(const Report& report, const std::string& title) {
  const HtmlReportData data = MakeHtmlReportData(report, title);
  const std::string_view page = kHtmlTemplate;
  std::string out;
  out.reserve(page.size() + data.data.size() + data.details.size() + sizeof kHtmlStyle +
              sizeof kHtmlScript);
  // The template's @NAME@ markers, replaced in one pass (so that nothing inserted is scanned).
  size_t at = 0;
  while (at < page.size()) {
    const size_t open = page.find('@', at);
    const size_t close = open == std::string_view::npos ? open : page.find('@', open + 1);
    if (close == std::string_view::npos) {
      out.append(page.substr(at));
      break;
    }
    out.append(page.substr(at, open - at));
    const std::string_view name = page.substr(open + 1, close - open - 1);
    if (name == "TITLE") {
      out += XmlEscape(title, false);
    } else if (name == "CSS") {
      out += kHtmlStyle;
    } else if (name == "DATA") {
      out += data.data;
    } else if (name == "DETAILS") {
      out += data.details;
    } else if (name == "JS") {
      out += kHtmlScript;
    } else {  // an '@' of the template's own text
      out.push_back('@');
      at = open + 1;
      continue;
    }
    at = close + 1;
  }
  return out;
}

}  // namespace hangwatch::tools
