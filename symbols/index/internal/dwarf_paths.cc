// File paths as LLVM joins them.
#include "symbols/index/internal/dwarf_paths.h"

namespace hangwatch::symbols::internal {

namespace {

bool IsAbsolute(std::string_view p) { return !p.empty() && p[0] == '/'; }

}  // namespace

void AppendPath(std::string* path, std::string_view component) {
  if (component.empty()) return;
  const bool path_has_sep = !path->empty() && path->back() == '/';
  if (path_has_sep) {
    size_t skip = component.find_first_not_of('/');
    if (skip == std::string_view::npos) return;
    path->append(component.substr(skip));
    return;
  }
  if (!path->empty() && component[0] != '/') path->push_back('/');
  path->append(component);
}

std::string AbsoluteFile(const char* name, const char* comp_dir) {
  if (name == nullptr) return {};
  if (IsAbsolute(name) || comp_dir == nullptr) return name;
  std::string out;
  AppendPath(&out, comp_dir);
  AppendPath(&out, name);
  return out;
}

}  // namespace hangwatch::symbols::internal
