#include "tests/unwind/target_thread.h"

#include <sched.h>

#include <cstdlib>

namespace hangwatch::unwind::testing {

void SpinUntil(const std::atomic<bool>& flag) {
  while (!flag.load(std::memory_order_acquire)) {
    sched_yield();
  }
}

TargetThread::TargetThread(std::function<void(TargetThread*)> body) {
  thread_ = std::thread([this, body = std::move(body)] {
    if (!RegisterCurrentThread(&info_)) {
      std::abort();
    }
    registered_.store(true, std::memory_order_release);
    body(this);
  });
}

TargetThread::~TargetThread() {
  Stop();
  Join();
}

void TargetThread::Join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

const ThreadInfo& TargetThread::WaitReady() {
  SpinUntil(registered_);
  SpinUntil(ready_flag());
  return info_;
}

}  // namespace hangwatch::unwind::testing

// ---- test_functions.h ----
#include <dlfcn.h>
#include <link.h>

#include "tests/unwind/test_functions.h"

namespace hangwatch::unwind::testing {

CodeRange RangeOf(const void* fn) {
  Dl_info info{};
  void* extra = nullptr;
  if (dladdr1(fn, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr ||
      info.dli_saddr == nullptr) {
    return {};
  }
  const auto* sym = static_cast<const ElfW(Sym)*>(extra);
  const auto lo = reinterpret_cast<uintptr_t>(info.dli_saddr);
  return {lo, lo + sym->st_size};
}

}  // namespace hangwatch::unwind::testing
