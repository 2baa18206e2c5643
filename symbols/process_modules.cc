#include "symbols/process_modules.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "symbols/elf_file.h"
#include "symbols/regular_file.h"
#include "unwind/proc_files.h"

namespace hangwatch::symbols {
namespace {

uint64_t PageSize() {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<uint64_t>(page) : 4096;
}

constexpr std::string_view kDeleted = " (deleted)";

}  // namespace

std::vector<MapsEntry> ParseProcMaps(std::string_view text) {
  std::vector<MapsEntry> out;
  unwind::ForEachMapsLine(text.data(), text.size(), [&out](const unwind::MapsLine& line) {
    MapsEntry e;
    e.lo = line.lo;
    e.hi = line.hi;
    e.perms.assign(line.perms, line.perms_size);
    e.offset = line.offset;
    e.inode = line.inode;
    e.path.assign(line.path, line.path_size);
    out.push_back(std::move(e));
  });
  return out;
}

namespace {

absl::StatusOr<uint64_t> LoadBias(Elf* elf, const std::string& elf_path, uint64_t map_start,
                                  uint64_t map_offset) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(elf_path, ": no program headers"));
  }
  const uint64_t mask = ~(PageSize() - 1);
  bool found = false;
  uint64_t bias = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    if ((ph.p_offset & mask) != map_offset) continue;
    // Several segments may start in the same file page (lld without separate code); the
    // executable one is what an executable mapping holds.
    if (!found || (ph.p_flags & PF_X) != 0) {
      bias = map_start - (ph.p_vaddr & mask);
      found = true;
      if ((ph.p_flags & PF_X) != 0) break;
    }
  }
  if (!found) {
    return absl::NotFoundError(
        absl::StrFormat("%s: no PT_LOAD segment at file offset 0x%x", elf_path, map_offset));
  }
  return bias;
}

// The fast path for the usual module, an ELF file of this machine's class and byte order: the
// load bias and GNU build-id from the ELF header, the program headers and the PT_NOTE segments,
// read with pread (libelf maps the whole file and sets up every section header first: most of
// the cost of listing a process's modules). False when anything is unusual (another class, no
// matching segment, oversized tables, no build-id found in the notes...): the caller then takes
// the libelf path, which also words the warnings.
bool ReadNativeElf(const std::string& path, uint64_t map_start, uint64_t map_offset, uint64_t* bias,
                   std::string* build_id) {
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  auto file = RegularFile::Open(path);
  if (!file.ok()) return false;
  const int fd = file->fd();
  Ehdr eh;
  if (::pread(fd, &eh, sizeof(eh), 0) != static_cast<ssize_t>(sizeof(eh)) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      eh.e_ident[EI_DATA] !=
          (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB) ||
      eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM ||
      eh.e_phnum > 256) {
    return false;
  }
  Phdr ph[256];
  const ssize_t ph_bytes = static_cast<ssize_t>(eh.e_phnum * sizeof(Phdr));
  if (::pread(fd, ph, static_cast<size_t>(ph_bytes), static_cast<off_t>(eh.e_phoff)) != ph_bytes) {
    return false;
  }
  // As LoadBias below: the PT_LOAD whose page-aligned offset is the mapping's, the executable
  // one when several share that page.
  const uint64_t mask = ~(PageSize() - 1);
  bool found = false;
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type != PT_LOAD || (ph[i].p_offset & mask) != map_offset) continue;
    if (!found || (ph[i].p_flags & PF_X) != 0) {
      *bias = map_start - (ph[i].p_vaddr & mask);
      found = true;
      if ((ph[i].p_flags & PF_X) != 0) break;
    }
  }
  if (!found) return false;
  build_id->clear();
  for (size_t i = 0; i < eh.e_phnum && build_id->empty(); ++i) {
    if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0) continue;
    unsigned char notes[4096];
    const size_t size = std::min<uint64_t>(ph[i].p_filesz, sizeof(notes));
    if (::pread(fd, notes, size, static_cast<off_t>(ph[i].p_offset)) !=
        static_cast<ssize_t>(size)) {
      return false;
    }
    const size_t align = ph[i].p_align == 8 ? 8 : 4;
    auto aligned = [align](uint64_t n) { return (n + align - 1) & ~uint64_t{align - 1}; };
    for (uint64_t at = 0; at + 12 <= size;) {
      uint32_t word[3];  // namesz, descsz, type
      std::memcpy(word, notes + at, sizeof(word));
      const uint64_t name_at = at + 12;
      const uint64_t desc_at = name_at + aligned(word[0]);
      if (desc_at > size || word[1] > size - desc_at) break;
      if (word[2] == NT_GNU_BUILD_ID && word[0] == 4 && word[1] > 0 &&
          std::memcmp(notes + name_at, "GNU", 4) == 0) {
        static constexpr char kHex[] = "0123456789abcdef";
        for (uint64_t k = 0; k < word[1]; ++k) {
          build_id->push_back(kHex[notes[desc_at + k] >> 4]);
          build_id->push_back(kHex[notes[desc_at + k] & 15]);
        }
        break;
      }
      at = desc_at + aligned(word[1]);
    }
  }
  // No build-id note in the segments read (or only in a section): libelf's way looks at the
  // sections too.
  return !build_id->empty();
}

}  // namespace

