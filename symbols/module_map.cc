// ModuleMap: dl_iterate_phdr snapshots, address lookups, and the published current map.
#include "symbols/module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>

#include "unwind/proc_files.h"

namespace hangwatch::symbols {
namespace {

// Notes are 4-byte aligned in every ELF64 file produced by GNU and LLVM toolchains (the gABI
// says 8, but no linker does that for PT_NOTE segments that hold NT_GNU_BUILD_ID).
size_t AlignNote(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

std::string HexBuildId(const unsigned char* bytes, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 15]);
  }
  return out;
}

// Reads NT_GNU_BUILD_ID from a loaded PT_NOTE segment. The segment is mapped (the loader maps
// every PT_LOAD, and PT_NOTE lies inside one), so reading it in memory is safe.
std::string BuildIdFromNote(const unsigned char* p, size_t size, size_t align) {
  if (align != 8) align = 4;
  size_t pos = 0;
  while (pos + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) nhdr;
    std::memcpy(&nhdr, p + pos, sizeof(nhdr));
    const size_t name_at = pos + sizeof(nhdr);
    const size_t desc_at = name_at + AlignNote(nhdr.n_namesz, align);
    const size_t next = desc_at + AlignNote(nhdr.n_descsz, align);
    if (desc_at > size || next > size || next <= pos) break;
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(p + name_at, "GNU", 4) == 0 && nhdr.n_descsz > 0) {
      return HexBuildId(p + desc_at, nhdr.n_descsz);
    }
    pos = next;
  }
  return {};
}

std::string MainProgramPath() {
  char buf[PATH_MAX];
  const ssize_t n = unwind::ReadExePath(buf, sizeof(buf));
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

int CollectModule(struct dl_phdr_info* info, size_t, void* data) {
  auto* modules = static_cast<std::vector<Module>*>(data);
  Module m;
  m.load_bias = info->dlpi_addr;
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    m.path = info->dlpi_name;
  } else if (modules->empty()) {
    m.path = MainProgramPath();  // the loader reports the main program with an empty name
  }
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0 && ph.p_memsz > 0) {
      m.exec_ranges.push_back(
          {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
    } else if (ph.p_type == PT_NOTE && m.build_id.empty()) {
      m.build_id =
          BuildIdFromNote(reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr),
                          ph.p_memsz, ph.p_align);
    }
  }
  if (!m.exec_ranges.empty()) modules->push_back(std::move(m));
  return 0;
}

struct LoadCounters {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int ReadCounters(struct dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<LoadCounters*>(data);
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // one callback is enough: the counters are global
}

}  // namespace

ModuleMap::ModuleMap(std::vector<Module> modules) : modules_(std::move(modules)) {
  for (uint32_t i = 0; i < modules_.size(); ++i) {
    for (const AddressRange& r : modules_[i].exec_ranges) {
      if (r.hi > r.lo) ranges_.push_back({r, i});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const auto& a, const auto& b) { return a.first.lo < b.first.lo; });
}

std::shared_ptr<const ModuleMap> ModuleMap::Snapshot() {
  std::vector<Module> modules;
  dl_iterate_phdr(CollectModule, &modules);
  return std::make_shared<const ModuleMap>(std::move(modules));
}

ModuleAddress ModuleMap::Find(uintptr_t addr) const {
  // The last range starting at or below addr is the only candidate: ranges do not overlap.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uintptr_t a, const auto& r) { return a < r.first.lo; });
  if (it == ranges_.begin()) return {};
  --it;
  if (addr >= it->first.hi) return {};
  const Module& m = modules_[it->second];
  return {&m, static_cast<uint64_t>(addr - m.load_bias)};
}

namespace {

// The published map. Readers load the raw pointer with acquire ordering and never free it;
// every map ever published stays alive in `retired` for the life of the process, so a reader on
// the capture path can never see freed memory. One map per dlopen/dlclose burst is a small
// price.
struct Published {
  std::mutex mu;  // serializes refreshes only
  std::atomic<const ModuleMap*> current{nullptr};
  std::shared_ptr<const ModuleMap> current_owner;
  std::vector<std::shared_ptr<const ModuleMap>> retired;
  std::atomic<unsigned long long> adds{~0ull};
  std::atomic<unsigned long long> subs{~0ull};
};

Published& GetPublished() {
  static auto* p = new Published;  // never destroyed: capture code may read it at exit
  return *p;
}

}  // namespace

std::shared_ptr<const ModuleMap> CurrentModuleMap() {
  Published& p = GetPublished();
  LoadCounters c;
  dl_iterate_phdr(ReadCounters, &c);
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.current_owner != nullptr && c.adds == p.adds.load(std::memory_order_relaxed) &&
      c.subs == p.subs.load(std::memory_order_relaxed)) {
    return p.current_owner;
  }
  auto fresh = ModuleMap::Snapshot();
  if (p.current_owner != nullptr) p.retired.push_back(p.current_owner);
  p.current_owner = fresh;
  p.adds.store(c.adds, std::memory_order_relaxed);
  p.subs.store(c.subs, std::memory_order_relaxed);
  p.current.store(fresh.get(), std::memory_order_release);
  return fresh;
}

const ModuleMap* PublishedModuleMap() {
  return GetPublished().current.load(std::memory_order_acquire);
}

}  // namespace hangwatch::symbols
