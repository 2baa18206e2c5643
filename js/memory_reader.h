// MemoryReader: the one way js/ reads V8's heap and frames. Every object js/ follows may be
// garbage (a stale slot, an object the GC moved), so every read may fail, and a failed read ends
// what was being read (an unnamed frame), never a crash.
//
// Implementations: SelfMemoryReader (this process, through unwind/self_memory.h: the agent),
// ProcessMemoryReader (another process, process_vm_readv: tests and out-of-process readers), and
// the tests' fakes. ReadV reads several ranges at once (one system call for the self reader);
// the default reads them one by one.
#ifndef HANGWATCH_JS_MEMORY_READER_H_
#define HANGWATCH_JS_MEMORY_READER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace hangwatch::js {

// One range of a ReadV: `size` bytes at target address `addr` into `out`.
struct ReadRange {
  uint64_t addr = 0;
  void* out = nullptr;
  size_t size = 0;
};

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies the `n` bytes at `addr` to `out`; false when any of them cannot be read.
  virtual bool Read(uint64_t addr, void* out, size_t n) const = 0;
  // Reads ranges[0..count) and returns how many of the first ones were read whole (a range
  // that fails may end the batch early; later ones are then not read).
  virtual size_t ReadV(const ReadRange* ranges, size_t count) const;

  bool ReadWord(uint64_t addr, uint64_t* out) const { return Read(addr, out, sizeof(*out)); }
};

// This process's memory: unwind::ReadSelf / ReadSelfV (process_vm_readv on the own pid, or
// /proc/self/mem where that is refused). Read() is async-signal-safe.
class SelfMemoryReader final : public MemoryReader {
 public:
  bool Read(uint64_t addr, void* out, size_t n) const override;
  size_t ReadV(const ReadRange* ranges, size_t count) const override;
};

// Another process's memory (process_vm_readv; the permission of ptrace).
class ProcessMemoryReader final : public MemoryReader {
 public:
  explicit ProcessMemoryReader(pid_t pid) : pid_(pid) {}
  bool Read(uint64_t addr, void* out, size_t n) const override;
  size_t ReadV(const ReadRange* ranges, size_t count) const override;

 private:
  pid_t pid_;
};

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_MEMORY_READER_H_