absl::StatusOr<uint64_t> LoadBiasFromProgramHeaders(const std::string& elf_path, uint64_t map_start,
                                                    uint64_t map_offset) {
  auto file = ElfFile::Open(elf_path);
  if (!file.ok()) return file.status();
  return LoadBias((*file)->elf(), elf_path, map_start, map_offset);
}

absl::StatusOr<ProcessModules> ReadProcessModules(pid_t pid) {
  const std::string maps_path = absl::StrCat("/proc/", pid, "/maps");
  // read(2), not an ifstream: iostreams would set up the locale machinery for one file.
  int fd = ::open(maps_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("no process ", pid));
    return absl::PermissionDeniedError(absl::StrCat(maps_path, ": ", std::strerror(err)));
  }
  std::string text(16384, '\0');
  size_t used = 0;
  for (;;) {
    if (used == text.size()) text.resize(text.size() * 2);
    ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a read error midway keeps what was read (the process may be exiting)
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(used);
  std::vector<MapsEntry> entries = ParseProcMaps(text);
  if (entries.empty()) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " has no mappings (exited?)"));
  }

  ProcessModules result;
  std::vector<Module> modules;
  // Key: (path, inode): a file replaced on disk and mapped again is another module.
  std::map<std::pair<std::string, uint64_t>, size_t> index;
  for (const MapsEntry& e : entries) {
    if (e.perms.size() < 3 || e.perms[2] != 'x' || e.path.empty()) continue;
    const bool is_file = e.path[0] == '/';
    if (!is_file && e.path != "[vdso]") continue;  // [vsyscall], anonymous JIT code...
    auto key = std::make_pair(e.path, e.inode);
    auto it = index.find(key);
    if (it != index.end()) {
      modules[it->second].exec_ranges.push_back({e.lo, e.hi});
      continue;
    }
    Module m;
    m.path = e.path;
    m.exec_ranges.push_back({e.lo, e.hi});
    std::string open_path;
    if (!is_file) {
      m.load_bias = e.lo;  // the vDSO is linked at 0 and has no file to read here
    } else {
      std::string file = e.path;
      bool deleted = file.size() > kDeleted.size() &&
                     file.compare(file.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0;
      if (deleted) file.resize(file.size() - kDeleted.size());
      // The target sees the file through its own root (containers): prefer that view.
      std::string candidates[] = {
          absl::StrCat("/proc/", pid, "/root", file),
          file,
          absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.lo, e.hi),
      };
      for (const std::string& c : candidates) {
        struct stat st;
        if (stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            (e.inode == 0 || static_cast<uint64_t>(st.st_ino) == e.inode)) {
          open_path = c;
          break;
        }
      }
      if (open_path.empty()) {
        result.warnings.push_back(absl::StrCat(e.path, ": the mapped file cannot be opened"));
      } else if (!ReadNativeElf(open_path, e.lo, e.offset, &m.load_bias, &m.build_id)) {
        auto elf = ElfFile::Open(open_path);
        absl::StatusOr<uint64_t> bias =
            elf.ok() ? LoadBias((*elf)->elf(), open_path, e.lo, e.offset) : elf.status();
        if (bias.ok()) {
          m.load_bias = *bias;
          m.build_id = ReadBuildId((*elf)->elf());
        } else {
          // Keep the module (addresses still get module+offset) with the naive bias.
          m.load_bias = e.lo - e.offset;
          result.warnings.push_back(std::string(bias.status().message()));
        }
      }
    }
    index.emplace(key, modules.size());
    modules.push_back(std::move(m));
    result.open_paths.push_back(std::move(open_path));
  }
  result.map = std::make_shared<const ModuleMap>(std::move(modules));
  result.maps_text = std::move(text);
  return result;
}

}  // namespace hangwatch::symbols
