// Helpers for the CFI tests: unwinding a capture, naming frames (dladdr: the test binaries
// export their symbols), checking that a chain of callers appears in order, and eu-stack's
// view of the same thread for comparison.
#ifndef HANGWATCH_TESTS_CFI_CFI_TEST_UTIL_H_
#define HANGWATCH_TESTS_CFI_CFI_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/cfi_unwinder.h"
#include "unwind/thread_capture.h"

namespace hangwatch::testing {

struct Unwound {
  std::vector<uintptr_t> pcs;
  std::vector<symbols::FrameMethod> methods;
  std::vector<std::string> names;  // dladdr names ("" when unknown)
  std::string ToString() const;    // one frame per line, for failure messages
};

// Unwinds what `capture` holds (its registers and stack copy). A /proc capture has no frame
// pointer.
Unwound UnwindCapture(symbols::CfiUnwinder& unwinder, const unwind::CaptureBuffer& capture,
                      symbols::CfiUnwinder::Mode mode = symbols::CfiUnwinder::Mode::kHybrid);

// Name of the function holding `pc` (pc - 1 for return addresses), "" when dladdr knows none.
std::string NameOf(uintptr_t pc, bool return_address);

// True when every name of `chain` appears in `names`, in this order (others may be between).
bool HasChain(const std::vector<std::string>& names, const std::vector<std::string>& chain);

// The pcs eu-stack reports for thread `tid` of this process (it attaches with ptrace for the
// duration). Empty when eu-stack is missing or failed; *why says why.
std::vector<uintptr_t> EuStackPcs(pid_t tid, std::string* why);

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_CFI_CFI_TEST_UTIL_H_
