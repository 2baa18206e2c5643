// OfflineSymbolizer: debug file resolution, cache, cold and full index paths.
#include "symbols/offline_symbolizer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/debug_file_locator.h"
#include "symbols/debuginfod_source.h"
#include "symbols/elf_file.h"
#include "symbols/index/symbol_index_builder.h"
#include "symbols/symbol_cache.h"

namespace hangwatch::symbols {
namespace {

void MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0700);
  }
}

bool ValidBuildId(const std::string& id) {
  if (id.size() < 2 || id.size() > 128) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void FillUnknown(size_t n, std::vector<SymbolizedAddress>* out) {
  out->clear();
  out->resize(n);
  for (auto& a : *out) a.frames.emplace_back();
}

}  // namespace

namespace {

DebugFileLocatorOptions LocatorOptions(const OfflineSymbolizerOptions& options) {
  DebugFileLocatorOptions o{options.debug_dirs, options.search_paths};
  if (options.remote != nullptr) {
    o.remote.push_back(options.remote);
  } else if (options.debuginfod) {
    if (auto source = DebuginfodSourceFromEnvironment()) o.remote.push_back(std::move(source));
  }
  return o;
}

}  // namespace

OfflineSymbolizer::OfflineSymbolizer(OfflineSymbolizerOptions options)
    : options_(std::move(options)), locator_(LocatorOptions(options_)) {
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCacheDir();
}

OfflineSymbolizer::~OfflineSymbolizer() = default;

bool OfflineSymbolizer::CacheUsable(bool create) {
  if (cache_ != CacheState::kUnchecked || options_.cache_dir.empty()) {
    return cache_ == CacheState::kTrusted;
  }
  if (create) MakeDirs(options_.cache_dir);
  struct stat st;
  if (stat(options_.cache_dir.c_str(), &st) != 0) return false;  // not there yet: nothing in it
  absl::Status trusted = CheckCacheDir(options_.cache_dir);
  cache_ = trusted.ok() ? CacheState::kTrusted : CacheState::kRefused;
  if (!trusted.ok()) {
    warnings_.push_back(absl::StrCat("symbol cache not used: ", trusted.message()));
  }
  return cache_ == CacheState::kTrusted;
}

absl::StatusOr<OfflineSymbolizer::Source> OfflineSymbolizer::Resolve(const std::string& path) {
  auto file = ElfFile::Open(path);
  if (!file.ok()) return file.status();
  Source s;
  s.symbols_path = path;
  s.build_id = ReadBuildId((*file)->elf());
  std::vector<std::string> rejected;
  s.debug_path = locator_.FindDwarf(path, s.build_id, &rejected);
  for (const std::string& r : rejected) warnings_.push_back("ignored debug file " + r);
  return s;
}

absl::StatusOr<const SymbolIndex*> OfflineSymbolizer::IndexFor(
    const Source& source, std::span<const uint64_t> addresses) {
  const std::string key = source.build_id.empty() ? "path:" + source.symbols_path : source.build_id;
  if (auto it = full_.find(key); it != full_.end()) return it->second.get();
  const bool cacheable = ValidBuildId(source.build_id);
  if (cacheable && options_.read_cache) {
    auto cached = CacheUsable(false)
                      ? SymbolIndex::Open(CacheFileFor(options_.cache_dir, source.build_id))
                      : absl::NotFoundError("no cache");
    if (cached.ok() && (*cached)->build_id() == source.build_id &&
        ((*cached)->has_dwarf() || source.debug_path.empty())) {
      return (full_[key] = std::move(*cached)).get();
    }
  }
  SymbolIndexOptions build;
  build.symbols_path = source.symbols_path;
  build.debug_path = source.debug_path;
  build.threads = options_.threads;
  if (addresses.size() <= options_.cold_limit) {
    // Cold path: only the units that cover these addresses, names demangled on demand.
    build.only_addresses.assign(addresses.begin(), addresses.end());
    build.demangle_symbols = false;
    build.compress = false;
    auto bytes = BuildSymbolIndex(build);
    if (!bytes.ok()) return bytes.status();
    auto index = SymbolIndex::FromBytes(std::move(*bytes));
    if (!index.ok()) return index.status();
    partial_.push_back(std::move(*index));
    return partial_.back().get();
  }
  auto bytes = BuildSymbolIndex(build);
  if (!bytes.ok()) return bytes.status();
  // Symbol-table-only indexes too: a large .symtab without DWARF (libjvm.so: 57,000 C++
  // functions) costs tens of milliseconds to index each time. A cached one is used only while
  // no debug file exists for it (above); one installed later replaces it.
  if (cacheable && options_.write_cache && CacheUsable(true)) {
    absl::Status w = WriteCacheFile(options_.cache_dir, source.build_id + ".hwsym", *bytes);
    if (!w.ok()) warnings_.push_back(std::string(w.message()));
  }
  auto index = SymbolIndex::FromBytes(std::move(*bytes));
  if (!index.ok()) return index.status();
  return (full_[key] = std::move(*index)).get();
}

