// What the targets share: a private scratch directory for parsers that read files, and the way a
// target writes its own seeds (for inputs that only the code under test can make, like an
// open-hang file or a copy of this binary's stack).
#ifndef HANGWATCH_FUZZ_FUZZ_UTIL_H_
#define HANGWATCH_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hangwatch::fuzz {

// A directory only this process uses (mkdtemp under $TMPDIR or /tmp), removed at exit.
const std::string& ScratchDir();

// Replaces `path` with `bytes`; aborts when it cannot (a harness that silently reads nothing
// would fuzz nothing).
void WriteFile(const std::string& path, std::string_view bytes);

// HANGWATCH_FUZZ_WRITE_SEEDS=DIR asks a target to write its seeds into DIR and exit instead of
// fuzzing (tests/symbols/run_fuzzers.sh does that): when it is set, calls `write` with DIR and
// exits. For LLVMFuzzerInitialize.
void WriteSeedsIfAsked(void (*write)(const std::string& dir));

// Reads the input as consecutive little-endian integers, zero once it is used up.
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t Take(size_t bytes);
  std::string_view Rest() const;

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace hangwatch::fuzz

#endif  // HANGWATCH_FUZZ_FUZZ_UTIL_H_
