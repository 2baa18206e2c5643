// Separate debug file lookup (build-id, .gnu_debuglink, beside the binary).
#include "symbols/debug_file_locator.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "symbols/elf_file.h"
#include "symbols/regular_file.h"

namespace hangwatch::symbols {
namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirName(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::vector<std::string> DirsOrDefault(std::vector<std::string> dirs) {
  if (dirs.empty()) dirs.push_back("/usr/lib/debug");
  return dirs;
}

bool BuildIdMatches(const std::string& path, const std::string& build_id,
                    std::vector<std::string>* rejected) {
  auto file = ElfFile::Open(path);
  if (!file.ok()) {
    rejected->push_back(path + " (not a readable ELF file)");
    return false;
  }
  if (build_id.empty()) return true;
  std::string got = ReadBuildId((*file)->elf());
  if (got != build_id) {
    rejected->push_back(path + " (build-id " + (got.empty() ? "none" : got) + ", wanted " +
                        build_id + ")");
    return false;
  }
  return true;
}

// Whether the CRC32 of `path` is `want`; "" when it is, else why not (for the rejected list).
// The size is checked before a byte is read: the CRC reads the whole file.
std::string Crc32Mismatch(const std::string& path, uint32_t want) {
  auto file = RegularFile::Open(path, {.max_bytes = kMaxDebugFileBytes});
  if (!file.ok()) return std::string(file.status().message());
  uLong crc = crc32(0, nullptr, 0);
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(file->fd(), buf, sizeof(buf))) > 0) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf), static_cast<uInt>(n));
  }
  if (n == 0 && static_cast<uint32_t>(crc) == want) return {};
  return path + " (.gnu_debuglink CRC mismatch)";
}

// DIR/.build-id/xx/rest.debug (also DIR/xx/rest.debug, DIR/BUILDID.debug) under each debug
// directory.
class BuildIdDirSource : public DebugFileSource {
 public:
  explicit BuildIdDirSource(std::vector<std::string> dirs)
      : dirs_(DirsOrDefault(std::move(dirs))) {}
  std::string Find(const DebugFileQuery& q, std::vector<std::string>* rejected) override {
    const std::string& build_id = q.build_id;
    if (build_id.size() < 3) return {};
    const std::string head = build_id.substr(0, 2), rest = build_id.substr(2);
    for (const std::string& dir : dirs_) {
      for (const std::string& candidate :
           {absl::StrCat(dir, "/.build-id/", head, "/", rest, ".debug"),
            absl::StrCat(dir, "/", head, "/", rest, ".debug"),
            absl::StrCat(dir, "/", build_id, ".debug")}) {
        if (IsFile(candidate) && BuildIdMatches(candidate, build_id, rejected)) return candidate;
      }
    }
    return {};
  }

 private:
  std::vector<std::string> dirs_;
};

// The file named by the binary's .gnu_debuglink, with its CRC32: beside the binary, in .debug/
// beside it, under each debug directory followed by the binary's (real) directory.
class DebuglinkSource : public DebugFileSource {
 public:
  explicit DebuglinkSource(std::vector<std::string> dirs) : dirs_(DirsOrDefault(std::move(dirs))) {}
  std::string Find(const DebugFileQuery& q, std::vector<std::string>* rejected) override {
    const std::string& binary_path = q.path;
    if (binary_path.empty()) return {};
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
    if (link.empty() || link.find('/') != std::string::npos) return {};
    const std::string dir = DirName(binary_path);
    char real[PATH_MAX];
    std::string real_dir = realpath(binary_path.c_str(), real) ? DirName(real) : dir;
    std::vector<std::string> candidates = {dir + "/" + link, dir + "/.debug/" + link};
    for (const std::string& d : dirs_) candidates.push_back(absl::StrCat(d, real_dir, "/", link));
    for (const std::string& c : candidates) {
      if (!IsFile(c)) continue;
      // The debuglink may name the binary itself (a file with the same name in the same
      // directory): skip it, it is not a separate debug file.
      char a[PATH_MAX], b[PATH_MAX];
      if (realpath(c.c_str(), a) && realpath(binary_path.c_str(), b) && std::strcmp(a, b) == 0) {
        continue;
      }
      std::string mismatch = Crc32Mismatch(c, crc);
      if (mismatch.empty()) return c;
      rejected->push_back(std::move(mismatch));
    }
    return {};
  }

 private:
  std::vector<std::string> dirs_;
};

// BINARY.debug beside the binary.
class BesideBinarySource : public DebugFileSource {
 public:
  std::string Find(const DebugFileQuery& q, std::vector<std::string>* rejected) override {
    if (q.path.empty()) return {};
    std::string beside = q.path + ".debug";
    if (IsFile(beside) && BuildIdMatches(beside, q.build_id, rejected)) return beside;
    return {};
  }
};

