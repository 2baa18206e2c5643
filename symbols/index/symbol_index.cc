// SymbolIndex: validation of the mapped image and llvm-symbolizer-compatible lookups.
#include "symbols/index/symbol_index.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/demangle.h"
#include "symbols/leb128.h"
#include "symbols/regular_file.h"
#include "symbols/symbol_cache.h"

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
    sizeof(MapBlock),     // kMapBlocks
    1,                    // kMapData
    1,                    // kNodeData
    sizeof(LineBlock),    // kLineBlocks
    1,                    // kLineData
    sizeof(SymbolEntry),  // kSymbols
    sizeof(uint32_t),     // kTokens
    sizeof(uint32_t),     // kNames
    1,                    // kNameData
    sizeof(Chunk),        // kChunks
};

uint64_t MtimeNs(const struct stat& st) {
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
         static_cast<uint64_t>(st.st_mtim.tv_nsec);
}

}  // namespace

namespace {

// A cached index is believed as it is: only a file that no one but this user (or root) could
// have written (symbol_cache.h).
constexpr RegularFileRules kCacheFileRules = {.no_follow = true, .trusted_only = true};

}  // namespace

absl::StatusOr<std::unique_ptr<SymbolIndex>> SymbolIndex::Map(const std::string& path) {
  auto file = RegularFile::Open(path, kCacheFileRules);
  if (!file.ok()) return file.status();
  const struct stat& st = file->stat();
  if (st.st_size <= 0) return absl::DataLossError(absl::StrCat(path, ": empty index"));
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, file->fd(), 0);
  if (m == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  auto index = std::unique_ptr<SymbolIndex>(new SymbolIndex);
  index->mapping_ = m;
  index->data_ = static_cast<const char*>(m);
  index->size_ = static_cast<size_t>(st.st_size);
  index->mtime_ns_ = MtimeNs(st);
  index->mode_ = st.st_mode & 0777;
  if (absl::Status s = index->Validate(); !s.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", s.message()));
  }
  return index;
}

