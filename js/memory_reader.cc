#include "js/memory_reader.h"

#include <limits.h>
#include <sys/uio.h>

#include <algorithm>

#include "unwind/self_memory.h"

namespace hangwatch::js {
namespace {

bool Wraps(uint64_t addr, size_t n) { return addr == 0 || addr + n < addr; }

// Reads ranges[0..count) in batches of iovecs through `readv` (process_vm_readv's contract: the
// bytes copied, stopping at the first that cannot be read).
template <typename ReadvFn>
size_t BatchedReadV(const ReadRange* ranges, size_t count, ReadvFn readv) {
  // One system call per IOV_MAX ranges; the kernel stops at the first byte it cannot read, so
  // the ranges before it are whole.
  constexpr size_t kBatch = 64;
  iovec local[kBatch];
  iovec remote[kBatch];
  size_t done = 0;
  while (done < count) {
    size_t batch = std::min({count - done, kBatch, static_cast<size_t>(IOV_MAX)});
    bool stop = false;
    for (size_t i = 0; i < batch; ++i) {
      const ReadRange& r = ranges[done + i];
      if (Wraps(r.addr, r.size)) {  // never a valid object: the batch ends before it
        batch = i;
        stop = true;
        break;
      }
      local[i] = iovec{r.out, r.size};
      remote[i] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(r.addr)), r.size};
    }
    if (batch == 0) return done;
    const ssize_t got = readv(local, batch, remote, batch);
    size_t left = got > 0 ? static_cast<size_t>(got) : 0;
    for (size_t i = 0; i < batch; ++i) {
      if (left < ranges[done + i].size) return done + i;
      left -= ranges[done + i].size;
    }
    done += batch;
    if (stop) return done;
  }
  return done;
}

}  // namespace

size_t MemoryReader::ReadV(const ReadRange* ranges, size_t count) const {
  for (size_t i = 0; i < count; ++i) {
    if (!Read(ranges[i].addr, ranges[i].out, ranges[i].size)) return i;
  }
  return count;
}

bool SelfMemoryReader::Read(uint64_t addr, void* out, size_t n) const {
  if (n == 0) return true;
  if (Wraps(addr, n)) return false;
  return unwind::ReadSelf(static_cast<uintptr_t>(addr), out, n);
}

size_t SelfMemoryReader::ReadV(const ReadRange* ranges, size_t count) const {
  return BatchedReadV(ranges, count, [](const iovec* l, size_t ln, const iovec* r, size_t rn) {
    return unwind::ReadSelfV(l, ln, r, rn);
  });
}

bool ProcessMemoryReader::Read(uint64_t addr, void* out, size_t n) const {
  if (n == 0) return true;
  if (Wraps(addr, n)) return false;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), n};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

size_t ProcessMemoryReader::ReadV(const ReadRange* ranges, size_t count) const {
  const pid_t pid = pid_;
  return BatchedReadV(ranges, count, [pid](const iovec* l, size_t ln, const iovec* r, size_t rn) {
    return process_vm_readv(pid, l, ln, r, rn, 0);
  });
}

}  // namespace hangwatch::js
