#include "tests/cfi/cfi_test_util.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

namespace hangwatch::testing {

std::string Unwound::ToString() const {
  std::ostringstream out;
  for (size_t i = 0; i < pcs.size(); ++i) {
    out << "  #" << i << " 0x" << std::hex << pcs[i] << std::dec << " "
        << symbols::FrameMethodName(methods[i]) << " " << names[i] << "\n";
  }
  return out.str();
}

std::string NameOf(uintptr_t pc, bool return_address) {
  Dl_info info{};
  const uintptr_t lookup = return_address ? pc - 1 : pc;
  if (dladdr(reinterpret_cast<void*>(lookup), &info) == 0 || info.dli_sname == nullptr) {
    return "";
  }
  return info.dli_sname;
}

Unwound UnwindCapture(symbols::CfiUnwinder& unwinder, const unwind::CaptureBuffer& capture,
                      symbols::CfiUnwinder::Mode mode) {
  symbols::UnwindStart start;
  start.regs = capture.regs;
  start.fp_known = capture.method != SampleMethod::kProc;
  const unwind::MemoryView view = capture.stack_view();
  constexpr size_t kMax = 256;
  uintptr_t frames[kMax];
  symbols::FrameMethod methods[kMax];
  symbols::UnwindResult r = unwinder.Unwind(start, std::span<const unwind::MemoryView>(&view, 1),
                                            frames, methods, kMax, mode);
  Unwound u;
  for (size_t i = 0; i < r.num_frames; ++i) {
    u.pcs.push_back(frames[i]);
    u.methods.push_back(methods[i]);
    u.names.push_back(NameOf(frames[i], i > 0));
  }
  return u;
}

bool HasChain(const std::vector<std::string>& names, const std::vector<std::string>& chain) {
  size_t next = 0;
  for (const std::string& n : names) {
    if (next < chain.size() && n == chain[next]) ++next;
  }
  return next == chain.size();
}

std::vector<uintptr_t> EuStackPcs(pid_t tid, std::string* why) {
  std::vector<uintptr_t> pcs;
  if (access("/usr/bin/eu-stack", X_OK) != 0) {
    *why = "eu-stack not installed";
    return pcs;
  }
  char cmd[128];
  std::snprintf(cmd, sizeof cmd, "/usr/bin/eu-stack -q -p %d 2>&1", static_cast<int>(getpid()));
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd, "r"), pclose);
  if (pipe == nullptr) {
    *why = "popen failed";
    return pcs;
  }
  char line[1024];
  bool in_thread = false;
  std::string all;
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    all += line;
    int t = 0;
    if (std::sscanf(line, "TID %d:", &t) == 1) {
      in_thread = t == tid;
      continue;
    }
    unsigned idx = 0;
    unsigned long long pc = 0;
    if (in_thread && std::sscanf(line, " #%u 0x%llx", &idx, &pc) == 2) {
      pcs.push_back(static_cast<uintptr_t>(pc));
    }
  }
  if (pcs.empty()) *why = "no frames for the thread in eu-stack's output:\n" + all;
  return pcs;
}

}  // namespace hangwatch::testing
