// MemoryView: a bounds-checked window on one contiguous range of another thread's memory.
//
// The same frame walker runs over the live stack (inside the signal handler) and over a copy of
// it (on the watchdog thread, later): both are a MemoryView whose `base` is the address in the
// target's address space and whose `data` is where those bytes can be read now.
#ifndef HANGWATCH_UNWIND_MEMORY_VIEW_H_
#define HANGWATCH_UNWIND_MEMORY_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hangwatch::unwind {

struct MemoryView {
  uintptr_t base = 0;  // address, in the target, of data[0]
  size_t size = 0;     // bytes readable from data
  const unsigned char* data = nullptr;

  constexpr bool Contains(uintptr_t addr, size_t len) const {
    return addr >= base && len <= size && addr - base <= size - len;
  }

  // Reads one pointer-sized word at target address `addr`. Returns false, without touching
  // memory, when the word is not entirely inside the view. Async-signal-safe.
  bool ReadWord(uintptr_t addr, uintptr_t* out) const {
    if (!Contains(addr, sizeof(uintptr_t))) {
      return false;
    }
    std::memcpy(out, data + (addr - base), sizeof(uintptr_t));
    return true;
  }
};

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_MEMORY_VIEW_H_
