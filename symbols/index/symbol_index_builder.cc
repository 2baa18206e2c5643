// BuildSymbolIndex: DWARF (libdw and our own readers) + ELF symbols (libelf) -> index image.
//
// The rules reproduce llvm-symbolizer's (LLVM 14 DWARFContext / SymbolizableObjectFile) so that
// answers are identical: which unit covers an address (internal/dwarf_units.h), the innermost
// subroutine DIE and its name (internal/unit_reader.h and the DIE walks it uses), file paths
// and line rows (internal/unit_lines.h), and the symbol table (elf_symbol_table.h,
// ElfSymbolPolicy::kLlvmSymbolizer). This file schedules the units over worker threads and
// hands them, in order, to SymbolIndexWriter (internal/symbol_index_writer.h).
#include "symbols/index/symbol_index_builder.h"

#include <elfutils/libdw.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "symbols/demangle.h"
#include "symbols/dwarf_image.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/index/internal/dwarf_units.h"
#include "symbols/index/internal/run_on_threads.h"
#include "symbols/index/internal/symbol_index_writer.h"
#include "symbols/index/internal/unit_reader.h"
#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols {

using index_format::CuRange;
using internal::ThreadState;
using internal::UnitRef;

namespace {

// The units that cover `addresses` (all units when it is empty), in unit order.
std::vector<uint32_t> UnitsToRead(size_t units, const std::vector<CuRange>& cu_ranges,
                                  const std::vector<uint64_t>& addresses) {
  std::vector<uint32_t> todo;
  if (addresses.empty()) {
    for (uint32_t u = 0; u < units; ++u) todo.push_back(u);
    return todo;
  }
  std::vector<bool> want(units, false);
  for (uint64_t a : addresses) {
    auto it = std::upper_bound(cu_ranges.begin(), cu_ranges.end(), a,
                               [](uint64_t x, const CuRange& r) { return x < r.lo; });
    if (it != cu_ranges.begin() && a < (it - 1)->hi) want[(it - 1)->cu] = true;
  }
  for (uint32_t u = 0; u < units; ++u) {
    if (want[u]) todo.push_back(u);
  }
  return todo;
}

// Cold path: only the symbols that the lookups of `only` (sorted) will find.
void KeepSymbolsFor(const std::vector<uint64_t>& only,
                    std::vector<ElfSymbolSelection::Symbol>* symbols) {
  std::vector<ElfSymbolSelection::Symbol> kept;
  for (uint64_t a : only) {
    auto it = std::upper_bound(
        symbols->begin(), symbols->end(), a,
        [](uint64_t x, const ElfSymbolSelection::Symbol& r) { return x < r.addr; });
    if (it == symbols->begin()) continue;
    --it;
    if (kept.empty() || kept.back().addr != it->addr) kept.push_back(*it);
  }
  *symbols = std::move(kept);
}

}  // namespace

