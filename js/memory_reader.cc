#include "js/memory_reader.h"

#include <limits.h>
#include <sys/uio.h>

#include <algorithm>

#include "unwind/self_memory.h"

namespace hangwatch::js {
namespace {

bool Wraps(uint64_t addr, size_t n) { return addr == 0 || addr + n < addr; }

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
    const ssize_t got = unwind::ReadSelfV(local, batch, remote, batch);
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

bool ProcessMemoryReader::Read(uint64_t addr, void* out, size_t n) const {
  if (n == 0) return true;
  if (Wraps(addr, n)) return false;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), n};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

}  // namespace hangwatch::js