// The module's recorded path, when the file there is that very build.
class RecordedPathSource : public DebugFileSource {
 public:
  std::string Find(const DebugFileQuery& q, std::vector<std::string>*) override {
    if (q.path.empty() || q.build_id.empty()) return {};
    if (auto f = ElfFile::Open(q.path); f.ok() && ReadBuildId((*f)->elf()) == q.build_id) {
      return q.path;
    }
    return {};
  }
};

// Files given on the command line (--search), or the files of directories given there (not
// recursive), by build-id; read once, at the first lookup.
class SearchPathSource : public DebugFileSource {
 public:
  explicit SearchPathSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}
  std::string Find(const DebugFileQuery& q, std::vector<std::string>*) override {
    if (!scanned_) Scan();
    auto it = by_build_id_.find(q.build_id);
    return it != by_build_id_.end() ? it->second : std::string();
  }

 private:
  void Scan() {
    scanned_ = true;
    auto consider = [&](const std::string& p) {
      auto f = ElfFile::Open(p);
      if (!f.ok()) return;
      std::string id = ReadBuildId((*f)->elf());
      // Prefer a file with DWARF over one without for the same build-id.
      if (!id.empty() && (by_build_id_.count(id) == 0 || HasDwarf(p))) by_build_id_[id] = p;
    };
    for (const std::string& p : paths_) {
      if (!IsDir(p)) {
        consider(p);
        continue;
      }
      if (DIR* d = opendir(p.c_str())) {
        while (dirent* e = readdir(d)) {
          if (e->d_name[0] != '.') consider(p + "/" + e->d_name);
        }
        closedir(d);
      }
    }
  }

  std::vector<std::string> paths_;
  bool scanned_ = false;
  std::map<std::string, std::string> by_build_id_;
};

// The first answer of a chain.
std::string FindIn(const std::vector<std::shared_ptr<DebugFileSource>>& chain,
                   const DebugFileQuery& query, std::vector<std::string>* rejected) {
  for (const auto& source : chain) {
    if (std::string found = source->Find(query, rejected); !found.empty()) return found;
  }
  return {};
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

DebugFileLocator::DebugFileLocator(DebugFileLocatorOptions options) {
  auto build_id_dirs = std::make_shared<BuildIdDirSource>(options.debug_dirs);
  separate_debug_chain_ = {build_id_dirs, std::make_shared<DebuglinkSource>(options.debug_dirs),
                           std::make_shared<BesideBinarySource>()};
  build_id_chain_ = {std::make_shared<RecordedPathSource>(),
                     std::make_shared<SearchPathSource>(std::move(options.search_paths)),
                     build_id_dirs};
  remote_chain_ = std::move(options.remote);
}

DebugFileLocator::~DebugFileLocator() = default;

std::string DebugFileLocator::FindSeparateDebugFile(const std::string& binary_path,
                                                    const std::string& build_id,
                                                    std::vector<std::string>* rejected) {
  std::string found = FindIn(separate_debug_chain_, {build_id, binary_path}, rejected);
  if (found.empty()) found = FindIn(remote_chain_, {build_id, binary_path}, rejected);
  return found;
}

std::string DebugFileLocator::FindDwarf(const std::string& binary_path, const std::string& build_id,
                                        std::vector<std::string>* rejected) {
  std::string found = FindIn(separate_debug_chain_, {build_id, binary_path}, rejected);
  if (found.empty() && HasDwarf(binary_path)) found = binary_path;
  if (found.empty()) found = FindIn(remote_chain_, {build_id, binary_path}, rejected);
  return found;
}

std::string DebugFileLocator::FindByBuildId(const std::string& build_id,
                                            const std::string& module_path,
                                            std::vector<std::string>* rejected) {
  std::string found = FindIn(build_id_chain_, {build_id, module_path}, rejected);
  if (found.empty()) found = FindIn(remote_chain_, {build_id, module_path}, rejected);
  return found;
}

std::string FindSeparateDebugFile(const std::string& binary_path, const std::string& build_id,
                                  DebugFileSearch* search) {
  DebugFileLocator locator({search->debug_dirs, {}});
  return locator.FindSeparateDebugFile(binary_path, build_id, &search->rejected);
}

std::string FindDebugFileByBuildId(const std::string& build_id, DebugFileSearch* search) {
  return BuildIdDirSource(search->debug_dirs).Find({build_id, {}}, &search->rejected);
}

}  // namespace hangwatch::symbols
