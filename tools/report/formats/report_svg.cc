// FormatSvg: every sample of every hang as a flame graph, built from the folded stacks
// (report_folded.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/stack_identity.h"
#include "tools/common/xml_escape.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_folded.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

// The call tree, in one vector (children by index): no recursion builds, walks or destroys it,
// so a stack of any depth (a hostile report's 40,000 frames) costs memory, not the C++ stack.
struct Node {
  std::string name;
  uint64_t count = 0;
  int depth = 0;
  std::map<std::string, size_t> children;  // name -> index in the tree
};
// A warm colour that depends only on the name, so a function keeps its colour across graphs.
std::string ColorFor(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  const int r = 205 + static_cast<int>(h % 50);
  const int g = 80 + static_cast<int>((h >> 8) % 130);
  const int b = 40 + static_cast<int>((h >> 16) % 40);
  char buf[24];
  std::snprintf(buf, sizeof buf, "rgb(%d,%d,%d)", r, g, b);
  return buf;
}

constexpr double kWidth = 1200, kPad = 10, kRow = 17, kTop = 40;

struct SvgWriter {
  std::string out;
  std::set<std::string> culprits;  // names of the hangs' culprits: outlined
  uint64_t total = 0;
  int max_depth = 0;
  double height = 0;

  double Width(const Node& n) const {
    return (kWidth - 2 * kPad) * static_cast<double>(n.count) / static_cast<double>(total);
  }

  void WriteOne(const Node& n, double x) {
    const double w = Width(n);
    const double y = height - kPad - (n.depth + 1) * kRow;
    char buf[256];
    const double pct = 100.0 * static_cast<double>(n.count) / static_cast<double>(total);
    std::snprintf(buf, sizeof buf, " (%llu sample%s, %.1f%%)",
                  static_cast<unsigned long long>(n.count), n.count == 1 ? "" : "s", pct);
    const bool culprit = culprits.count(n.name) != 0;
    out += std::string(culprit ? "<g class=\"frame culprit\">" : "<g class=\"frame\">") +
           "<title>" + XmlEscape(n.name, false) + buf + (culprit ? ", culprit" : "") + "</title>";
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" rx=\"2\" fill=\"", x,
                  y, w, kRow - 1);
    out += buf + ColorFor(n.name) + "\"/>";
    const size_t fit = static_cast<size_t>(std::max(0.0, (w - 6) / 7));
    if (fit >= 3) {
      std::string label = n.name.size() <= fit ? n.name : n.name.substr(0, fit - 2) + "..";
      std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + kRow - 5);
      out += buf + XmlEscape(label, false) + "</text>";
    }
    out += "</g>\n";
  }

  // Every node wide enough to see, parents before children, children in name order, each
  // child starting where its elder sibling ends: a depth-first walk with a stack of its own.
  void Write(const std::vector<Node>& tree) {
    std::vector<std::pair<size_t, double>> todo = {{0, kPad}};  // node, x
    std::vector<std::pair<size_t, double>> children;
    while (!todo.empty()) {
      const auto [index, x] = todo.back();
      todo.pop_back();
      const Node& n = tree[index];
      if (Width(n) < 0.3) continue;
      WriteOne(n, x);
      children.clear();
      double cx = x;
      for (const auto& [name, child] : n.children) {
        children.emplace_back(child, cx);
        cx += Width(tree[child]);
      }
      todo.insert(todo.end(), children.rbegin(), children.rend());  // the first on top
    }
  }
};

}  // namespace

std::string FormatSvg(const Report& report, const std::string& title) {
  std::vector<Node> tree(1);  // [0]: the root
  tree[0].name = "all hangs";
  int max_depth = 0;
  for (const auto& [path, count] : FoldStacks(report)) {
    tree[0].count += count;
    size_t n = 0;
    for (const std::string& name : path) {
      auto [it, inserted] = tree[n].children.try_emplace(name, tree.size());
      const size_t child = it->second;
      if (inserted) {
        const int depth = tree[n].depth + 1;
        tree.emplace_back();  // may move the nodes: indices only from here
        tree.back().name = name;
        tree.back().depth = depth;
        max_depth = std::max(max_depth, depth);
      }
      tree[child].count += count;
      n = child;
    }
  }
  const Node& root = tree[0];
  SvgWriter w;
  // The culprits, most frequent first, for the title; their frames are outlined.
  std::map<std::string, size_t> culprit_counts;
  for (const HangRecord& h : report.hangs) {
    const Culprit c = HangCulprit(h);
    if (c.empty()) continue;
    std::string name = CulpritLabel(c, CulpritLabelStyle::kName);
    for (char& ch : name) {
      if (ch == ';') ch = ':';  // as in the folded stacks (report_folded.h)
      if (ch == '\n' || ch == '\r') ch = ' ';
    }
    ++culprit_counts[name];
    w.culprits.insert(name);
  }
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [name, n] : culprit_counts) by_count.emplace_back(n, name);
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string culprit_line;
  for (size_t i = 0; i < by_count.size() && i < 3; ++i) {
    culprit_line += (i == 0 ? "in " : ", ") + by_count[i].second;
    if (report.hangs.size() > 1) culprit_line += " (" + std::to_string(by_count[i].first) + ")";
  }
  if (by_count.size() > 3) culprit_line += ", ...";
  w.total = std::max<uint64_t>(root.count, 1);
  w.max_depth = max_depth;
  w.height = kTop + (w.max_depth + 1) * kRow + 2 * kPad;
  char head[512];
  std::snprintf(head, sizeof head,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
                "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
                kWidth, w.height, kWidth, w.height);
  w.out = head;
  w.out +=
      "<style>text{font-family:monospace;font-size:12px;fill:#000;pointer-events:none}"
      ".frame:hover rect{stroke:#000;stroke-width:0.8}"
      ".culprit rect{stroke:#a00;stroke-width:1.6}"
      ".title{font-size:16px;font-family:sans-serif}</style>\n";
  w.out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfdf6\"/>\n";
  char sub[160];
  std::snprintf(sub, sizeof sub, " (%zu hang%s, %llu samples)", report.hangs.size(),
                report.hangs.size() == 1 ? "" : "s", static_cast<unsigned long long>(root.count));
  w.out += "<text class=\"title\" x=\"10\" y=\"24\">" + XmlEscape(title, false) + sub +
           (culprit_line.empty() ? "" : " " + XmlEscape(culprit_line, false)) + "</text>\n";
  if (root.count > 0) w.Write(tree);
  w.out += "</svg>\n";
  return w.out;
}

}  // namespace hangwatch::tools
