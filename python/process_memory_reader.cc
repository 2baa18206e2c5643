#include "python/process_memory_reader.h"

#include <sys/uio.h>

namespace hangwatch::python {

bool ProcessMemoryReader::Read(uint64_t addr, void* out, size_t n) const {
  if (n == 0) return true;
  if (addr == 0 || addr + n < addr) return false;  // null or wrapping: never a valid object
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), n};
  // A partial read (the range crosses into an unmapped page) counts as a failure.
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

}  // namespace hangwatch::python
