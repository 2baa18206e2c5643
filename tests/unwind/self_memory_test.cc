#include "unwind/self_memory.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/deny_syscall.h"

namespace hangwatch::unwind {
namespace {

uint64_t g_word = 0x0123456789abcdef;

// Two pages, the second unmapped: reads that cross into it stop at the boundary.
class TwoPages {
 public:
  TwoPages() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < page_; ++i) base_[i] = static_cast<unsigned char>(i * 7);
    munmap(base_ + page_, page_);
  }
  ~TwoPages() {
    if (base_ != nullptr) munmap(base_, page_);
  }
  unsigned char* base() const { return base_; }
  size_t page() const { return page_; }

 private:
  unsigned char* base_ = nullptr;
  size_t page_ = 0;
};

// The checks every method must pass; 0 when they do, else the number of the first that failed
// (they also run in forked children, which report it as their exit status).
int CheckReads() {
  uint64_t out = 0;
  if (!ReadSelf(reinterpret_cast<uintptr_t>(&g_word), &out, sizeof(out)) || out != g_word) return 1;
  const uint64_t on_stack = 0xfeedfacecafebeef;
  if (!ReadSelf(reinterpret_cast<uintptr_t>(&on_stack), &out, sizeof(out)) || out != on_stack) {
    return 2;
  }
  std::unique_ptr<uint64_t> heap(new uint64_t(42));
  if (!ReadSelf(reinterpret_cast<uintptr_t>(heap.get()), &out, sizeof(out)) || out != 42) return 3;
  TwoPages pages;
  if (pages.base() == nullptr) return 4;
  unsigned char* unmapped = pages.base() + pages.page();
  // Unmapped: a failed read, not a signal.
  if (ReadSelf(reinterpret_cast<uintptr_t>(unmapped), &out, sizeof(out))) return 5;
  if (ReadSelf(0, &out, sizeof(out))) return 6;
  // 16 bytes before the boundary and 16 after: the first 16 only.
  unsigned char buf[32] = {};
  iovec local{buf, sizeof(buf)};
  iovec remote{unmapped - 16, sizeof(buf)};
  if (ReadSelfV(&local, 1, &remote, 1) != 16) return 7;
  if (std::memcmp(buf, unmapped - 16, 16) != 0) return 8;
  // Scatter and gather with different splits on each side: the bytes in order.
  unsigned char a[5], b[7], c[4];
  iovec locals[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {c, sizeof(c)}};
  iovec remotes[2] = {{pages.base() + 100, 9}, {pages.base() + 300, 7}};
  if (ReadSelfV(locals, 3, remotes, 2) != 16) return 9;
  unsigned char joined[16];
  std::memcpy(joined, a, 5);
  std::memcpy(joined + 5, b, 7);
  std::memcpy(joined + 12, c, 4);
  if (std::memcmp(joined, pages.base() + 100, 9) != 0) return 10;
  if (std::memcmp(joined + 9, pages.base() + 300, 7) != 0) return 11;
  // Nothing asked, nothing read (not a failure).
  if (ReadSelfV(&local, 0, &remote, 0) != 0) return 12;
  return 0;
}

// Runs `body` in a forked child; its exit status (or 128 + the signal that killed it).
template <typename F>
int InChild(F body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(SelfMemory, ReadsItsOwnMemoryAndFailsCleanlyOnUnmappedAddresses) {
  const SelfMemoryMethod method = PrepareSelfMemory();
  ASSERT_NE(method, SelfMemoryMethod::kNone) << std::strerror(errno);
  EXPECT_EQ(CheckReads(), 0) << "with " << SelfMemoryMethodName(method);
}

TEST(SelfMemory, WhereProcessVmReadvIsRefusedProcSelfMemReadsTheSame) {
  iovec probe_local{nullptr, 0};
  if (process_vm_readv(getpid(), &probe_local, 0, &probe_local, 0, 0) < 0 && errno == ENOSYS) {
    // qemu-user: the test above already read through /proc/self/mem.
    ASSERT_EQ(PrepareSelfMemory(), SelfMemoryMethod::kProcSelfMem);
    GTEST_SKIP() << "process_vm_readv is refused here already: the test above used the fallback";
  }
  const int status = InChild([] {
    if (!testing::DenySyscall(SYS_process_vm_readv, ENOSYS)) return 100;
    // The refusal is real, and the method chosen after it is the fallback.
    uint64_t out = 0;
    iovec local{&out, sizeof(out)};
    iovec remote{&g_word, sizeof(g_word)};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != -1 || errno != ENOSYS) return 101;
    if (PrepareSelfMemory() != SelfMemoryMethod::kProcSelfMem) return 102;
    if (const int failed = CheckReads(); failed != 0) return failed;
    // A forked child's inherited descriptor would read its parent's memory: its reads fail
    // (never the parent's word) until it chooses afresh.
    g_word = 1;
    return InChild([] {
      g_word = 2;  // the grandchild's own copy
      uint64_t value = 0;
      if (ReadSelf(reinterpret_cast<uintptr_t>(&g_word), &value, sizeof(value))) {
        return value == 1 ? 106 : 107;  // 106: the parent's memory
      }
      if (PrepareSelfMemory() != SelfMemoryMethod::kProcSelfMem) return 103;
      if (!ReadSelf(reinterpret_cast<uintptr_t>(&g_word), &value, sizeof(value))) return 104;
      return value == 2 ? 0 : 105;
    });
  });
  EXPECT_EQ(status, 0);
}

TEST(SelfMemory, AForkedChildReadsItsOwnMemory) {
  const SelfMemoryMethod parent = PrepareSelfMemory();
  ASSERT_NE(parent, SelfMemoryMethod::kNone);
  const uint64_t before = g_word;
  const int status = InChild([parent] {
    g_word = 7;
    uint64_t value = 0;
    // With process_vm_readv, at once: the pid the parent chose for is not used. (With the
    // fallback, under qemu-user, the child's reads fail until it prepares; checked above.)
    if (parent == SelfMemoryMethod::kProcessVmReadv &&
        (!ReadSelf(reinterpret_cast<uintptr_t>(&g_word), &value, sizeof(value)) || value != 7)) {
      return 103;
    }
    if (PrepareSelfMemory() == SelfMemoryMethod::kNone) return 100;
    if (!ReadSelf(reinterpret_cast<uintptr_t>(&g_word), &value, sizeof(value))) return 101;
    return value == 7 ? CheckReads() : 102;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(g_word, before);
}

}  // namespace
}  // namespace hangwatch::unwind
