// HANGWATCH_THREADS (and `hangwatch run --threads`): which threads besides the main one the
// preload shim watches. Parsed by the agent library's settings (preload_config.h) and checked by
// `hangwatch run` before the program starts, with the same function, so both accept and refuse
// the same values.
//
//   main                 only the main thread (the default, as before threads could be watched)
//   loops                every thread that runs a loop in the poll family or a known runtime
//                        wait (the rule in thread_waits.h), up to Config::max_watched_threads
//   PATTERN[,PATTERN...] the loop threads whose name (the kernel's, 15 bytes at most, read
//                        when the thread arms) matches one pattern: `*` any run of bytes, `?`
//                        one byte, anything else itself (`gdbus,io-*`). `main` in the list is
//                        the main thread, watched anyway.
//
// A thread watched under the shim has its name as its role (hangwatch/threads.h).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_SELECTION_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_SELECTION_H_

#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::preload {

// The kernel's limit on a thread's name (TASK_COMM_LEN - 1).
inline constexpr size_t kMaxThreadNameBytes = 15;

struct ThreadSelection {
  enum class Mode { kMain, kLoops, kNamed };
  Mode mode = Mode::kMain;
  std::vector<std::string> patterns;  // kNamed: at least one

  // Whether a loop thread named `name` is watched (never the main thread's question).
  bool Selects(std::string_view name) const;
  // Whether any thread besides the main one may be watched.
  bool WatchesOtherThreads() const { return mode != Mode::kMain; }
};

// Parses a value. False with one line in *error (without the variable's name) when it is
// malformed: empty, an empty pattern (",,", a trailing comma), `loops` in a list, a pattern that
// no thread name can match (longer than 15 bytes once its `*` are left out), a control byte.
bool ParseThreadSelection(std::string_view value, ThreadSelection* out, std::string* error);

// `*` and `?` glob match of a whole name.
bool GlobMatches(std::string_view pattern, std::string_view name);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_SELECTION_H_
