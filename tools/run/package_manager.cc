#include "tools/run/package_manager.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "report/names.h"

namespace hangwatch::tools {
namespace {

// The words of a command line as the launch log joined them.
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  for (size_t at = 0; at < line.size();) {
    const size_t end = std::min(line.find(' ', at), line.size());
    if (end > at) out.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// A package manager that runs a project's scripts, by the file node runs ("npm-cli.js") or the
// command's name: its name, else "".
std::string PackageManager(const std::string& word) {
  static constexpr const char* kFiles[][2] = {
      {"npm", "npm"},   {"npm-cli.js", "npm"}, {"npx", "npx"},      {"npx-cli.js", "npx"},
      {"yarn", "yarn"}, {"yarnpkg", "yarn"},   {"yarn.js", "yarn"}, {"yarn.cjs", "yarn"},
      {"pnpm", "pnpm"}, {"pnpm.cjs", "pnpm"},  {"pnpx", "pnpx"},    {"pnpx.cjs", "pnpx"}};
  const std::string base(report::ModuleFileName(word));
  for (const auto& [file, name] : kFiles) {
    if (base == file) return name;
  }
  return "";
}

// A package manager's command that installs packages: the scripts it runs are the dependencies'
// (install scripts), not what the user ran.
bool InstallsPackages(const std::string& word) {
  static constexpr const char* kCommands[] = {
      "install", "i",      "in",     "ins",       "inst",   "insta",   "instal",
      "isnt",    "isnta",  "isntal", "isntall",   "add",    "ci",      "clean-install",
      "ic",      "update", "up",     "upgrade",   "udpate", "rebuild", "rb",
      "link",    "ln",     "remove", "uninstall", "rm",     "r",       "un",
      "unlink",  "prune",  "dedupe", "ddp",       "audit",  "pack",    "publish"};
  return std::find(std::begin(kCommands), std::end(kCommands), word) != std::end(kCommands);
}

}  // namespace

std::string ScriptRunner(const LaunchImage& image, const std::string& command_line) {
  if (report::ModuleFileName(image.exe).rfind("node", 0) != 0) return "";
  const std::vector<std::string> words = Words(command_line);
  size_t at = 0;
  if (!words.empty() && PackageManager(words[0]).empty()) {
    // node's own options come before the script it runs.
    for (at = 1; at < words.size() && words[at][0] == '-'; ++at) {
    }
  }
  if (at >= words.size()) return "";
  const std::string name = PackageManager(words[at]);
  if (name == "npx" || name == "pnpx") return name;
  // Its arguments up to "--" (the script's own arguments follow).
  for (size_t k = at + 1; k < words.size() && words[k] != "--"; ++k) {
    if (InstallsPackages(words[k])) return "";
  }
  return name;
}

}  // namespace hangwatch::tools
