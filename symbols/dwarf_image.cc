// DwarfImage: mapping, section inflation (zlib, zstd), per-thread handles.
#include "symbols/dwarf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "symbols/regular_file.h"

namespace hangwatch::symbols {
namespace {

// Refuse decompression bombs: no section inflates past this, nor past kMaxRatio x its size.
constexpr uint64_t kMaxInflatedSection = 1ull << 30;
constexpr uint64_t kMaxRatio = 2048;

}  // namespace

absl::StatusOr<std::unique_ptr<DwarfImage>> DwarfImage::Open(const std::string& path) {
  ElfLibraryInit();
  auto file = RegularFile::Open(path, {.max_bytes = kMaxDebugFileBytes});
  if (!file.ok()) return file.status();
  const struct stat& st = file->stat();
  if (st.st_size < static_cast<off_t>(EI_NIDENT)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ELF file (too short)"));
  }
  // Private and writable: libelf may convert data in place; nothing reaches the file.
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE,
                 file->fd(), 0);
  if (m == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  auto image = std::unique_ptr<DwarfImage>(new DwarfImage);
  image->path_ = path;
  image->mapping_ = m;
  image->data_ = static_cast<char*>(m);
  image->size_ = static_cast<size_t>(st.st_size);
  if (std::memcmp(image->data_, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ELF file"));
  }
  if (absl::Status s = image->InflateCompressedSections(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  return image;
}

DwarfImage::~DwarfImage() {
  if (mapping_ != nullptr) munmap(mapping_, size_);
}

ElfHandle DwarfImage::NewElf() const {
  char* bytes = copy_.empty() ? data_ : const_cast<char*>(copy_.data());
  const size_t size = copy_.empty() ? size_ : copy_.size();
  return ElfHandle(elf_memory(bytes, size));
}

DwarfHandle DwarfImage::NewDwarf(Elf* elf) {
  if (elf == nullptr) return nullptr;
  return DwarfHandle(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
}

std::string_view DwarfImage::Section(Elf* elf, std::string_view name) const {
  const char* bytes = copy_.empty() ? data_ : copy_.data();
  const size_t size = copy_.empty() ? size_ : copy_.size();
  size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (n == nullptr || name != n) continue;
    if (shdr.sh_type == SHT_NOBITS || (shdr.sh_flags & SHF_COMPRESSED) != 0 ||
        shdr.sh_offset > size || shdr.sh_size > size - shdr.sh_offset) {
      return {};
    }
    return std::string_view(bytes + shdr.sh_offset, shdr.sh_size);
  }
  return {};
}

absl::Status DwarfImage::InflateCompressedSections() {
  ElfHandle elf = NewElf();
  if (elf == nullptr || elf_kind(elf.get()) != ELF_K_ELF) {
    return absl::InvalidArgumentError("not an ELF file");
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) {
    return absl::DataLossError(absl::StrCat("bad ELF header: ", elf_errmsg(-1)));
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf.get(), &shstrndx) != 0) return absl::OkStatus();  // no sections

  struct Compressed {
    size_t index;
    uint64_t offset, size;  // of the compressed bytes (after the Chdr)
    uint32_t type;
    uint64_t inflated, align;
  };
  std::vector<Compressed> compressed;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf.get(), shstrndx, shdr.sh_name);
    if (name == nullptr ||
        !(absl::StartsWith(name, ".debug_") || absl::StartsWith(name, ".zdebug_"))) {
      continue;
    }
    debug_bytes_on_disk_ += shdr.sh_size;
    if ((shdr.sh_flags & SHF_COMPRESSED) == 0) {
      debug_bytes_ += shdr.sh_size;
      continue;
    }
    if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
        shdr.sh_size < sizeof(Elf64_Chdr) || shdr.sh_offset > size_ ||
        shdr.sh_size > size_ - shdr.sh_offset) {
      return absl::DataLossError(absl::StrCat("unsupported or corrupt compressed section ", name));
    }
    Elf64_Chdr chdr;
    std::memcpy(&chdr, data_ + shdr.sh_offset, sizeof(chdr));
    const uint64_t payload = shdr.sh_size - sizeof(chdr);
    if (chdr.ch_size > kMaxInflatedSection || chdr.ch_size > payload * kMaxRatio + 4096) {
      return absl::DataLossError(absl::StrCat("implausible inflated size for ", name));
    }
    if (chdr.ch_type != ELFCOMPRESS_ZLIB && chdr.ch_type != 2 /* ELFCOMPRESS_ZSTD */) {
      return absl::DataLossError(
          absl::StrCat("unknown compression type ", chdr.ch_type, " in ", name));
    }
    debug_bytes_ += chdr.ch_size;
    compressed.push_back({elf_ndxscn(scn), shdr.sh_offset + sizeof(chdr), payload, chdr.ch_type,
                          chdr.ch_size, chdr.ch_addralign});
  }
  elf.reset();
  if (compressed.empty()) return absl::OkStatus();

  const uint64_t shoff = ehdr.e_shoff;
  if (ehdr.e_shentsize != sizeof(Elf64_Shdr) || shoff > size_) {
    return absl::DataLossError("bad section header table");
  }
  uint64_t total = size_;
  for (const Compressed& c : compressed) total += c.inflated + 16;
  copy_.resize(total);
  std::memcpy(copy_.data(), data_, size_);
  uint64_t at = (size_ + 15) & ~uint64_t{15};
  for (const Compressed& c : compressed) {
    const uint64_t sh_at = shoff + c.index * sizeof(Elf64_Shdr);
    if (sh_at > size_ || size_ - sh_at < sizeof(Elf64_Shdr)) {
      return absl::DataLossError("bad section header table");
    }
    const auto* src = reinterpret_cast<const uint8_t*>(data_ + c.offset);
    uint8_t* dst = reinterpret_cast<uint8_t*>(copy_.data() + at);
    bool ok = false;
    if (c.type == ELFCOMPRESS_ZLIB) {
      uLongf out = c.inflated;
      ok = uncompress(dst, &out, src, c.size) == Z_OK && out == c.inflated;
    } else {
      size_t out = ZSTD_decompress(dst, c.inflated, src, c.size);
      ok = !ZSTD_isError(out) && out == c.inflated;
    }
    if (!ok) return absl::DataLossError("a compressed debug section does not inflate");
    Elf64_Shdr shdr;
    std::memcpy(&shdr, copy_.data() + sh_at, sizeof(shdr));
    shdr.sh_offset = at;
    shdr.sh_size = c.inflated;
    shdr.sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
    shdr.sh_addralign = c.align == 0 ? 1 : c.align;
    std::memcpy(copy_.data() + sh_at, &shdr, sizeof(shdr));
    at = (at + c.inflated + 15) & ~uint64_t{15};
  }
  copy_.resize(at);
  munmap(mapping_, size_);
  mapping_ = nullptr;
  data_ = nullptr;
  size_ = 0;
  return absl::OkStatus();
}

}  // namespace hangwatch::symbols
