// SelfMemoryReader: MemoryReader over this process's own memory (unwind/self_memory.h:
// process_vm_readv on the own pid, or pread of /proc/self/mem where that call is refused), for
// the agent's reading of its own interpreter. Read() is async-signal-safe.
#ifndef HANGWATCH_PYTHON_SELF_MEMORY_READER_H_
#define HANGWATCH_PYTHON_SELF_MEMORY_READER_H_

#include <cstddef>
#include <cstdint>

#include "python/memory_reader.h"
#include "unwind/self_memory.h"

namespace hangwatch::python {

class SelfMemoryReader final : public MemoryReader {
 public:
  bool Read(uint64_t addr, void* out, size_t n) const override {
    return unwind::ReadSelf(static_cast<uintptr_t>(addr), out, n);
  }
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_SELF_MEMORY_READER_H_
