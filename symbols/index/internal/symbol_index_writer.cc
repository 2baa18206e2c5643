// SymbolIndexWriter: the index image's sections, unit by unit, then the header.
#include "symbols/index/internal/symbol_index_writer.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "symbols/index/internal/index_tables.h"

namespace hangwatch::symbols {

using namespace index_format;  // NOLINT(build/namespaces)
using internal::NameTable;
using internal::PutSleb;
using internal::PutUleb;
using internal::StringTable;

namespace {

// Reserves room in `v` for `left` more units like the `merged` ones so far (with a quarter to
// spare) when it has less, but never more than four times what it holds: one huge first unit
// must not make it ask for a hundred times its size. A refused reservation is only a missed
// optimization.
template <typename V>
void GrowTable(V* v, size_t merged, size_t left) {
  const size_t size = v->size();
  const size_t want = size + size / merged * left;
  if (v->capacity() >= want) return;  // (the quarter to spare keeps this from firing every unit)
  try {
    v->reserve(std::min(want + want / 4, size * 4 + 4096));
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
  }
}

// The header and the sections, each 8-byte aligned.
class ImageWriter {
 public:
  ImageWriter() { image_.resize(sizeof(Header)); }
  // An upper bound of the image size (compression only shrinks), to grow it once.
  void Reserve(size_t bytes) { image_.reserve(sizeof(Header) + bytes + 4096); }
  template <typename T>
  void Put(Section s, const std::vector<T>& v) {
    PutBytes(s, v.data(), v.size() * sizeof(T), v.size());
  }
  void PutBytes(Section s, const void* p, size_t bytes, size_t count) {
    image_.resize((image_.size() + 7) & ~size_t{7});
    header_.sections[s] = {image_.size(), count};
    image_.append(static_cast<const char*>(p), bytes);
  }
  // A byte section as zstd frames of kChunkBytes (symbol_index_format.h), or plain when
  // `compress` is false.
  void PutBytes(Section s, const std::string& bytes, bool compress) {
    if (!compress || bytes.empty()) {
      PutBytes(s, bytes.data(), bytes.size(), bytes.size());
      return;
    }
    header_.sections[s] = {0, bytes.size()};
    header_.chunks[s].begin = static_cast<uint32_t>(chunks_.size());
    std::string frame;
    for (size_t at = 0; at < bytes.size(); at += kChunkBytes) {
      const size_t raw = std::min<size_t>(kChunkBytes, bytes.size() - at);
      frame.resize(ZSTD_compressBound(raw));
      const size_t n =
          ZSTD_compressCCtx(cctx_.get(), frame.data(), frame.size(), bytes.data() + at, raw, 1);
      if (ZSTD_isError(n)) frame.clear();  // cannot happen with a bound-sized buffer
      chunks_.push_back({image_.size(), static_cast<uint32_t>(ZSTD_isError(n) ? 0 : n), 0});
      image_.append(frame.data(), ZSTD_isError(n) ? 0 : n);
    }
    header_.chunks[s].end = static_cast<uint32_t>(chunks_.size());
  }
  std::string Finish(uint32_t build_id, uint32_t flags, uint32_t node_count) {
    Put(kChunks, chunks_);
    image_.resize((image_.size() + 7) & ~size_t{7});
    std::memcpy(header_.magic, kMagic, sizeof(kMagic));
    header_.version = kVersion;
    header_.header_size = sizeof(Header);
    header_.file_size = image_.size();
    header_.build_id = build_id;
    header_.flags = flags;
    header_.node_count = node_count;
    std::memcpy(image_.data(), &header_, sizeof(header_));
    return std::move(image_);
  }

 private:
  struct FreeCCtx {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };

