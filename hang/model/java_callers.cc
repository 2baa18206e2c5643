#include "hang/model/java_callers.h"

#include <string_view>
#include <utility>
#include <vector>

namespace hangwatch::agent {
namespace {

// Whether a walk that ended at `f` reached the thread's start: its outermost frame is the
// start of every thread (clone, clone3: glibc's are named __GI___clone3), of the process
// (_start) or the code that calls them.
bool IsThreadStart(const Frame& f) {
  const std::string_view s = f.symbol;
  for (std::string_view end : {"clone", "clone3"}) {
    if (s.size() >= end.size() && s.substr(s.size() - end.size()) == end) return true;
  }
  return s == "start_thread" || s == "_start" || s == "__libc_start_main" ||
         s == "__libc_start_call_main";
}

// A frame of HotSpot's template interpreter: code outside every module that the JVM's perf map
// names "Interpreter". One frame per interpreted Java method (a native method's entry too).
bool IsInterpreterFrame(const Frame& f) {
  return f.language == FrameLanguage::kNative && f.module.empty() && f.symbol == "Interpreter";
}

Frame JavaFrame(const JavaStackFrame& j) {
  Frame fr;
  fr.language = FrameLanguage::kJava;
  fr.symbol = j.method;
  fr.file = j.file;
  fr.line = static_cast<int>(j.line);
  return fr;
}

// The one run of interpreter frames of `s` when it is exactly as long as `java`: its first
// index; -1 when there is none, several, or another length (JIT code in the chain, or the
// sample was of another depth than the dump).
int InterpreterRunOfLength(const Stack& s, size_t length) {
  size_t i = 0;
  for (; i < s.frames.size() && !IsInterpreterFrame(s.frames[i]); ++i) {
  }
  if (i == s.frames.size()) return -1;
  const int first = static_cast<int>(i);
  for (; i < s.frames.size() && IsInterpreterFrame(s.frames[i]); ++i) {
  }
  if (i - static_cast<size_t>(first) != length) return -1;
  for (; i < s.frames.size(); ++i) {
    if (IsInterpreterFrame(s.frames[i])) return -1;
  }
  return first;
}

// Where HotSpot enters Java code from the VM: JavaCalls::call_helper, through the call stub. A
// walk that reached it without a frame of the code cache on the way skipped the Java frames (a
// stack scan of a thread read through /proc jumps from the JDK library's frame to it): its
// index, where they go; -1 when there is no such frame, or more than one (Java called from
// native code called from Java: which frames go where is not known).
int JavaEntryWithoutCodeCache(const Stack& s) {
  int entry = -1;
  bool code_cache = false;
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const Frame& f = s.frames[i];
    if (f.language != FrameLanguage::kNative) return -1;
    if (std::string_view(f.symbol).substr(0, 22) == "JavaCalls::call_helper") {
      if (entry >= 0) return -1;
      entry = static_cast<int>(i);
    } else if (f.module.empty() && entry < 0) {
      code_cache = true;
    }
  }
  return code_cache ? -1 : entry;
}

// Where the Java frames below the end of the walk start: all of them after a walk that ended
// in a module short of the thread's start; the callers of a JIT frame the dump has; none
// (java.size()) otherwise.
size_t CallersFrom(const Stack& s, const std::vector<JavaStackFrame>& java) {
  const Frame& last = s.frames.back();
  if (last.language != FrameLanguage::kNative || IsThreadStart(last)) return java.size();
  if (!last.module.empty()) return 0;
  const std::string_view method = JavaMethodOfPerfMapName(last.symbol);
  if (method.empty()) return java.size();
  for (size_t i = 0; i < java.size(); ++i) {
    if (java[i].method == method) return i + 1;
  }
  return java.size();
}

}  // namespace

void AddJavaFrames(const std::vector<JavaStackFrame>& java, std::vector<Stack>* stacks) {
  if (java.empty()) return;
  for (Stack& s : *stacks) {
    if (s.frames.empty() || s.partial) continue;
    if (const int run = InterpreterRunOfLength(s, java.size()); run >= 0) {
      for (size_t i = 0; i < java.size(); ++i) {
        s.frames[static_cast<size_t>(run) + i] = JavaFrame(java[i]);
      }
      continue;
    }
    if (const int entry = JavaEntryWithoutCodeCache(s); entry >= 0) {
      std::vector<Frame> frames;
      frames.reserve(java.size());
      for (const JavaStackFrame& j : java) frames.push_back(JavaFrame(j));
      s.frames.insert(s.frames.begin() + entry, frames.begin(), frames.end());
      continue;
    }
    for (size_t i = CallersFrom(s, java); i < java.size(); ++i) {
      s.frames.push_back(JavaFrame(java[i]));
    }
  }
}

}  // namespace hangwatch::agent
