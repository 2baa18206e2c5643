// ElfFile and libelf helpers.
#include "symbols/elf_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <lzma.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/regular_file.h"

namespace hangwatch::symbols {

void ElfLibraryInit() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

absl::StatusOr<std::unique_ptr<ElfFile>> ElfFile::Open(const std::string& path) {
  ElfLibraryInit();
  // The path may come from a report or a debug link: a FIFO or a device is refused unopened.
  auto opened = RegularFile::Open(path);
  if (!opened.ok()) return opened.status();
  const int fd = opened->Release();
  auto file = std::unique_ptr<ElfFile>(new ElfFile);
  file->path_ = path;
  file->fd_ = fd;
  file->elf_.reset(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (file->elf_ == nullptr || elf_kind(file->elf_.get()) != ELF_K_ELF) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ELF file"));
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(file->elf_.get(), &ehdr) == nullptr) {
    return absl::DataLossError(absl::StrCat(path, ": bad ELF header: ", elf_errmsg(-1)));
  }
  return file;
}

void ElfFile::ReleaseDescriptor() {
  if (fd_ < 0) return;
  elf_cntl(elf_.get(), ELF_C_FDDONE);
  ::close(fd_);
  fd_ = -1;
}

ElfFile::~ElfFile() {
  elf_.reset();
  if (fd_ >= 0) ::close(fd_);
}

std::string_view SectionBytes(Elf* elf, std::string_view name) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (n == nullptr || name != n) continue;
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) return {};
    return std::string_view(static_cast<const char*>(data->d_buf), data->d_size);
  }
  return {};
}

namespace {

// MiniDebugInfo is small (a few MB at most); anything that inflates past this is refused.
constexpr uint64_t kMaxMiniDebugInfo = 256ull << 20;

absl::StatusOr<std::string> XzDecompress(std::string_view in) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, kMaxMiniDebugInfo, 0) != LZMA_OK) {
    return absl::InternalError("cannot initialize the xz decoder");
  }
  std::string out;
  out.resize(std::min<size_t>(std::max<size_t>(in.size() * 4, 4096), kMaxMiniDebugInfo));
  strm.next_in = reinterpret_cast<const uint8_t*>(in.data());
  strm.avail_in = in.size();
  size_t produced = 0;
  lzma_ret ret = LZMA_OK;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= kMaxMiniDebugInfo) {
        ret = LZMA_MEMLIMIT_ERROR;
        break;
      }
      out.resize(std::min<size_t>(out.size() * 2, kMaxMiniDebugInfo));
    }
    strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + produced;
    strm.avail_out = out.size() - produced;
    ret = lzma_code(&strm, LZMA_FINISH);
    produced = out.size() - strm.avail_out;
    if (ret != LZMA_OK) break;
    if (strm.avail_in == 0 && strm.avail_out != 0) break;  // stalled on truncated input
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) return absl::DataLossError(".gnu_debugdata is not valid xz data");
  out.resize(produced);
  return out;
}

std::string BuildIdFromNotes(Elf_Data* data) {
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_at = 0, desc_at = 0;
  while (offset < data->d_size &&
         (offset = gelf_getnote(data, offset, &nhdr, &name_at, &desc_at)) > 0) {
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && nhdr.n_descsz > 0 &&
        std::memcmp(static_cast<const char*>(data->d_buf) + name_at, "GNU", 4) == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto* p = static_cast<const unsigned char*>(data->d_buf) + desc_at;
      std::string hex;
      for (size_t i = 0; i < nhdr.n_descsz; ++i) {
        hex.push_back(kHex[p[i] >> 4]);
        hex.push_back(kHex[p[i] & 15]);
      }
      return hex;
    }
  }
  return {};
}

}  // namespace

std::string ReadBuildId(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    std::string id = BuildIdFromNotes(data);
    if (!id.empty()) return id;
  }
  // No section headers (or stripped of them): look at the PT_NOTE segments.
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return {};
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) {
      continue;
    }
    Elf_Data* data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR);
    if (data == nullptr || data->d_buf == nullptr) continue;
    std::string id = BuildIdFromNotes(data);
    if (!id.empty()) return id;
  }
  return {};
}

}  // namespace hangwatch::symbols

namespace hangwatch::symbols {

absl::StatusOr<std::string> InflateMiniDebugInfo(Elf* elf) {
  std::string_view packed = SectionBytes(elf, ".gnu_debugdata");
  if (packed.empty()) return std::string();
  return XzDecompress(packed);
}

void ForEachElfSymbol(
    Elf* elf, Elf64_Word type,
    absl::FunctionRef<void(const GElf_Sym& sym, const char* name, std::string_view file)> fn) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != type) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr || shdr.sh_entsize == 0) continue;
    Elf_Scn* strscn = elf_getscn(elf, shdr.sh_link);
    GElf_Shdr strshdr;
    Elf_Data* strdata = strscn != nullptr ? elf_getdata(strscn, nullptr) : nullptr;
    if (strdata == nullptr || strdata->d_buf == nullptr ||
        gelf_getshdr(strscn, &strshdr) == nullptr || strshdr.sh_type != SHT_STRTAB) {
      continue;
    }
    const char* strtab = static_cast<const char*>(strdata->d_buf);
    const size_t strtab_size = strdata->d_size;
    auto string_at = [&](size_t offset) -> const char* {
      if (offset >= strtab_size ||
          std::memchr(strtab + offset, 0, strtab_size - offset) == nullptr) {
        return nullptr;
      }
      return strtab + offset;
    };
    const size_t count = data->d_size / shdr.sh_entsize;
    std::string_view file;
    for (size_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      const char* name = string_at(sym.st_name);
      if (GELF_ST_TYPE(sym.st_info) == STT_FILE) {
        file = name != nullptr ? name : "";
        continue;
      }
      if (name == nullptr) continue;
      fn(sym, name, GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : std::string_view());
    }
  }
}

}  // namespace hangwatch::symbols