  Header header_{};
  std::string image_;
  std::vector<Chunk> chunks_;
  // One context for every chunk: ZSTD_compress would allocate (and fault in) a fresh one each.
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx_{ZSTD_createCCtx()};
};

}  // namespace

// The global tables, filled unit by unit in unit order.
struct SymbolIndexWriter::Tables {
  StringTable strings;
  NameTable names;
  absl::flat_hash_map<const std::string*, uint32_t> name_by_string;  // IndexUnit::names
  std::vector<uint32_t> files;
  std::unordered_map<uint32_t, uint32_t> file_by_string;
  std::vector<CuInfo> cus;
  std::vector<uint32_t> cu_files;
  std::vector<MapBlock> map_blocks;
  std::string map_data;
  std::vector<IndexUnit::LocalNode> nodes;  // name: name index, parent: index distance
  uint64_t node_count = 0;
  std::vector<LineBlock> blocks;
  std::string line_data;
  std::vector<uint32_t> name_ids;  // scratch
  std::vector<SymbolEntry> symbols;
};

SymbolIndexWriter::SymbolIndexWriter(size_t units) : t_(std::make_unique<Tables>()) {
  t_->cus.resize(units);
}

SymbolIndexWriter::~SymbolIndexWriter() = default;

void SymbolIndexWriter::AddUnit(uint32_t u, const IndexUnit& r) {
  Tables& t = *t_;
  CuInfo& cu = t.cus[u];
  cu = CuInfo{};
  cu.files_begin = static_cast<uint32_t>(t.cu_files.size());
  cu.files_count = static_cast<uint32_t>(r.files.size());
  for (const std::string& f : r.files) {
    if (f.empty()) {
      t.cu_files.push_back(kNone);
      continue;
    }
    const uint32_t s = t.strings.Add(f);
    auto [it, inserted] = t.file_by_string.try_emplace(s, static_cast<uint32_t>(t.files.size()));
    if (inserted) t.files.push_back(s);
    t.cu_files.push_back(it->second);
  }
  uint64_t base = ~uint64_t{0};
  for (const auto& m : r.map) base = std::min(base, m.lo);
  for (const auto& row : r.rows) base = std::min(base, row.addr);
  cu.base = base == ~uint64_t{0} ? 0 : base;

  // Nodes (global index = node_base + unit-local index).
  const uint64_t node_base = t.node_count;
  t.name_ids.clear();
  for (const std::string* n : r.names) {
    auto [it, inserted] = t.name_by_string.try_emplace(n, 0);
    if (inserted) it->second = t.names.Add(*n);
    t.name_ids.push_back(it->second);
  }
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    IndexUnit::LocalNode n = r.nodes[i];
    if (n.name != kNone) n.name = t.names.Use(t.name_ids[n.name]);
    n.parent = n.parent == kNone ? 0 : static_cast<uint32_t>(i - n.parent);
    t.nodes.push_back(n);
    ++t.node_count;
  }

  // Map entries, in blocks.
  cu.map_block_begin = static_cast<uint32_t>(t.map_blocks.size());
  uint64_t prev_end = 0, prev_node = 0;
  uint32_t in_block = kMapBlockEntries;
  for (const auto& m : r.map) {
    const uint64_t lo = m.lo - cu.base, size = m.hi - m.lo, node = node_base + m.node;
    if (lo > 0xffffffffu || size > 0xffffffffu) continue;  // not representable: drop
    if (in_block == kMapBlockEntries) {
      t.map_blocks.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(node),
                              static_cast<uint32_t>(t.map_data.size())});
      prev_end = lo;
      prev_node = node;
      in_block = 0;
    }
    ++in_block;
    PutSleb(&t.map_data, static_cast<int64_t>(lo - prev_end));
    PutUleb(&t.map_data, size);
    PutSleb(&t.map_data, static_cast<int64_t>(node - prev_node));
    prev_end = lo + size;
    prev_node = node;
  }
  cu.map_block_end = static_cast<uint32_t>(t.map_blocks.size());
  cu.map_data_end = static_cast<uint32_t>(t.map_data.size());

  // Line rows, in blocks.
  cu.block_begin = static_cast<uint32_t>(t.blocks.size());
  uint32_t prev_line = 0;
  uint64_t prev_addr = 0;
  uint32_t rows_in_block = kLineBlockRows;
  for (const auto& row : r.rows) {
    if (row.addr - cu.base > 0xffffffffu) break;  // not representable: drop (sorted)
    if (rows_in_block == kLineBlockRows) {
      t.blocks.push_back(
          {static_cast<uint32_t>(row.addr - cu.base), static_cast<uint32_t>(t.line_data.size())});
      prev_line = 0;
      prev_addr = row.addr;
      rows_in_block = 0;
    }
    ++rows_in_block;
    PutUleb(&t.line_data, row.addr - prev_addr);
    PutUleb(&t.line_data, row.file);
    if (row.file != 0) {
      PutSleb(&t.line_data, static_cast<int64_t>(row.line) - static_cast<int64_t>(prev_line));
      PutUleb(&t.line_data, row.column);
      prev_line = row.line;
    }
    prev_addr = row.addr;
  }
  cu.block_end = static_cast<uint32_t>(t.blocks.size());
  cu.line_data_end = static_cast<uint32_t>(t.line_data.size());
}

