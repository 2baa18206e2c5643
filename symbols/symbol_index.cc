// SymbolIndex: validation of the mapped image and llvm-symbolizer-compatible lookups.
#include "symbols/symbol_index.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/demangle.h"

namespace hangwatch::symbols {

using namespace index_format;  // NOLINT(build/namespaces): the format's names read best bare

namespace {

// A chain longer than this is a cycle in a hostile file (real ones are a few dozen deep).
constexpr int kMaxInlineDepth = 1024;

constexpr size_t kElementSize[kNumSections] = {
    1,                    // kStrings
    sizeof(uint32_t),     // kFiles
    sizeof(CuRange),      // kCuRanges
    sizeof(CuInfo),       // kCus
    sizeof(uint32_t),     // kCuFiles
    sizeof(MapEntry),     // kMap
    sizeof(Node),         // kNodes
    sizeof(LineBlock),    // kLineBlocks
    1,                    // kLineData
    sizeof(SymbolEntry),  // kSymbols
};

bool ReadUleb(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool ReadSleb(const uint8_t*& p, const uint8_t* end, int64_t* out) {
  uint64_t v = 0;
  int shift = 0;
  while (p < end && shift < 64) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    shift += 7;
    if ((b & 0x80) == 0) {
      if (shift < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << shift;
      *out = static_cast<int64_t>(v);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SymbolIndex>> SymbolIndex::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": empty or unreadable index"));
  }
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  auto index = std::unique_ptr<SymbolIndex>(new SymbolIndex);
  index->mapping_ = m;
  index->data_ = static_cast<const char*>(m);
  index->size_ = static_cast<size_t>(st.st_size);
  if (absl::Status s = index->Validate(); !s.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", s.message()));
  }
  return index;
}

absl::StatusOr<std::unique_ptr<SymbolIndex>> SymbolIndex::FromBytes(std::string bytes) {
  auto index = std::unique_ptr<SymbolIndex>(new SymbolIndex);
  index->owned_ = std::move(bytes);
  // std::string storage is at least 8-aligned for the sizes involved (heap allocated); the
  // builder pads every section to 8 bytes.
  index->data_ = index->owned_.data();
  index->size_ = index->owned_.size();
  if (reinterpret_cast<uintptr_t>(index->data_) % 8 != 0) {
    return absl::InternalError("index image is misaligned");
  }
  if (absl::Status s = index->Validate(); !s.ok()) return s;
  return index;
}

SymbolIndex::~SymbolIndex() {
  if (mapping_ != nullptr) munmap(mapping_, size_);
}

absl::Status SymbolIndex::Validate() {
  if (size_ < sizeof(Header)) return absl::DataLossError("not a symbol index (too short)");
  header_ = reinterpret_cast<const Header*>(data_);
  if (std::memcmp(header_->magic, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("not a symbol index (bad magic)");
  }
  if (header_->version != kVersion || header_->header_size != sizeof(Header)) {
    return absl::DataLossError(absl::StrCat("unsupported symbol index version ", header_->version));
  }
  if (header_->file_size != size_) return absl::DataLossError("symbol index is truncated");
  for (uint32_t s = 0; s < kNumSections; ++s) {
    const SectionRef& ref = header_->sections[s];
    if (ref.offset % 8 != 0 || ref.offset > size_) {
      return absl::DataLossError("symbol index has a bad section offset");
    }
    if (ref.count > (size_ - ref.offset) / kElementSize[s]) {
      return absl::DataLossError("symbol index has a section past its end");
    }
  }
  const uint64_t n = Count(kStrings);
  if (n == 0 || Table<char>(kStrings)[n - 1] != '\0') {
    return absl::DataLossError("symbol index strings are not terminated");
  }
  build_id_ = String(header_->build_id);
  return absl::OkStatus();
}

bool SymbolIndex::has_dwarf() const { return (header_->flags & kHasDwarf) != 0; }

std::string_view SymbolIndex::String(uint32_t offset) const {
  const uint64_t n = Count(kStrings);
  if (offset < sizeof(uint32_t) || offset >= n) return {};
  const char* base = Table<char>(kStrings);
  uint32_t length;
  std::memcpy(&length, base + offset - sizeof(length), sizeof(length));
  if (length >= n - offset || base[offset + length] != '\0') return {};
  return std::string_view(base + offset, length);
}

std::string_view SymbolIndex::UnitFile(const CuInfo& cu, uint32_t local) const {
  if (local >= cu.files_count) return {};
  const uint64_t i = uint64_t{cu.files_begin} + local;
  if (i >= Count(kCuFiles)) return {};
  const uint32_t file = Table<uint32_t>(kCuFiles)[i];
  if (file >= Count(kFiles)) return {};
  return String(Table<uint32_t>(kFiles)[file]);
}

bool SymbolIndex::FindLine(const CuInfo& cu, uint64_t addr, SourceFrame* frame) const {
  const uint64_t nblocks = Count(kLineBlocks);
  if (cu.block_begin >= cu.block_end || cu.block_end > nblocks) return false;
  const LineBlock* first = Table<LineBlock>(kLineBlocks) + cu.block_begin;
  const LineBlock* last = Table<LineBlock>(kLineBlocks) + cu.block_end;
  const LineBlock* b = std::upper_bound(
      first, last, addr, [](uint64_t a, const LineBlock& blk) { return a < blk.addr; });
  if (b == first) return false;
  --b;
  const uint64_t data_end = std::min<uint64_t>(cu.line_data_end, Count(kLineData));
  const uint64_t block_end = b + 1 < last ? std::min<uint64_t>((b + 1)->data, data_end) : data_end;
  if (b->data >= block_end) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(Table<char>(kLineData)) + b->data;
  const auto* end = reinterpret_cast<const uint8_t*>(Table<char>(kLineData)) + block_end;
  uint64_t row_addr = b->addr;
  int64_t line = 0;
  bool found = false;
  uint64_t file = 0, column = 0;
  int64_t found_line = 0;
  uint64_t found_file = 0, found_column = 0;
  for (uint32_t r = 0; r < b->rows && r < kLineBlockRows; ++r) {
    uint64_t delta;
    if (!ReadUleb(p, end, &delta) || !ReadUleb(p, end, &file)) break;
    row_addr += delta;
    if (row_addr > addr) break;
    if (file != 0) {
      int64_t line_delta;
      if (!ReadSleb(p, end, &line_delta) || !ReadUleb(p, end, &column)) break;
      line += line_delta;
    }
    found = true;
    found_file = file;
    found_line = line;
    found_column = column;
  }
  if (!found || found_file == 0) return false;  // before the table, or in a gap
  // A row whose file index is invalid gives no location at all (llvm-symbolizer: ??:0:0).
  std::string_view path = UnitFile(cu, static_cast<uint32_t>(found_file - 1));
  if (path.empty()) return false;
  frame->file = path;
  frame->line = static_cast<uint32_t>(found_line);
  frame->column = static_cast<uint32_t>(found_column);
  return true;
}

const SymbolEntry* SymbolIndex::FindSymbol(uint64_t addr) const {
  const SymbolEntry* first = Table<SymbolEntry>(kSymbols);
  const SymbolEntry* last = first + Count(kSymbols);
  const SymbolEntry* s = std::upper_bound(
      first, last, addr, [](uint64_t a, const SymbolEntry& e) { return a < e.addr; });
  if (s == first) return nullptr;
  --s;
  if (s->size != 0 && addr - s->addr >= s->size) return nullptr;
  return s;
}

void SymbolIndex::Lookup(uint64_t addr, SymbolizedAddress* out) const {
  out->Clear();
  const CuRange* rfirst = Table<CuRange>(kCuRanges);
  const CuRange* rlast = rfirst + Count(kCuRanges);
  const CuRange* r = std::upper_bound(rfirst, rlast, addr,
                                      [](uint64_t a, const CuRange& cr) { return a < cr.lo; });
  if (r != rfirst && addr < (r - 1)->hi && (r - 1)->cu < Count(kCus)) {
    const CuInfo& cu = Table<CuInfo>(kCus)[(r - 1)->cu];
    // The innermost subroutine: the last map entry starting at or below the address.
    uint32_t node = kNone;
    if (addr >= cu.base && addr - cu.base <= 0xffffffffu && cu.map_begin < cu.map_end &&
        cu.map_end <= Count(kMap)) {
      const uint64_t rel = addr - cu.base;
      const MapEntry* mfirst = Table<MapEntry>(kMap) + cu.map_begin;
      const MapEntry* mlast = Table<MapEntry>(kMap) + cu.map_end;
      const MapEntry* m = std::upper_bound(mfirst, mlast, rel,
                                           [](uint64_t a, const MapEntry& e) { return a < e.lo; });
      if (m != mfirst && rel - (m - 1)->lo < (m - 1)->size) node = (m - 1)->node;
    }
    SourceFrame frame;
    if (node == kNone) {
      if (FindLine(cu, addr, &frame)) out->frames.push_back(frame);
    } else {
      const Node* nodes = Table<Node>(kNodes);
      const uint64_t nnodes = Count(kNodes);
      const Node* prev = nullptr;
      for (int depth = 0; node < nnodes && depth < kMaxInlineDepth; ++depth) {
        const Node& n = nodes[node];
        frame = SourceFrame();
        frame.function = n.name == kNone ? std::string_view() : String(n.name);
        if (prev == nullptr) {
          FindLine(cu, addr, &frame);
        } else {
          frame.file =
              prev->call_file == kNoFile ? std::string_view() : UnitFile(cu, prev->call_file);
          frame.line = prev->call_line;
          frame.column = prev->call_column;
        }
        out->frames.push_back(frame);
        prev = &n;
        node = n.parent;
      }
    }
  }
  if (out->frames.empty()) out->frames.emplace_back();
  // As llvm-symbolizer: the symbol table names the outermost frame when it covers the address.
  if (const SymbolEntry* s = FindSymbol(addr)) {
    std::string_view name;
    if (s->demangled != kNone) {
      name = String(s->demangled);
    } else {
      out->owned.push_back(Demangle(String(s->mangled)));
      name = out->owned.back();
    }
    out->frames.back().function = name;
    // A local symbol names its source file when the DWARF did not (llvm-symbolizer does too).
    if (out->frames.back().file.empty() && s->file != kNone) {
      out->frames.back().file = String(s->file);
    }
  }
}

void AppendLlvmStyle(const SymbolizedAddress& address, std::string* out) {
  for (const SourceFrame& f : address.frames) {
    if (f.function.empty()) {
      out->append("??\n");
    } else {
      out->append(f.function);
      out->push_back('\n');
    }
    // An unknown file keeps its line and column, as llvm-symbolizer prints them.
    out->append(f.file.empty() ? std::string_view("??") : f.file);
    absl::StrAppend(out, ":", f.line, ":", f.column, "\n");
  }
  out->push_back('\n');
}

}  // namespace hangwatch::symbols
