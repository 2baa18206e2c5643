// ProcessMemoryReader: MemoryReader over another process's memory (process_vm_readv), for
// `hangwatch snapshot PID`. Needs the same permission as ptrace (PTRACE_MODE_ATTACH).
#ifndef HANGWATCH_PYTHON_PROCESS_MEMORY_READER_H_
#define HANGWATCH_PYTHON_PROCESS_MEMORY_READER_H_

#include <sys/types.h>

#include "python/memory_reader.h"

namespace hangwatch::python {

class ProcessMemoryReader : public MemoryReader {
 public:
  explicit ProcessMemoryReader(pid_t pid) : pid_(pid) {}
  bool Read(uint64_t addr, void* out, size_t n) const override;

 private:
  pid_t pid_;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_PROCESS_MEMORY_READER_H_