void SymbolIndexWriter::GrowFor(size_t merged, size_t left) {
  Tables& t = *t_;
  GrowTable(&t.nodes, merged, left);
  GrowTable(&t.map_data, merged, left);
  GrowTable(&t.line_data, merged, left);
  GrowTable(&t.map_blocks, merged, left);
  GrowTable(&t.blocks, merged, left);
  GrowTable(&t.cu_files, merged, left);
}

void SymbolIndexWriter::AddSymbol(uint64_t addr, uint64_t size, std::string_view name, bool mangled,
                                  std::string_view file) {
  Tables& t = *t_;
  const uint32_t id = t.names.Use(t.names.Add(name));
  t.symbols.push_back({addr, size, mangled ? id : kNone, mangled ? kNone : id,
                       file.empty() ? kNone : t.strings.Add(file), 0});
}

absl::StatusOr<std::string> SymbolIndexWriter::Finish(std::string_view build_id,
                                                      const std::vector<CuRange>& cu_ranges,
                                                      bool has_dwarf, bool compress) {
  Tables& t = *t_;
  std::vector<uint32_t> tokens, name_offsets, name_order;
  std::string name_data;
  t.names.Finish(&t.strings, &tokens, &name_offsets, &name_data, &name_order);
  for (SymbolEntry& e : t.symbols) {
    if (e.mangled != kNone) e.mangled = name_order[e.mangled];
    if (e.demangled != kNone) e.demangled = name_order[e.demangled];
  }
  std::string node_data;
  node_data.reserve(t.nodes.size() * sizeof(Node));
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const auto& n = t.nodes[i];
    const Node node{n.name == kNone ? kNone : name_order[n.name],
                    n.parent == 0 ? kNone : static_cast<uint32_t>(i - n.parent), n.call_line,
                    static_cast<uint16_t>(n.call_file >= kNoFile ? kNoFile : n.call_file),
                    static_cast<uint16_t>(std::min<uint32_t>(n.call_column, 0xffff))};
    node_data.append(reinterpret_cast<const char*>(&node), sizeof(node));
  }
  t.nodes = {};
  const uint32_t build_id_str = t.strings.Add(build_id);

  // Offsets and counts are 32-bit in the format.
  for (uint64_t n :
       {uint64_t{t.strings.bytes().size()}, uint64_t{t.line_data.size()}, t.node_count,
        uint64_t{node_data.size()}, uint64_t{t.map_data.size()}, uint64_t{name_data.size()},
        uint64_t{t.blocks.size()}, uint64_t{t.cu_files.size()}}) {
    if (n >= kNone) {
      return absl::ResourceExhaustedError("debug information too large for a symbol index");
    }
  }
  ImageWriter w;
  w.Reserve(t.strings.bytes().size() + node_data.size() + t.map_data.size() + t.line_data.size() +
            name_data.size() + t.symbols.size() * sizeof(SymbolEntry) +
            (t.files.size() + t.cu_files.size() + tokens.size() + name_offsets.size()) * 4 +
            t.cus.size() * sizeof(CuInfo) + cu_ranges.size() * sizeof(CuRange) +
            t.map_blocks.size() * sizeof(MapBlock) + t.blocks.size() * sizeof(LineBlock));
  w.PutBytes(kStrings, t.strings.bytes().data(), t.strings.bytes().size(),
             t.strings.bytes().size());
  w.Put(kFiles, t.files);
  w.Put(kCuRanges, cu_ranges);
  w.Put(kCus, t.cus);
  w.Put(kCuFiles, t.cu_files);
  w.Put(kMapBlocks, t.map_blocks);
  w.PutBytes(kMapData, t.map_data, compress);
  w.PutBytes(kNodeData, node_data, compress);
  w.Put(kLineBlocks, t.blocks);
  w.PutBytes(kLineData, t.line_data, compress);
  w.Put(kSymbols, t.symbols);
  w.Put(kTokens, tokens);
  w.Put(kNames, name_offsets);
  w.PutBytes(kNameData, name_data, compress);
  return w.Finish(build_id_str, has_dwarf ? kHasDwarf : 0, static_cast<uint32_t>(t.node_count));
}

}  // namespace hangwatch::symbols
