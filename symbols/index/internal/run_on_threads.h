// RunOnThreads: the index builder's worker pool. Neither the standard library nor Abseil has a
// public thread pool; the builder needs only "run this on N threads and wait", with the calling
// thread as one of them (a one-unit build then starts no thread at all).
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_RUN_ON_THREADS_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_RUN_ON_THREADS_H_

#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace hangwatch::symbols::internal {

// Calls work(0) on the calling thread and work(1) ... work(threads - 1) on new threads, and
// returns when every call has returned. The work shares its input through what it captures.
inline void RunOnThreads(unsigned threads, absl::FunctionRef<void(unsigned thread)> work) {
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back([work, t] { work(t); });
  work(0);
  for (auto& t : pool) t.join();
}

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_RUN_ON_THREADS_H_
