// Helpers for the symbols tests: temporary directories, running commands and capturing their
// output, and compiling fixture programs with a given compiler / linker / flags.
#ifndef HANGWATCH_TESTS_SYMBOLS_FIXTURE_UTIL_H_
#define HANGWATCH_TESTS_SYMBOLS_FIXTURE_UTIL_H_

#include <string>
#include <vector>

namespace hangwatch::symbols::symtest {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int status = -1;  // exit status, or -1 when it did not exit normally
  std::string out;  // stdout (stderr too when merge_stderr)
};

// Runs `cmd` with /bin/sh, feeding `input` on stdin when non-empty.
CommandResult RunCommand(const std::string& cmd, const std::string& input = "",
                         bool merge_stderr = false);

// True when `tool` is on PATH.
bool HaveTool(const std::string& tool);

// Writes `text` to `path`.
void WriteFile(const std::string& path, const std::string& text);
std::string ReadFile(const std::string& path);

// Return addresses - 1 of every call instruction in the .text of `binary` (objdump -d), as
// ELF virtual addresses. At most `limit` of them, evenly spread.
std::vector<unsigned long long> CallSiteAddresses(const std::string& binary, size_t limit);

// The C++ source of a fixture program that exercises templates, inlining, lambdas, anonymous
// namespaces, static functions and virtual calls.
std::string FixtureSource();

}  // namespace hangwatch::symbols::symtest

#endif  // HANGWATCH_TESTS_SYMBOLS_FIXTURE_UTIL_H_
