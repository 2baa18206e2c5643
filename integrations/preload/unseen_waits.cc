#include "integrations/preload/unseen_waits.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

namespace hangwatch::preload {
namespace {

using Ehdr = ElfW(Ehdr);
using Shdr = ElfW(Shdr);

// All `n` bytes at `offset`, or false.
bool ReadAt(int fd, void* out, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r =
        pread(fd, static_cast<char*>(out) + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// The start of the section-name table, which is read in one piece when it is this small (a Go
// executable's is a few hundred bytes); a name past it is read alone.
struct NameTable {
  char head[2048];
  size_t head_len = 0;
  uint64_t offset = 0, size = 0;
};

// Whether the section whose name is at `name_offset` in the table is called `name`.
bool NameIs(int fd, const NameTable& table, uint64_t name_offset, const char* name) {
  const size_t len = strlen(name) + 1;  // with its NUL
  if (name_offset >= table.size || table.size - name_offset < len) return false;
  if (name_offset + len <= table.head_len) return memcmp(table.head + name_offset, name, len) == 0;
  char other[64];
  if (len > sizeof other || !ReadAt(fd, other, len, table.offset + name_offset)) return false;
  return memcmp(other, name, len) == 0;
}

}  // namespace

bool ElfHasSection(int fd, const char* name) {
  Ehdr eh;
  if (!ReadAt(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_shoff == 0 ||
      eh.e_shentsize != sizeof(Shdr)) {
    return false;
  }
  // Extended numbering: more than 0xff00 sections keep their count and the name table's index in
  // the first section header.
  uint64_t count = eh.e_shnum;
  uint64_t names_index = eh.e_shstrndx;
  if (count == 0 || names_index == SHN_XINDEX) {
    Shdr first;
    if (!ReadAt(fd, &first, sizeof first, eh.e_shoff)) return false;
    if (count == 0) count = first.sh_size;
    if (names_index == SHN_XINDEX) names_index = first.sh_link;
  }
  if (count > 65536 || names_index >= count) return false;
  Shdr names;
  if (!ReadAt(fd, &names, sizeof names, eh.e_shoff + names_index * sizeof(Shdr))) return false;
  NameTable table;
  table.offset = names.sh_offset;
  table.size = names.sh_size;
  table.head_len = table.size < sizeof table.head ? table.size : sizeof table.head;
  if (!ReadAt(fd, table.head, table.head_len, table.offset)) return false;
  Shdr batch[32];  // read 32 headers at a time
  for (uint64_t at = 0; at < count;) {
    const uint64_t n = count - at < 32 ? count - at : 32;
    if (!ReadAt(fd, batch, n * sizeof(Shdr), eh.e_shoff + at * sizeof(Shdr))) return false;
    for (uint64_t i = 0; i < n; ++i) {
      if (batch[i].sh_type != SHT_NULL && NameIs(fd, table, batch[i].sh_name, name)) return true;
    }
    at += n;
  }
  return false;
}

const char* WhyWaitsAreUnseen() {
  const int saved_errno = errno;
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  const bool go = fd >= 0 && ElfHasSection(fd, ".go.buildinfo");
  if (fd >= 0) close(fd);
  errno = saved_errno;
  return go ? "a Go program: its goroutines and its scheduler wait in system calls of their own, "
              "not through libc, so the shim cannot see its event loop"
            : nullptr;
}

}  // namespace hangwatch::preload
