// SymbolIndex: answers address -> inlined frames (function, file, line, column) from an index
// built by BuildSymbolIndex (symbol_index_builder.h), memory-mapped or in memory.
//
// The answers follow llvm-symbolizer's rules so that `hangwatch symbolize` prints the same
// lines: the unit that covers the address, its innermost subprogram or inlined subroutine and
// the parent chain up to the subprogram, the line-table row for the innermost frame, the call
// site of each inlined frame for the frame above it, and the ELF symbol table's name for the
// outermost frame.
//
// Every offset read from the file is bounds-checked: a truncated or hostile index gives "??"
// answers or an error from Open, never a crash or an endless loop.
#ifndef HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_H_
#define HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols {

// One frame of an answer. An empty view means unknown ("??" in llvm-symbolizer's output).
struct SourceFrame {
  std::string_view function;
  std::string_view file;
  uint32_t line = 0;
  uint32_t column = 0;
};

// The frames for one address, innermost first; never empty after Lookup. Reuse one object
// across lookups to avoid allocations. Views point into the index or into `owned`.
struct SymbolizedAddress {
  std::vector<SourceFrame> frames;
  std::deque<std::string> owned;  // names demangled on demand
  void Clear() {
    frames.clear();
    owned.clear();
  }
};

class SymbolIndex {
 public:
  // Maps an index file. Errors: missing, unreadable, not an index, wrong version, truncated;
  // not a regular file, a symbolic link, or a file that another user than this one or root
  // could have written (a cache file is believed as it is: symbol_cache.h).
  //
  // A compressed index (chunks) is served from its inflated twin, `path` + ".flat", when that
  // exists, is newer than `path` and describes the same index (same version, build-id, flags
  // and section sizes): the same format with every section stored plain, so a lookup reads
  // mapped pages instead of inflating 64 KiB chunks (most of a warm `hangwatch snapshot`'s
  // symbolization was zstd). Otherwise the twin is written (every chunk inflated once, written
  // atomically, best effort: a read-only cache directory just keeps inflating) and `path` is
  // served.
  static absl::StatusOr<std::unique_ptr<SymbolIndex>> Open(const std::string& path);
  // Takes ownership of an index image (e.g. fresh from the builder).
  static absl::StatusOr<std::unique_ptr<SymbolIndex>> FromBytes(std::string bytes);

  ~SymbolIndex();
  SymbolIndex(const SymbolIndex&) = delete;
  SymbolIndex& operator=(const SymbolIndex&) = delete;

  // `addr` is an ELF virtual address of the module (ModuleAddress::offset); pass return
  // address - 1 for return addresses, as llvm-symbolizer's callers do.
  void Lookup(uint64_t addr, SymbolizedAddress* out) const;

  std::string_view build_id() const { return build_id_; }
  bool has_dwarf() const;
  size_t size_bytes() const { return size_; }

 private:
  SymbolIndex() = default;
  // Maps `path` as it is (no twin).
  static absl::StatusOr<std::unique_ptr<SymbolIndex>> Map(const std::string& path);
  // The image of this index with every section plain (all chunks inflated).
  std::string FlatImage() const;
  absl::Status Validate();
  template <typename T>
  const T* Table(index_format::Section s) const {
    return reinterpret_cast<const T*>(data_ + header_->sections[s].offset);
  }
  uint64_t Count(index_format::Section s) const { return header_->sections[s].count; }
  // Bytes [begin, end) of a byte section, inflating its chunks on first use when it is
  // compressed; null when the range is empty or outside the section.
  const uint8_t* Bytes(index_format::Section s, uint64_t begin, uint64_t end) const;
  std::string_view String(uint32_t offset) const;
  // A function name (names section), expanded from its tokens on first use and kept.
  std::string_view Name(uint32_t name) const;
  struct DecodedNode {
    uint32_t name = index_format::kNone;
    uint32_t parent = index_format::kNone;
    uint32_t call_line = 0, call_column = 0;
    uint64_t call_file = 0;  // unit-local file + 1; 0 when unknown
  };
  bool DecodeNode(uint32_t node, DecodedNode* out) const;
  uint32_t FindNode(const index_format::CuInfo& cu, uint64_t addr) const;
  // The unit-local file index -> path, or empty.
  std::string_view UnitFile(const index_format::CuInfo& cu, uint32_t local) const;
  bool FindLine(const index_format::CuInfo& cu, uint64_t addr, SourceFrame* frame) const;
  const index_format::SymbolEntry* FindSymbol(uint64_t addr) const;

  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap on destruction when mapped
  uint64_t mtime_ns_ = 0;    // of the mapped file
  uint32_t mode_ = 0644;     // of the mapped file (its twin gets the same)
  std::string owned_;        // or the bytes themselves
  const index_format::Header* header_ = nullptr;
  std::string_view build_id_;
  // Expanded names by name index (calloc'd; slots accessed through std::atomic_ref): a heap
  // block {char* next, uint32_t length, chars}, published with a compare-and-swap (lookups may
  // run on several threads; the loser frees its copy), then pushed onto `expanded_`, the list
  // of blocks to free.
  static constexpr size_t kNameHeader = sizeof(char*) + sizeof(uint32_t);
  char** names_ = nullptr;
  mutable std::atomic<char*> expanded_{nullptr};
  // Compressed sections, inflated chunk by chunk into an anonymous mapping (untouched chunks
  // cost no memory). Chunk states go kRaw -> kInflating (one thread) -> kInflated.
  static constexpr uint8_t kRaw = 0, kInflating = 1, kInflated = 2;
  struct Inflated {
    uint8_t* region = nullptr;
    size_t size = 0;
    std::unique_ptr<std::atomic<uint8_t>[]> state;
  };
  Inflated inflated_[index_format::kNumSections];
};

// Appends llvm-symbolizer's default output for one address: per frame the function name, then
// "file:line:column", unknowns as "??" and "??:0:0"; then an empty line.
void AppendLlvmStyle(const SymbolizedAddress& address, std::string* out);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_H_
