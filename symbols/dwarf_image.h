// DwarfImage: an ELF file with debug information, readable by several threads at once.
//
// The file is mapped once; each thread asks for its own libelf/libdw handles over the same
// bytes (libdw handles are not thread-safe, the bytes are shared). Compressed sections
// (SHF_COMPRESSED, zlib or zstd) are inflated once into a private copy of the image, because
// libdw 0.188 cannot read zstd and would otherwise inflate zlib sections once per handle.
#ifndef HANGWATCH_SYMBOLS_DWARF_IMAGE_H_
#define HANGWATCH_SYMBOLS_DWARF_IMAGE_H_

#include <elfutils/libdw.h>
#include <libelf.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/elf_file.h"

namespace hangwatch::symbols {

struct DwarfEnd {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};
using DwarfHandle = std::unique_ptr<Dwarf, DwarfEnd>;

class DwarfImage {
 public:
  static absl::StatusOr<std::unique_ptr<DwarfImage>> Open(const std::string& path);
  ~DwarfImage();
  DwarfImage(const DwarfImage&) = delete;
  DwarfImage& operator=(const DwarfImage&) = delete;

  // A new libelf handle over the image (one per thread).
  ElfHandle NewElf() const;
  // A new libdw handle over `elf`; nullptr when the file has no DWARF.
  static DwarfHandle NewDwarf(Elf* elf);

  // The bytes of the section called `name` of `elf` (a handle from NewElf), uncompressed;
  // empty when absent, SHT_NOBITS, still compressed, or outside the image.
  std::string_view Section(Elf* elf, std::string_view name) const;

  const std::string& path() const { return path_; }
  // Total size of the .debug_* sections as stored in the file (compressed when compressed).
  uint64_t debug_bytes_on_disk() const { return debug_bytes_on_disk_; }
  // Same, uncompressed.
  uint64_t debug_bytes() const { return debug_bytes_; }
  bool inflated() const { return !copy_.empty(); }

 private:
  DwarfImage() = default;
  absl::Status InflateCompressedSections();

  std::string path_;
  char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;
  std::vector<char> copy_;  // the image with inflated sections, when any was compressed
  uint64_t debug_bytes_on_disk_ = 0;
  uint64_t debug_bytes_ = 0;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DWARF_IMAGE_H_
