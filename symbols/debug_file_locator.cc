// Separate debug file lookup (build-id, .gnu_debuglink, beside the binary).
#include "symbols/debug_file_locator.h"

#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include "symbols/elf_file.h"

namespace hangwatch::symbols {
namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string DirName(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::vector<std::string> Dirs(const DebugFileSearch& s) {
  if (!s.debug_dirs.empty()) return s.debug_dirs;
  return {"/usr/lib/debug"};
}

bool BuildIdMatches(const std::string& path, const std::string& build_id, DebugFileSearch* search) {
  auto file = ElfFile::Open(path);
  if (!file.ok()) {
    search->rejected.push_back(path + " (not a readable ELF file)");
    return false;
  }
  if (build_id.empty()) return true;
  std::string got = ReadBuildId((*file)->elf());
  if (got != build_id) {
    search->rejected.push_back(path + " (build-id " + (got.empty() ? "none" : got) + ", wanted " +
                               build_id + ")");
    return false;
  }
  return true;
}

bool Crc32Matches(const std::string& path, uint32_t want) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uLong crc = crc32(0, nullptr, 0);
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf), static_cast<uInt>(n));
  }
  ::close(fd);
  return n == 0 && static_cast<uint32_t>(crc) == want;
}

}  // namespace

bool HasDwarf(const std::string& path) {
  auto file = ElfFile::Open(path);
  if (!file.ok()) return false;
  Elf* elf = (*file)->elf();
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS || shdr.sh_size == 0) {
      continue;
    }
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name != nullptr &&
        (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) {
      return true;
    }
  }
  return false;
}

std::string FindDebugFileByBuildId(const std::string& build_id, DebugFileSearch* search) {
  if (build_id.size() < 3) return {};
  const std::string head = build_id.substr(0, 2), rest = build_id.substr(2);
  for (const std::string& dir : Dirs(*search)) {
    for (const std::string& candidate :
         {dir + "/.build-id/" + head + "/" + rest + ".debug",
          dir + "/" + head + "/" + rest + ".debug", dir + "/" + build_id + ".debug"}) {
      if (IsFile(candidate) && BuildIdMatches(candidate, build_id, search)) return candidate;
    }
  }
  return {};
}

std::string FindSeparateDebugFile(const std::string& binary_path, const std::string& build_id,
                                  DebugFileSearch* search) {
  if (std::string by_id = FindDebugFileByBuildId(build_id, search); !by_id.empty()) return by_id;

  std::string link;
  uint32_t crc = 0;
  {
    auto file = ElfFile::Open(binary_path);
    if (!file.ok()) return {};
    std::string_view raw = SectionBytes((*file)->elf(), ".gnu_debuglink");
    size_t end = raw.find('\0');
    if (end != std::string_view::npos && end > 0) {
      link = std::string(raw.substr(0, end));
      size_t crc_at = (end + 4) & ~size_t{3};
      if (crc_at + 4 <= raw.size()) std::memcpy(&crc, raw.data() + crc_at, 4);
    }
  }
  const std::string dir = DirName(binary_path);
  if (!link.empty() && link.find('/') == std::string::npos) {
    char real[PATH_MAX];
    std::string real_dir = realpath(binary_path.c_str(), real) ? DirName(real) : dir;
    std::vector<std::string> candidates = {dir + "/" + link, dir + "/.debug/" + link};
    for (const std::string& d : Dirs(*search)) candidates.push_back(d + real_dir + "/" + link);
    for (const std::string& c : candidates) {
      if (!IsFile(c)) continue;
      // The debuglink may name the binary itself (a file with the same name in the same
      // directory): skip it, it is not a separate debug file.
      char a[PATH_MAX], b[PATH_MAX];
      if (realpath(c.c_str(), a) && realpath(binary_path.c_str(), b) && std::strcmp(a, b) == 0) {
        continue;
      }
      if (Crc32Matches(c, crc)) return c;
      search->rejected.push_back(c + " (.gnu_debuglink CRC mismatch)");
    }
  }
  const std::string beside = binary_path + ".debug";
  if (IsFile(beside) && BuildIdMatches(beside, build_id, search)) return beside;
  return {};
}

}  // namespace hangwatch::symbols
