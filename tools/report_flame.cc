// FormatFolded and FormatSvg: every sample of every hang, as folded stacks and as a flame graph.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/report_formats.h"
#include "tools/report_frames.h"
#include "tools/xml_escape.h"

namespace hangwatch::tools {
namespace {

// Folded-stack names may not contain ';' (the separator) or newlines.
std::string FoldedName(const Frame& f) {
  std::string s = FrameName(f);
  for (char& c : s) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// "outer;...;inner" -> samples, over all hangs.
std::map<std::vector<std::string>, uint64_t> FoldStacks(const Report& report) {
  std::map<std::vector<std::string>, uint64_t> folded;
  for (const HangRecord& h : report.hangs) {
    for (const Stack& s : h.stacks) {
      if (s.count == 0 || s.frames.empty()) continue;
      std::vector<std::string> path;
      for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it)
        path.push_back(FoldedName(*it));
      folded[path] += s.count;
    }
  }
  return folded;
}

struct Node {
  std::string name;
  uint64_t count = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
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
  uint64_t total = 0;
  int max_depth = 0;
  double height = 0;

  void Write(const Node& n, double x, int depth) {
    const double w =
        (kWidth - 2 * kPad) * static_cast<double>(n.count) / static_cast<double>(total);
    if (w < 0.3) return;
    const double y = height - kPad - (depth + 1) * kRow;
    char buf[256];
    const double pct = 100.0 * static_cast<double>(n.count) / static_cast<double>(total);
    std::snprintf(buf, sizeof buf, " (%llu sample%s, %.1f%%)",
                  static_cast<unsigned long long>(n.count), n.count == 1 ? "" : "s", pct);
    out += "<g class=\"frame\"><title>" + XmlEscape(n.name, false) + buf + "</title>";
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
    double cx = x;
    for (const auto& [name, child] : n.children) {
      Write(*child, cx, depth + 1);
      cx += (kWidth - 2 * kPad) * static_cast<double>(child->count) / static_cast<double>(total);
    }
  }
};

int Depth(const Node& n) {
  int d = 0;
  for (const auto& [name, c] : n.children) d = std::max(d, 1 + Depth(*c));
  return d;
}

}  // namespace

std::string FormatFolded(const Report& report) {
  std::string out;
  for (const auto& [path, count] : FoldStacks(report)) {
    for (size_t i = 0; i < path.size(); ++i) {
      if (i) out.push_back(';');
      out += path[i];
    }
    out += " " + std::to_string(count) + "\n";
  }
  return out;
}

std::string FormatSvg(const Report& report, const std::string& title) {
  Node root;
  root.name = "all hangs";
  for (const auto& [path, count] : FoldStacks(report)) {
    root.count += count;
    Node* n = &root;
    for (const std::string& name : path) {
      auto& child = n->children[name];
      if (!child) {
        child = std::make_unique<Node>();
        child->name = name;
      }
      child->count += count;
      n = child.get();
    }
  }
  SvgWriter w;
  w.total = std::max<uint64_t>(root.count, 1);
  w.max_depth = Depth(root);
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
      ".title{font-size:16px;font-family:sans-serif}</style>\n";
  w.out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfdf6\"/>\n";
  char sub[160];
  std::snprintf(sub, sizeof sub, " (%zu hang%s, %llu samples)", report.hangs.size(),
                report.hangs.size() == 1 ? "" : "s", static_cast<unsigned long long>(root.count));
  w.out += "<text class=\"title\" x=\"10\" y=\"24\">" + XmlEscape(title, false) + sub + "</text>\n";
  if (root.count > 0) w.Write(root, kPad, 0);
  w.out += "</svg>\n";
  return w.out;
}

}  // namespace hangwatch::tools
