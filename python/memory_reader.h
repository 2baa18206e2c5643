// MemoryReader: the one way python/ reads the interpreter's memory. Reading CPython's frames
// means following pointers that another thread may be changing, or that are garbage: every read
// may fail, and a failed read ends what was being read (a truncated stack), never a crash.
//
// Implementations: ProcessMemoryReader (another process, process_vm_readv: `hangwatch
// snapshot`), SelfMemoryReader (this process: the agent), CopyReader (a copy made earlier, the
// other reader behind it). Read() must not allocate, so that the frame-chain reading above it
// can run while a thread is stopped.
#ifndef HANGWATCH_PYTHON_MEMORY_READER_H_
#define HANGWATCH_PYTHON_MEMORY_READER_H_

#include <cstddef>
#include <cstdint>

namespace hangwatch::python {

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies the `n` bytes at target address `addr` to `out`. False when any of them cannot be
  // read (then `out` is unspecified).
  virtual bool Read(uint64_t addr, void* out, size_t n) const = 0;

  // One pointer-sized (8-byte) word; false as Read.
  bool ReadWord(uint64_t addr, uint64_t* out) const { return Read(addr, out, sizeof(*out)); }
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_MEMORY_READER_H_
