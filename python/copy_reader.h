// CopyReader: a MemoryReader that serves reads from one copy of a range of the interpreter's
// memory, made with a single read of the fallback reader, and sends every other read to the
// fallback. In a capture, the used part of the thread's data stack chunk (where 3.11+ keeps
// its frames) is copied once, so that walking 50 frames costs one system call, not 50.
//
// Allocation-free after construction; Load() and Read() are async-signal-safe when the
// fallback's Read() is (SelfMemoryReader in the agent).
#ifndef HANGWATCH_PYTHON_COPY_READER_H_
#define HANGWATCH_PYTHON_COPY_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "python/memory_reader.h"

namespace hangwatch::python {

class CopyReader final : public MemoryReader {
 public:
  // `fallback` must outlive the reader. Storage for `capacity` bytes is allocated here.
  CopyReader(const MemoryReader& fallback, size_t capacity);

  // Copies [addr, addr + n) (n clamped to the capacity) with one fallback read; false (and no
  // copy kept) when it fails.
  bool Load(uint64_t addr, size_t n);
  // Forgets the copy: every read goes to the fallback.
  void Drop() { size_ = 0; }
  // For a caller that filled storage() itself (one read of several ranges): it now holds
  // [addr, addr + n), n <= capacity.
  unsigned char* storage() { return storage_.get(); }
  void Adopt(uint64_t addr, size_t n) {
    base_ = addr;
    size_ = n <= capacity_ ? n : 0;
  }

  bool Read(uint64_t addr, void* out, size_t n) const override;

  size_t capacity() const { return capacity_; }
  uint64_t copy_base() const { return base_; }
  size_t copy_size() const { return size_; }

 private:
  const MemoryReader& fallback_;
  size_t capacity_;
  std::unique_ptr<unsigned char[]> storage_;
  uint64_t base_ = 0;
  size_t size_ = 0;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_COPY_READER_H_
