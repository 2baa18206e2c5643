// BatchSymbolizer: the frames of many stacks symbolized in one pass, for `hangwatch snapshot` and
// every command that symbolizes a report (tools/reader/report_symbolize.h). Each (module, address)
// is looked up once, one OfflineSymbolizer batch per module (the cold path wants all of a module's
// addresses at once); return addresses are looked up at the call instruction (address - 1); each
// answer is the chain of inlined frames, innermost first.
//
// Usage: AddModule for each module (batches run in the order of the returned ids), AddFrame for
// each frame, Run once, then Answer per frame. The answers' strings point into the symbolizer's
// indexes: they live as long as the BatchSymbolizer.
//
// Not thread-safe: use one per thread.
#ifndef HANGWATCH_SYMBOLS_BATCH_SYMBOLIZER_H_
#define HANGWATCH_SYMBOLS_BATCH_SYMBOLIZER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "symbols/index/symbol_index.h"
#include "symbols/offline_symbolizer.h"

namespace hangwatch::symbols {

// The module offset to look up for a frame at `offset`: the instruction itself for the
// innermost frame (index 0 of its stack), the call instruction (return address - 1) for the
// others, whose addresses point after the call.
inline uint64_t LookupOffset(uint64_t offset, size_t index_in_stack) {
  return index_in_stack == 0 || offset == 0 ? offset : offset - 1;
}

struct BatchSymbolizerOptions {
  OfflineSymbolizerOptions symbolizer;
  // Look a module with a build-id up by build-id (a cached index answers without opening the
  // file; else the file when its build-id matches, else the search paths and debug
  // directories). False: always by the module's path.
  bool by_build_id = true;
};

class BatchSymbolizer {
 public:
  explicit BatchSymbolizer(BatchSymbolizerOptions options);
  ~BatchSymbolizer();
  BatchSymbolizer(const BatchSymbolizer&) = delete;
  BatchSymbolizer& operator=(const BatchSymbolizer&) = delete;

  // A module, read from `path` ("" when it cannot be read: its frames stay unanswered) and
  // identified by `build_id` (may be empty). Returns its id, for AddFrame and Answer.
  size_t AddModule(std::string build_id, std::string path);

  // Frame `index_in_stack` (0 = innermost) of some stack, at `offset` in module `module`.
  void AddFrame(size_t module, uint64_t offset, size_t index_in_stack);

  // Called before each module's batch: how many modules so far (this one included) of how
  // many, and which.
  using Progress = std::function<void(size_t done, size_t total, size_t module)>;
  // Called for a module whose batch failed (missing file, no matching build-id...).
  using Failure = std::function<void(size_t module, const absl::Status& status)>;

  // Looks every distinct (module, address) up once, module by module in id order. Modules
  // without frames or without a path are skipped.
  void Run(const Progress& progress, const Failure& failure);

  // The inlined frames for a frame added before Run (innermost first), or nullptr when its
  // module failed or was skipped, or Run was not called.
  const SymbolizedAddress* Answer(size_t module, uint64_t offset, size_t index_in_stack) const;

  // The symbolizer's own warnings (rejected debug files...), after Run.
  const std::vector<std::string>& warnings() const;

 private:
  struct Batch {
    std::string build_id;
    std::string path;
    std::vector<uint64_t> addresses;         // after Run: sorted, each once
    std::vector<SymbolizedAddress> answers;  // answers[i] for addresses[i]; empty when failed
  };

  BatchSymbolizerOptions options_;
  std::vector<Batch> batches_;
  std::unique_ptr<OfflineSymbolizer> symbolizer_;  // created by Run
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_BATCH_SYMBOLIZER_H_