absl::StatusOr<std::string> BuildSymbolIndex(const SymbolIndexOptions& options,
                                             SymbolIndexStats* stats) {
  SymbolIndexStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = SymbolIndexStats();
  ElfLibraryInit();

  // The symbol table (and the build-id) come from the binary.
  const std::string& symbols_path =
      options.symbols_path.empty() ? options.debug_path : options.symbols_path;
  auto symbols_file = ElfFile::Open(symbols_path);
  if (!symbols_file.ok()) return symbols_file.status();
  std::string build_id = ReadBuildId((*symbols_file)->elf());
  ElfSymbolSelection elf_symbols;
  SelectElfSymbols((*symbols_file)->elf(), ElfSymbolPolicy::kLlvmSymbolizer, &elf_symbols);

  std::vector<UnitRef> units;
  std::vector<CuRange> cu_ranges;
  std::unique_ptr<DwarfImage> image;
  LineSections line_sections;
  DieSections die_sections;
  if (!options.debug_path.empty()) {
    auto opened = DwarfImage::Open(options.debug_path);
    if (!opened.ok()) return opened.status();
    image = std::move(*opened);
    stats->debug_bytes = image->debug_bytes();
    stats->debug_bytes_on_disk = image->debug_bytes_on_disk();
    ElfHandle elf = image->NewElf();
    DwarfHandle dbg = DwarfImage::NewDwarf(elf.get());
    if (dbg != nullptr) internal::CollectUnits(dbg.get(), &units, &cu_ranges);
    line_sections.debug_line = image->Section(elf.get(), ".debug_line");
    line_sections.debug_str = image->Section(elf.get(), ".debug_str");
    line_sections.debug_line_str = image->Section(elf.get(), ".debug_line_str");
    die_sections.info = image->Section(elf.get(), ".debug_info");
    die_sections.abbrev = image->Section(elf.get(), ".debug_abbrev");
    die_sections.str = line_sections.debug_str;
    die_sections.line_str = line_sections.debug_line_str;
    die_sections.str_offsets = image->Section(elf.get(), ".debug_str_offsets");
    die_sections.addr = image->Section(elf.get(), ".debug_addr");
    die_sections.ranges = image->Section(elf.get(), ".debug_ranges");
    die_sections.rnglists = image->Section(elf.get(), ".debug_rnglists");
  }
  stats->units = units.size();
  const std::vector<uint32_t> todo = UnitsToRead(units.size(), cu_ranges, options.only_addresses);
  stats->units_read = todo.size();

  std::vector<uint64_t> only = options.only_addresses;
  std::sort(only.begin(), only.end());
  SymbolIndexWriter writer(units.size());

  // Units are merged in order as soon as they are read, and their buffers go back to the
  // readers: memory stays at a few units' worth instead of the whole DWARF's.
  std::vector<bool> wanted(units.size(), false);
  for (uint32_t u : todo) wanted[u] = true;
  std::mutex merge_mu;
  uint32_t next_merge = 0;
  size_t merged = 0;  // units read and merged
  std::vector<std::unique_ptr<IndexUnit>> ready(units.size());
  std::vector<std::unique_ptr<IndexUnit>> spare;
  const IndexUnit unread;
  // Merges every unit whose turn has come (with `all`, missing ones as unread).
  auto drain = [&](bool all) {
    for (; next_merge < units.size(); ++next_merge) {
      const uint32_t u = next_merge;
      if (wanted[u] && ready[u] == nullptr && !all) return;
      const IndexUnit& r = ready[u] != nullptr ? *ready[u] : unread;
      stats->units_libdw += r.libdw ? 1 : 0;
      writer.AddUnit(u, r);
      // Room for the units still to come, extrapolated from those merged so far.
      if (r.read) {
        ++merged;
        writer.GrowFor(merged, todo.size() - std::min(todo.size(), merged));
      }
      if (ready[u] != nullptr) {
        ready[u]->Clear();
        spare.push_back(std::move(ready[u]));
      }
    }
  };

  // Per-thread state outlives the threads: merged units point at the names it caches.
  std::vector<ThreadState> states;
  if (!todo.empty()) {
    unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                           : std::max(1u, std::thread::hardware_concurrency());
    threads = std::min<unsigned>(threads, static_cast<unsigned>(todo.size()));
    // A cold lookup reads a unit in a couple of milliseconds: another thread (its own libdw
    // handle, and a core that a busy machine may not have free) only pays off for many units.
    if (!only.empty()) threads = std::min<unsigned>(threads, std::max<size_t>(1, todo.size() / 8));
    std::atomic<size_t> next{0};
    states.resize(threads);
    internal::RunOnThreads(threads, [&](unsigned thread) {
      ElfHandle elf = image->NewElf();
      DwarfHandle dbg = DwarfImage::NewDwarf(elf.get());
      if (dbg == nullptr) return;
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        const uint32_t u = todo[i];
        std::unique_ptr<IndexUnit> result;
        {
          std::lock_guard<std::mutex> lock(merge_mu);
          if (!spare.empty()) {
            result = std::move(spare.back());
            spare.pop_back();
          }
        }
        if (result == nullptr) result = std::make_unique<IndexUnit>();
        Dwarf_Die cudie;
        if (dwarf_offdie(dbg.get(), units[u].die_offset, &cudie) != nullptr) {
          internal::ReadUnit(
              &states[thread], line_sections, options.libdw_dies ? nullptr : &die_sections,
              only.empty() ? nullptr : &only, &cudie, units[u].version, result.get());
        }
        std::lock_guard<std::mutex> lock(merge_mu);
        ready[u] = std::move(result);
        drain(false);
      }
    });
  }
  drain(true);
  spare.clear();

  if (!only.empty()) KeepSymbolsFor(only, &elf_symbols.symbols);
  for (const ElfSymbolSelection::Symbol& s : elf_symbols.symbols) {
    if (!options.demangle_symbols) {
      writer.AddSymbol(s.addr, s.size, s.name, /*mangled=*/true, s.file);
    } else if (s.name.size() >= 2 && s.name[0] == '_' && s.name[1] == 'Z') {
      writer.AddSymbol(s.addr, s.size, Demangle(s.name), /*mangled=*/false, s.file);
    } else {
      writer.AddSymbol(s.addr, s.size, s.name, /*mangled=*/false, s.file);
    }
  }
  auto out = writer.Finish(build_id, cu_ranges, !units.empty(), options.compress);
  if (out.ok()) stats->index_bytes = out->size();
  return out;
}

}  // namespace hangwatch::symbols