namespace {

bool Compressed(const Header& h) {
  for (const auto& range : h.chunks) {
    if (range.begin != range.end) return true;
  }
  return false;
}

// Whether `flat` (plain sections) describes the same index as `source` (compressed): written
// from it, section by section (the strings, build-id included, are copied as they are).
bool IsFlatTwinOf(const Header& source, const Header& flat) {
  if (std::memcmp(source.magic, flat.magic, sizeof(kMagic)) != 0 ||
      source.version != flat.version || source.header_size != flat.header_size ||
      source.build_id != flat.build_id || source.flags != flat.flags ||
      source.node_count != flat.node_count || Compressed(flat)) {
    return false;
  }
  for (uint32_t s = 0; s < kNumSections; ++s) {
    if (s != kChunks && source.sections[s].count != flat.sections[s].count) return false;
  }
  return true;
}

// The header and modification time of the index file at `path`, without mapping it.
bool ReadHeader(const std::string& path, Header* header, uint64_t* mtime_ns) {
  auto file = RegularFile::Open(path, kCacheFileRules);
  const bool ok = file.ok() && ::pread(file->fd(), header, sizeof(*header), 0) ==
                                   static_cast<ssize_t>(sizeof(*header));
  *mtime_ns = ok ? MtimeNs(file->stat()) : 0;
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SymbolIndex>> SymbolIndex::Open(const std::string& path) {
  const std::string flat_path = path + ".flat";
  // The twin first: when it is there and current, the compressed index is not mapped at all.
  Header source;
  uint64_t source_mtime = 0;
  if (ReadHeader(path, &source, &source_mtime) && Compressed(source)) {
    auto flat = Map(flat_path);
    if (flat.ok() && (*flat)->mtime_ns_ >= source_mtime &&
        IsFlatTwinOf(source, *(*flat)->header_)) {
      return flat;
    }
  }
  auto index = Map(path);
  if (!index.ok() || !Compressed(*(*index)->header_)) return index;
  // No usable twin: write one, if the directory lets us (checked before inflating anything,
  // so that a read-only cache does not pay for a whole inflation on every open).
  const size_t slash = flat_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : flat_path.substr(0, slash);
  if (access(dir.c_str(), W_OK) != 0) return index;
  const std::string image = (*index)->FlatImage();
  if (!image.empty()) {
    (void)WriteCacheFile(dir, flat_path.substr(slash + 1), image, (*index)->mode_);
  }
  return index;  // every chunk is inflated by now
}

std::string SymbolIndex::FlatImage() const {
  Header h = *header_;
  std::string out(sizeof(Header), '\0');
  for (uint32_t s = 0; s < kNumSections; ++s) {
    out.resize((out.size() + 7) & ~size_t{7}, '\0');  // sections are 8-byte aligned
    const uint64_t count = s == kChunks ? 0 : Count(static_cast<Section>(s));
    const uint64_t bytes = count * kElementSize[s];
    h.sections[s].offset = out.size();
    h.sections[s].count = count;
    h.chunks[s].begin = h.chunks[s].end = 0;
    if (bytes == 0) continue;
    const char* from = inflated_[s].region != nullptr
                           ? reinterpret_cast<const char*>(Bytes(static_cast<Section>(s), 0, count))
                           : Table<char>(static_cast<Section>(s));
    if (from == nullptr) return "";
    out.append(from, bytes);
  }
  out.resize((out.size() + 7) & ~size_t{7}, '\0');
  h.file_size = out.size();
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
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
  for (char* block = expanded_.load(); block != nullptr;) {
    char* next;
    std::memcpy(&next, block, sizeof(next));
    std::free(block);
    block = next;
  }
  std::free(names_);
  for (Inflated& in : inflated_) {
    if (in.region != nullptr) munmap(in.region, in.size);
  }
  if (mapping_ != nullptr) munmap(mapping_, size_);
}

const uint8_t* SymbolIndex::Bytes(Section s, uint64_t begin, uint64_t end) const {
  if (begin >= end || end > Count(s)) return nullptr;
  const Inflated& in = inflated_[s];
  if (in.region == nullptr) return reinterpret_cast<const uint8_t*>(Table<char>(s)) + begin;
  for (uint64_t c = begin / kChunkBytes; c <= (end - 1) / kChunkBytes; ++c) {
    std::atomic<uint8_t>& state = in.state[c];
    if (state.load(std::memory_order_acquire) == kInflated) continue;
    uint8_t expected = kRaw;
    if (state.compare_exchange_strong(expected, kInflating, std::memory_order_acq_rel)) {
      // First touch: inflate in place. A chunk that does not inflate to its exact size (a
      // corrupt file) reads as zeros, which decode as nothing useful but safely.
      const Chunk& chunk = Table<Chunk>(kChunks)[header_->chunks[s].begin + c];
      uint8_t* dst = in.region + c * kChunkBytes;
      const size_t raw = std::min<uint64_t>(kChunkBytes, in.size - c * kChunkBytes);
      // One decompression context per thread, reused (creating one costs more than inflating
      // a small chunk).
      thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                           &ZSTD_freeDCtx);
      const size_t n =
          dctx != nullptr
              ? ZSTD_decompressDCtx(dctx.get(), dst, raw, data_ + chunk.offset, chunk.size)
              : ZSTD_decompress(dst, raw, data_ + chunk.offset, chunk.size);
      if (ZSTD_isError(n) || n != raw) std::memset(dst, 0, raw);
      state.store(kInflated, std::memory_order_release);
    } else {
      while (state.load(std::memory_order_acquire) != kInflated) sched_yield();
    }
  }
  return in.region + begin;
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
    if (header_->chunks[s].begin != header_->chunks[s].end) {
      // Compressed: only the varint byte sections, which are read through Bytes().
      if (s != kMapData && s != kNodeData && s != kLineData && s != kNameData) {
        return absl::DataLossError("symbol index has a bad compressed section");
      }
      continue;
    }
    if (ref.offset % 8 != 0 || ref.offset > size_) {
      return absl::DataLossError("symbol index has a bad section offset");
    }
    if (ref.count > (size_ - ref.offset) / kElementSize[s]) {
      return absl::DataLossError("symbol index has a section past its end");
    }
  }
  // Compressed sections: byte sections only, chunks in the file, one per kChunkBytes.
  const Chunk* chunks = Table<Chunk>(kChunks);
  for (uint32_t s = 0; s < kNumSections; ++s) {
    const auto range = header_->chunks[s];
    if (range.begin == range.end) continue;
    const uint64_t bytes = header_->sections[s].count;
    if (range.begin > range.end || range.end > Count(kChunks) ||
        range.end - range.begin != (bytes + kChunkBytes - 1) / kChunkBytes) {
      return absl::DataLossError("symbol index has a bad compressed section");
    }
    for (uint32_t c = range.begin; c < range.end; ++c) {
      if (chunks[c].offset > size_ || chunks[c].size > size_ - chunks[c].offset) {
        return absl::DataLossError("symbol index has a chunk past its end");
      }
    }
    Inflated& in = inflated_[s];
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return absl::ResourceExhaustedError("cannot map an inflated section");
    in.region = static_cast<uint8_t*>(m);
    in.size = bytes;
    in.state.reset(new std::atomic<uint8_t>[range.end - range.begin]());
  }
  const uint64_t n = Count(kStrings);
  if (n == 0 || Table<char>(kStrings)[n - 1] != '\0') {
    return absl::DataLossError("symbol index strings are not terminated");
  }
  build_id_ = String(header_->build_id);
  // calloc: a large array comes as fresh zero pages that cost nothing until a name is stored
  // in them (new[]() wrote every slot: 60 page faults for libc's index, per open).
  names_ = static_cast<char**>(std::calloc(std::max<uint64_t>(Count(kNames), 1), sizeof(char*)));
  if (names_ == nullptr) return absl::ResourceExhaustedError("cannot allocate the name table");
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

std::string_view SymbolIndex::Name(uint32_t name) const {
  if (name >= Count(kNames)) return {};
  std::atomic_ref<char*> slot(names_[name]);
  char* block = slot.load(std::memory_order_acquire);
  if (block == nullptr) {
    const uint32_t* offsets = Table<uint32_t>(kNames);
    const uint64_t data_size = Count(kNameData);
    const uint64_t begin = offsets[name];
    const uint64_t end = name + 1 < Count(kNames) ? offsets[name + 1] : data_size;
    std::string text;
    if (begin <= end && end <= data_size) {
      const uint8_t* p = Bytes(kNameData, begin, end);
      const uint8_t* e = p == nullptr ? nullptr : p + (end - begin);
      const uint32_t* tokens = Table<uint32_t>(kTokens);
      uint64_t token;
      while (p < e && (p = ReadUleb(p, e, &token)) != nullptr && token < Count(kTokens)) {
        const std::string_view t = String(tokens[token]);
        if (text.size() + t.size() > kMaxNameBytes) break;
        text.append(t);
      }
    }
    const auto length = static_cast<uint32_t>(text.size());
    char* fresh = static_cast<char*>(std::malloc(kNameHeader + text.size() + 1));
    if (fresh == nullptr) return {};
    std::memcpy(fresh + sizeof(char*), &length, sizeof(length));
    std::memcpy(fresh + kNameHeader, text.data(), text.size());
    fresh[kNameHeader + text.size()] = '\0';
    if (slot.compare_exchange_strong(block, fresh, std::memory_order_acq_rel)) {
      block = fresh;
      // Onto the list the destructor frees (it does not walk the whole name table).
      char* head = expanded_.load(std::memory_order_relaxed);
      do {
        std::memcpy(fresh, &head, sizeof(head));
      } while (!expanded_.compare_exchange_weak(head, fresh, std::memory_order_release,
                                                std::memory_order_relaxed));
    } else {
      std::free(fresh);  // another thread published first; `block` is theirs
    }
  }
  uint32_t length;
  std::memcpy(&length, block + sizeof(char*), sizeof(length));
  return std::string_view(block + kNameHeader, length);
}

bool SymbolIndex::DecodeNode(uint32_t node, DecodedNode* out) const {
  if (node >= header_->node_count) return false;
  const uint64_t at = uint64_t{node} * sizeof(Node);
  const uint8_t* p = Bytes(kNodeData, at, at + sizeof(Node));
  if (p == nullptr) return false;
  Node n;
  std::memcpy(&n, p, sizeof(n));
  out->name = n.name;
  // Parents come first: a chain only walks down in index, so it ends.
  out->parent = n.parent < node ? n.parent : kNone;
  out->call_line = n.call_line;
  out->call_file = n.call_file == kNoFile ? 0 : uint64_t{n.call_file} + 1;
  out->call_column = n.call_column;
  return true;
}

uint32_t SymbolIndex::FindNode(const CuInfo& cu, uint64_t addr) const {
  if (addr < cu.base || addr - cu.base > 0xffffffffu || cu.map_block_begin >= cu.map_block_end ||
      cu.map_block_end > Count(kMapBlocks)) {
    return kNone;
  }
  const uint64_t rel = addr - cu.base;
  const MapBlock* first = Table<MapBlock>(kMapBlocks) + cu.map_block_begin;
  const MapBlock* last = Table<MapBlock>(kMapBlocks) + cu.map_block_end;
  const MapBlock* b = std::upper_bound(first, last, rel,
                                       [](uint64_t a, const MapBlock& blk) { return a < blk.lo; });
  if (b == first) return kNone;
  --b;
  const uint64_t data_end = std::min<uint64_t>(cu.map_data_end, Count(kMapData));
  const uint64_t block_end = b + 1 < last ? std::min<uint64_t>((b + 1)->data, data_end) : data_end;
  if (b->data >= block_end) return kNone;
  const uint8_t* p = Bytes(kMapData, b->data, block_end);
  if (p == nullptr) return kNone;
  const uint8_t* e = p + (block_end - b->data);
  uint64_t lo = b->lo, end = b->lo, node = b->node;
  uint64_t found_lo = 0, found_size = 0, found_node = kNone;
  for (uint32_t i = 0; i < kMapBlockEntries && p < e; ++i) {
    uint64_t size;
    int64_t gap, node_delta;
    if ((p = ReadSleb(p, e, &gap)) == nullptr || (p = ReadUleb(p, e, &size)) == nullptr ||
        (p = ReadSleb(p, e, &node_delta)) == nullptr) {
      break;
    }
    lo = end + static_cast<uint64_t>(gap);
    end = lo + size;
    node += static_cast<uint64_t>(node_delta);
    if (lo > rel) break;
    found_lo = lo;
    found_size = size;
    found_node = node;
  }
  // The last entry starting at or below the address, when it reaches the address.
  if (found_node >= kNone || rel - found_lo >= found_size) return kNone;
  return static_cast<uint32_t>(found_node);
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
  if (addr < cu.base) return false;
  const uint64_t rel = addr - cu.base;
  const LineBlock* b = std::upper_bound(
      first, last, rel, [](uint64_t a, const LineBlock& blk) { return a < blk.addr; });
  if (b == first) return false;
  --b;
  const uint64_t data_end = std::min<uint64_t>(cu.line_data_end, Count(kLineData));
  const uint64_t block_end = b + 1 < last ? std::min<uint64_t>((b + 1)->data, data_end) : data_end;
  if (b->data >= block_end) return false;
  const uint8_t* p = Bytes(kLineData, b->data, block_end);
  if (p == nullptr) return false;
  const uint8_t* end = p + (block_end - b->data);
  uint64_t row_addr = b->addr;
  addr = rel;
  uint64_t line = 0;  // unsigned: a hostile file may overflow it
  bool found = false;
  uint64_t file = 0, column = 0;
  uint64_t found_line = 0;
  uint64_t found_file = 0, found_column = 0;
  for (uint32_t r = 0; r < kLineBlockRows && p < end; ++r) {
    uint64_t delta;
    if ((p = ReadUleb(p, end, &delta)) == nullptr || (p = ReadUleb(p, end, &file)) == nullptr) {
      break;
    }
    row_addr += delta;
    if (row_addr > addr) break;
    if (file != 0) {
      int64_t line_delta;
      if ((p = ReadSleb(p, end, &line_delta)) == nullptr ||
          (p = ReadUleb(p, end, &column)) == nullptr) {
        break;
      }
      line += static_cast<uint64_t>(line_delta);
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
    // The innermost subroutine, then its chain of parents up to the subprogram.
    uint32_t node = FindNode(cu, addr);
    SourceFrame frame;
    if (node == kNone) {
      if (FindLine(cu, addr, &frame)) out->frames.push_back(frame);
    } else {
      DecodedNode n, prev;
      for (int depth = 0; depth < kMaxInlineDepth && DecodeNode(node, &n); ++depth) {
        frame = SourceFrame();
        frame.function = n.name == kNone ? std::string_view() : Name(n.name);
        if (depth == 0) {
          FindLine(cu, addr, &frame);
        } else {
          frame.file = prev.call_file == 0 || prev.call_file > kNone
                           ? std::string_view()
                           : UnitFile(cu, static_cast<uint32_t>(prev.call_file - 1));
          frame.line = prev.call_line;
          frame.column = prev.call_column;
        }
        out->frames.push_back(frame);
        prev = n;
        if (n.parent == kNone) break;
        node = n.parent;
      }
    }
  }
  if (out->frames.empty()) out->frames.emplace_back();
  // As llvm-symbolizer: the symbol table names the outermost frame when it covers the address.
  if (const SymbolEntry* s = FindSymbol(addr)) {
    std::string_view name;
    if (s->demangled != kNone) {
      name = Name(s->demangled);
    } else {
      out->owned.push_back(Demangle(Name(s->mangled)));
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
