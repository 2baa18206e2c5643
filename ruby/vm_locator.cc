#include "ruby/vm_locator.h"

#include <string_view>

#include "absl/status/status.h"
#include "symbols/elf_file.h"

namespace hangwatch::ruby {
namespace {

struct Exports {
  uint64_t vm_ptr = 0;
  uint64_t api_version = 0;
  uint64_t version = 0;
  uint64_t version_size = 0;
  uint64_t exec = 0;
  uint64_t exec_size = 0;
};

Exports ReadExports(Elf* elf) {
  Exports e;
  symbols::ForEachElfSymbol(elf, SHT_DYNSYM,
                            [&](const GElf_Sym& sym, const char* name, std::string_view) {
                              if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) return;
                              const std::string_view n(name);
                              if (n == "ruby_current_vm_ptr") {
                                e.vm_ptr = sym.st_value;
                              } else if (n == "ruby_api_version" && sym.st_size == 12) {
                                e.api_version = sym.st_value;
                              } else if (n == "ruby_version") {
                                e.version = sym.st_value;
                                e.version_size = sym.st_size;
                              } else if (n == "rb_vm_exec") {
                                e.exec = sym.st_value;
                                e.exec_size = sym.st_size;
                              }
                            });
  return e;
}

// Whether the module's file name may hold the VM: libruby*.so*, or an executable named ruby*.
bool MayBeRuby(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string_view name =
      std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  return name.starts_with("libruby") || name.starts_with("ruby");
}

}  // namespace

absl::StatusOr<VmAddresses> LocateVm(const symbols::ProcessModules& modules,
                                     const python::MemoryReader& memory) {
  symbols::ElfLibraryInit();
  const auto all = modules.map->modules();
  for (size_t i = 0; i < all.size() && i < modules.open_paths.size(); ++i) {
    if (!MayBeRuby(all[i].path) || modules.open_paths[i].empty()) continue;
    absl::StatusOr<std::unique_ptr<symbols::ElfFile>> file =
        symbols::ElfFile::Open(modules.open_paths[i]);
    if (!file.ok()) return file.status();
    const Exports e = ReadExports((*file)->elf());
    if (e.vm_ptr == 0) continue;  // a ruby executable linked with libruby only imports it
    VmAddresses a;
    a.module_path = all[i].path;
    const uint64_t bias = all[i].load_bias;
    a.vm_ptr = bias + e.vm_ptr;
    if (e.exec != 0 && e.exec_size != 0) {
      a.exec_lo = bias + e.exec;
      a.exec_hi = a.exec_lo + e.exec_size;
    }
    int32_t api[3] = {0, 0, 0};
    if (e.api_version == 0 || !memory.Read(bias + e.api_version, api, sizeof(api))) {
      return absl::FailedPreconditionError(a.module_path +
                                           ": ruby_api_version is missing or unreadable");
    }
    a.api_major = api[0];
    a.api_minor = api[1];
    a.api_teeny = api[2];
    char version[16] = {};
    if (e.version != 0 && e.version_size > 1 && e.version_size <= sizeof(version) &&
        memory.Read(bias + e.version, version, e.version_size)) {
      version[sizeof(version) - 1] = '\0';
      for (char c : std::string_view(version, e.version_size - 1)) {
        if (c == '\0') break;
        if ((c < '0' || c > '9') && c != '.') {
          a.version.clear();
          break;
        }
        a.version.push_back(c);
      }
    }
    return a;
  }
  return absl::NotFoundError(
      "no Ruby VM (libruby or a ruby executable exporting "
      "ruby_current_vm_ptr) in the process");
}

}  // namespace hangwatch::ruby
