// jvm/java_frame_placement.h: Java frames in place of the code cache's runs of native frames.
#include "jvm/java_frame_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hangwatch::jvm {
namespace {

using M = NativeMark;

// "n0 j0 j1 n3": native frames by index, Java frames by index.
std::string Show(const JavaPlacement& p) {
  std::string s;
  for (const PlacedFrame& f : p.frames) {
    if (!s.empty()) s += ' ';
    s += (f.java ? "j" : "n") + std::to_string(f.index);
  }
  return s;
}

std::vector<JavaFrame> Java(const std::vector<bool>& native_methods) {
  std::vector<JavaFrame> v(native_methods.size());
  for (size_t i = 0; i < v.size(); ++i) v[i].native_method = native_methods[i];
  return v;
}

TEST(JavaFramePlacementTest, OneRun) {
  // libc, libjvm monitorenter, three code-cache frames, call_helper, start_thread.
  const std::vector<M> native = {M::kOther,     M::kOther, M::kCodeCache, M::kCodeCache,
                                 M::kCodeCache, M::kOther, M::kOther};
  const JavaPlacement p = PlaceJavaFrames(native, Java({false, false, false, false}));
  EXPECT_EQ(Show(p), "n0 n1 j0 j1 j2 j3 n5 n6");
  EXPECT_EQ(p.appended, 0u);
  // A native method on top (Unsafe.park) stays in the same group.
  EXPECT_EQ(Show(PlaceJavaFrames(native, Java({true, false}))), "n0 n1 j0 j1 n5 n6");
}

TEST(JavaFramePlacementTest, CallbackRunsAndLeftovers) {
  // Java -> native method -> native library -> Java again: two runs, two groups.
  const std::vector<M> native = {M::kOther,     M::kCodeCache, M::kOther, M::kOther,
                                 M::kCodeCache, M::kCodeCache, M::kOther};
  EXPECT_EQ(Show(PlaceJavaFrames(native, Java({false, true, false}))), "n0 j0 n2 n3 j1 j2 n6");
  // More runs than groups: the others stay.
  EXPECT_EQ(Show(PlaceJavaFrames(native, Java({false, false}))), "n0 j0 j1 n2 n3 n4 n5 n6");
  // No run (the unwind stopped before the code cache): appended.
  const JavaPlacement p = PlaceJavaFrames({M::kOther, M::kSameAsPrevious}, Java({false, false}));
  EXPECT_EQ(Show(p), "n0 n1 j0 j1");
  EXPECT_EQ(p.appended, 2u);
  EXPECT_EQ(Show(PlaceJavaFrames({M::kOther, M::kCodeCache}, {})), "n0 n1");
}

}  // namespace
}  // namespace hangwatch::jvm
