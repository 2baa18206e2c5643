#include "cause/call_memory.h"

#include <algorithm>
#include <iterator>

#include "cause/syscall_decode.h"

namespace hangwatch::cause {

RestartTold CallMemory::Resolve(pid_t tid, unwind::TaskSyscall* sys) {
  if (sys->fields != 9 || sys->nr < 0) return RestartTold::kNotRestarted;
  Seen* mine = nullptr;
  for (Seen& s : seen_) {
    if (s.tid == tid) mine = &s;
  }
  if (!IsRestartSyscall(sys->nr)) {
    if (mine == nullptr) {
      mine = &seen_[next_];
      next_ = (next_ + 1) % kThreads;
      mine->tid = tid;
    }
    mine->nr = sys->nr;
    std::copy(std::begin(sys->args), std::end(sys->args), mine->args);
    return RestartTold::kNotRestarted;
  }
  // The kernel restarts a call with the registers it was entered with: the same arguments say
  // it is the same wait, still going on.
  if (mine != nullptr && mine->nr >= 0 &&
      std::equal(std::begin(mine->args), std::end(mine->args), sys->args)) {
    sys->nr = mine->nr;
    return RestartTold::kSeenBefore;
  }
  return TellRestartedCall(0, tid, sys) ? RestartTold::kKernelWait : RestartTold::kUnknown;
}

void CallMemory::Forget() {
  for (Seen& s : seen_) s = Seen{};
  next_ = 0;
}

}  // namespace hangwatch::cause
