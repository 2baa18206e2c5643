// libFuzzer target: CfiUnwinder (symbols/cfi_unwinder.h) on a hostile copy of a stack: the
// registers and stack bytes are the input, the CFI is this binary's own and its libraries'.
// A copied stack is the target thread's memory, which the program may have filled with
// anything: every walk must end cleanly, inside the copy.
//
// So that mutations stay meaningful across runs (and ASLR), words of the input may be relative:
//   0xC0DE_MM_OOOOOOOOOO  offset O in module M (its index in this process's module map)
//   0x57AC_OOOOOOOOOOOO   offset O into the stack copy
// and are turned into addresses before the walk; other words are taken as they are. Input:
// one flag byte (bit 0: the frame pointer is known, bit 1: CFI only), pc, sp, fp, lr (8 bytes
// each), then the stack copy. Seeds: this binary's own stack, captured a few calls deep with
// getcontext and made relative (HANGWATCH_FUZZ_WRITE_SEEDS=DIR).
#include <pthread.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "symbols/cfi_unwinder.h"
#include "symbols/module_map.h"
#include "unwind/memory_view.h"

namespace {

using hangwatch::symbols::CfiUnwinder;

constexpr uint64_t kModuleTag = 0xC0DE;
constexpr uint64_t kStackTag = 0x57AC;
constexpr uintptr_t kStackBase = 0x7ffc12340000;  // where the copy says it was
constexpr size_t kMaxFrames = 64;

uintptr_t Decode(uint64_t w, const hangwatch::symbols::ModuleMap& map) {
  const uint64_t tag = w >> 48;
  if (tag == kStackTag) return kStackBase + (w & 0xffffffffffff);
  if (tag == kModuleTag) {
    const size_t index = (w >> 40) & 0xff;
    const auto modules = map.modules();
    if (index < modules.size()) return modules[index].load_bias + (w & 0xffffffffff);
  }
  return static_cast<uintptr_t>(w);
}

uint64_t Encode(uintptr_t w, uintptr_t sp, size_t stack_bytes,
                const hangwatch::symbols::ModuleMap& map) {
  if (w >= sp && w - sp < stack_bytes) return kStackTag << 48 | (w - sp);
  const auto found = map.Find(w);
  if (found.module != nullptr) {
    const size_t index = static_cast<size_t>(found.module - map.modules().data());
    if (index < 256)
      return kModuleTag << 48 | uint64_t{index} << 40 | (w - found.module->load_bias);
  }
  return w;
}

// Stack words, read below any red zone the sanitizer put around the locals of the callers.
__attribute__((no_sanitize("address"), noinline)) uintptr_t ReadStackWord(uintptr_t addr) {
  return *reinterpret_cast<volatile const uintptr_t*>(addr);
}

CfiUnwinder& Unwinder() {
  static CfiUnwinder* unwinder = [] {
    auto u = CfiUnwinder::ForSelf();
    if (!u.ok()) {
      std::fprintf(stderr, "cfi_unwinder_fuzzer: %s\n", u.status().ToString().c_str());
      std::abort();
    }
    return u->release();
  }();
  return *unwinder;
}

// Decodes the input, unwinds it and checks what came out.
hangwatch::symbols::UnwindResult UnwindInput(const uint8_t* data, size_t size) {
  const auto map = hangwatch::symbols::CurrentModuleMap();
  hangwatch::fuzz::InputReader in(data, size);
  const uint64_t flags = in.Take(1);
  hangwatch::symbols::UnwindStart start;
  start.fp_known = (flags & 1) != 0;
  start.regs.pc = Decode(in.Take(8), *map);
  start.regs.sp = Decode(in.Take(8), *map);
  start.regs.fp = Decode(in.Take(8), *map);
  start.regs.lr = Decode(in.Take(8), *map);
  const std::string_view rest = in.Rest();
  std::vector<unsigned char> stack(rest.size() & ~size_t{7});
  for (size_t at = 0; at < stack.size(); at += 8) {
    uint64_t w;
    std::memcpy(&w, rest.data() + at, 8);
    w = Decode(w, *map);
    std::memcpy(stack.data() + at, &w, 8);
  }
  const hangwatch::unwind::MemoryView view{kStackBase, stack.size(), stack.data()};
  uintptr_t frames[kMaxFrames];
  hangwatch::symbols::FrameMethod methods[kMaxFrames];
  const auto result =
      Unwinder().Unwind(start, {&view, 1}, frames, methods, kMaxFrames,
                        flags & 2 ? CfiUnwinder::Mode::kCfiOnly : CfiUnwinder::Mode::kHybrid);
  if (result.num_frames > kMaxFrames || result.cfi_frames + result.fp_frames > result.num_frames) {
    __builtin_trap();
  }
  if (result.num_frames > 0 && frames[0] != start.regs.pc) __builtin_trap();
  for (size_t i = 0; i < result.num_frames; ++i) {
    if (methods[i] == hangwatch::symbols::FrameMethod::kUnknown) __builtin_trap();
  }
  return result;
}

void WriteSeed(const std::string& path, bool cfi_only) {
  ucontext_t uc;
  getcontext(&uc);
#if defined(__x86_64__)
  const uintptr_t pc = uc.uc_mcontext.gregs[REG_RIP], sp = uc.uc_mcontext.gregs[REG_RSP],
                  fp = uc.uc_mcontext.gregs[REG_RBP], lr = 0;
#elif defined(__aarch64__)
  const uintptr_t pc = uc.uc_mcontext.pc, sp = uc.uc_mcontext.sp, fp = uc.uc_mcontext.regs[29],
                  lr = uc.uc_mcontext.regs[30];
#endif
  pthread_attr_t attr;
  void* lo = nullptr;
  size_t stack_size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
      pthread_attr_getstack(&attr, &lo, &stack_size) != 0) {
    std::abort();
  }
  pthread_attr_destroy(&attr);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(lo) + stack_size;
  const size_t bytes = std::min<size_t>(16 << 10, hi - sp) & ~size_t{7};
  const auto map = hangwatch::symbols::CurrentModuleMap();
  std::string seed(1, static_cast<char>(1 | (cfi_only ? 2 : 0)));
  auto put = [&](uint64_t w) { seed.append(reinterpret_cast<const char*>(&w), sizeof w); };
  for (uintptr_t reg : {pc, sp, fp, lr}) put(Encode(reg, sp, bytes, *map));
  for (size_t at = 0; at < bytes; at += 8) put(Encode(ReadStackWord(sp + at), sp, bytes, *map));
  hangwatch::fuzz::WriteFile(path, seed);
  // The seed must unwind through the calls above it with CFI, or the relative encoding (or the
  // capture) is wrong and the fuzzing would start from nothing.
  const auto result = UnwindInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
  if (result.num_frames < 5 || result.cfi_frames == 0) {
    std::fprintf(stderr, "cfi_unwinder_fuzzer: the seed %s unwinds to %zu frames (%zu by CFI)\n",
                 path.c_str(), result.num_frames, result.cfi_frames);
    std::abort();
  }
}

// A few frames of this binary above the capture.
[[gnu::noinline]] void Deeper(const std::string& dir, int depth) {
  if (depth > 0) {
    Deeper(dir, depth - 1);
    asm volatile("");  // not a tail call
    return;
  }
  WriteSeed(dir + "/stack-hybrid", false);
  WriteSeed(dir + "/stack-cfi", true);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hangwatch::fuzz::WriteSeedsIfAsked([](const std::string& dir) { Deeper(dir, 3); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)UnwindInput(data, size);
  return 0;
}
