#include "unwind/capture_hook.h"

#include <atomic>

namespace hangwatch::unwind {
namespace {

std::atomic<CaptureHook*> g_hook{nullptr};

}  // namespace

void SetCaptureHook(CaptureHook* hook) { g_hook.store(hook, std::memory_order_release); }

CaptureHook* CurrentCaptureHook() { return g_hook.load(std::memory_order_acquire); }

}  // namespace hangwatch::unwind
