#include "python/copy_reader.h"

#include <cstring>

namespace hangwatch::python {

CopyReader::CopyReader(const MemoryReader& fallback, size_t capacity)
    : fallback_(fallback),
      capacity_(capacity),
      storage_(new unsigned char[capacity > 0 ? capacity : 1]) {}

bool CopyReader::Load(uint64_t addr, size_t n) {
  size_ = 0;
  if (n > capacity_) n = capacity_;
  if (n == 0 || !fallback_.Read(addr, storage_.get(), n)) return false;
  base_ = addr;
  size_ = n;
  return true;
}

bool CopyReader::Read(uint64_t addr, void* out, size_t n) const {
  if (size_ != 0 && addr >= base_ && addr - base_ <= size_ && n <= size_ - (addr - base_)) {
    std::memcpy(out, storage_.get() + (addr - base_), n);
    return true;
  }
  return fallback_.Read(addr, out, n);
}

}  // namespace hangwatch::python
