// Java frames in place of the code cache's native frames (java_frame_placement.h).
#include "jvm/java_frame_placement.h"

namespace hangwatch::jvm {

JavaPlacement PlaceJavaFrames(const std::vector<NativeMark>& native,
                              const std::vector<JavaFrame>& java) {
  // The groups: [begin, end) of the Java frames, split before each native method but the first.
  std::vector<std::pair<size_t, size_t>> groups;
  size_t begin = 0;
  for (size_t i = 1; i <= java.size(); ++i) {
    if (i == java.size() || java[i].native_method) {
      groups.emplace_back(begin, i);
      begin = i;
    }
  }
  JavaPlacement out;
  size_t group = 0;
  const auto put_group = [&](size_t g) {
    for (size_t j = groups[g].first; j < groups[g].second; ++j) out.frames.push_back({true, j});
  };
  for (size_t i = 0; i < native.size();) {
    if (native[i] != NativeMark::kCodeCache || group == groups.size()) {
      out.frames.push_back({false, i});
      ++i;
      continue;
    }
    // A run of code-cache frames (with their inlined entries, if any): one group instead.
    while (i < native.size() &&
           (native[i] == NativeMark::kCodeCache || native[i] == NativeMark::kSameAsPrevious)) {
      ++i;
    }
    put_group(group++);
  }
  for (; group < groups.size(); ++group) {
    out.appended += groups[group].second - groups[group].first;
    put_group(group);
  }
  return out;
}

}  // namespace hangwatch::jvm
