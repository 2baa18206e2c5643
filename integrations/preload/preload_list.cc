#include "integrations/preload/preload_list.h"

namespace hangwatch::preload {
namespace {

// Calls fn(entry) for each entry of an LD_PRELOAD list (separated by ':' or spaces, as ld.so
// reads it).
template <typename Fn>
void ForEachPreloadEntry(std::string_view list, Fn fn) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && (list[i] == ':' || list[i] == ' ')) ++i;
    size_t j = i;
    while (j < list.size() && list[j] != ':' && list[j] != ' ') ++j;
    if (j == i) break;
    fn(std::string_view(list.data() + i, j - i));
    i = j;
  }
}

// (No substr: it may throw, and the loader has no C++ runtime.)
bool IsShimEntry(std::string_view entry, std::string_view self_path) {
  const size_t slash = entry.rfind('/');
  const std::string_view name =
      slash == std::string_view::npos
          ? entry
          : std::string_view(entry.data() + slash + 1, entry.size() - slash - 1);
  return (!self_path.empty() && entry == self_path) || name.starts_with("libhangwatch_preload");
}

}  // namespace

size_t RemoveShimFromPreload(std::string_view list, std::string_view self_path, char* out) {
  size_t n = 0;
  ForEachPreloadEntry(list, [&](std::string_view entry) {
    if (IsShimEntry(entry, self_path)) return;
    if (n > 0) out[n++] = ':';
    for (char c : entry) out[n++] = c;
  });
  out[n] = '\0';
  return n;
}

bool HasShim(std::string_view list, std::string_view self_path) {
  bool found = false;
  ForEachPreloadEntry(list,
                      [&](std::string_view entry) { found |= IsShimEntry(entry, self_path); });
  return found;
}

}  // namespace hangwatch::preload