absl::Status OfflineSymbolizer::SymbolizeFile(const std::string& path,
                                              std::span<const uint64_t> addresses,
                                              std::vector<SymbolizedAddress>* out) {
  auto source = Resolve(path);
  if (!source.ok()) {
    FillUnknown(addresses.size(), out);
    return source.status();
  }
  auto index = IndexFor(*source, addresses);
  if (!index.ok()) {
    FillUnknown(addresses.size(), out);
    return index.status();
  }
  out->resize(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) (*index)->Lookup(addresses[i], &(*out)[i]);
  return absl::OkStatus();
}

absl::Status OfflineSymbolizer::SymbolizeBuildId(const std::string& build_id,
                                                 const std::string& module_path,
                                                 std::span<const uint64_t> addresses,
                                                 std::vector<SymbolizedAddress>* out) {
  if (!ValidBuildId(build_id)) {
    FillUnknown(addresses.size(), out);
    return absl::InvalidArgumentError(absl::StrCat("not a build-id: '", build_id, "'"));
  }
  // A cached index answers without any file.
  if (options_.read_cache && full_.count(build_id) == 0 && CacheUsable(false)) {
    auto cached = SymbolIndex::Open(CacheFileFor(options_.cache_dir, build_id));
    if (cached.ok() && (*cached)->build_id() == build_id && (*cached)->has_dwarf()) {
      full_[build_id] = std::move(*cached);
    }
  }
  if (auto it = full_.find(build_id); it != full_.end()) {
    out->resize(addresses.size());
    for (size_t i = 0; i < addresses.size(); ++i) it->second->Lookup(addresses[i], &(*out)[i]);
    return absl::OkStatus();
  }
  // The file itself is then resolved by path (its debug file, or its own DWARF); what this
  // lookup rejected on the way is not worth a warning.
  std::vector<std::string> rejected;
  const std::string path = locator_.FindByBuildId(build_id, module_path, &rejected);
  if (path.empty()) {
    FillUnknown(addresses.size(), out);
    return absl::NotFoundError(absl::StrCat("no binary or debug file with build-id ", build_id,
                                            module_path.empty() ? "" : " (module ", module_path,
                                            module_path.empty() ? "" : ")"));
  }
  return SymbolizeFile(path, addresses, out);
}

absl::StatusOr<std::string> OfflineSymbolizer::IndexBinary(const std::string& path) {
  auto source = Resolve(path);
  if (!source.ok()) return source.status();
  if (!ValidBuildId(source->build_id)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": no GNU build-id, cannot cache"));
  }
  SymbolIndexOptions build;
  build.symbols_path = source->symbols_path;
  build.debug_path = source->debug_path;
  build.threads = options_.threads;
  auto bytes = BuildSymbolIndex(build);
  if (!bytes.ok()) return bytes.status();
  if (!CacheUsable(true)) {
    return absl::FailedPreconditionError(
        warnings_.empty() ? "no cache directory (set HANGWATCH_CACHE_DIR)" : warnings_.back());
  }
  if (absl::Status w = WriteCacheFile(options_.cache_dir, source->build_id + ".hwsym", *bytes);
      !w.ok()) {
    return w;
  }
  return CacheFileFor(options_.cache_dir, source->build_id);
}

}  // namespace hangwatch::symbols
