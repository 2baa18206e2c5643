// OfflineSymbolizer: debug file resolution, cache, cold and full index paths.
#include "symbols/offline_symbolizer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/debug_file_locator.h"
#include "symbols/debuginfod_source.h"
#include "symbols/elf_file.h"
#include "symbols/symbol_index_builder.h"

namespace hangwatch::symbols {
namespace {

void MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
  }
}

bool ValidBuildId(const std::string& id) {
  if (id.size() < 2 || id.size() > 128) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status WriteAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

void FillUnknown(size_t n, std::vector<SymbolizedAddress>* out) {
  out->clear();
  out->resize(n);
  for (auto& a : *out) a.frames.emplace_back();
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("HANGWATCH_CACHE_DIR"); d != nullptr && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x) {
    return std::string(x) + "/hangwatch";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home ? home : "/tmp") + "/.cache/hangwatch";
}

std::string CacheFileFor(const std::string& cache_dir, const std::string& build_id) {
  return cache_dir + "/" + build_id + ".hwsym";
}

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
    auto cached = SymbolIndex::Open(CacheFileFor(options_.cache_dir, source.build_id));
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
  if (cacheable && options_.write_cache && !source.debug_path.empty()) {
    MakeDirs(options_.cache_dir);
    absl::Status w = WriteAtomically(CacheFileFor(options_.cache_dir, source.build_id), *bytes);
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
  if (options_.read_cache && full_.count(build_id) == 0) {
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
  MakeDirs(options_.cache_dir);
  const std::string out = CacheFileFor(options_.cache_dir, source->build_id);
  if (absl::Status w = WriteAtomically(out, *bytes); !w.ok()) return w;
  return out;
}

}  // namespace hangwatch::symbols
