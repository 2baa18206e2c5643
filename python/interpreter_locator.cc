#include "python/interpreter_locator.h"

#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "symbols/elf_file.h"
#include "unwind/thread_pointer.h"

namespace hangwatch::python {
namespace {

// The dynamic symbols python/ needs, as ELF virtual addresses (0: absent).
struct Exports {
  uint64_t runtime = 0;
  uint64_t code_type = 0;
  uint64_t version = 0;
  uint64_t eval = 0;
  uint64_t eval_size = 0;
};

Exports ReadExports(Elf* elf) {
  Exports e;
  symbols::ForEachElfSymbol(elf, SHT_DYNSYM,
                            [&](const GElf_Sym& sym, const char* name, std::string_view) {
                              if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) return;
                              const std::string_view n(name);
                              if (n == "_PyRuntime") {
                                e.runtime = sym.st_value;
                              } else if (n == "PyCode_Type") {
                                e.code_type = sym.st_value;
                              } else if (n == "Py_Version") {
                                e.version = sym.st_value;
                              } else if (n == "_PyEval_EvalFrameDefault") {
                                e.eval = sym.st_value;
                                e.eval_size = sym.st_size;
                              }
                            });
  return e;
}

// glibc's sizeof(struct pthread), read from the target's libc.so.6 (0 when there is none, or
// it does not export the size: musl, glibc before 2.34 kept it in libpthread).
uint64_t ReadPthreadSize(const symbols::ProcessModules& modules, const MemoryReader& memory) {
  const auto all = modules.map->modules();
  for (size_t i = 0; i < all.size() && i < modules.open_paths.size(); ++i) {
    const std::string& path = all[i].path;
    const size_t slash = path.rfind('/');
    if (path.compare(slash == std::string::npos ? 0 : slash + 1, 8, "libc.so.") != 0 ||
        modules.open_paths[i].empty()) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<symbols::ElfFile>> file =
        symbols::ElfFile::Open(modules.open_paths[i]);
    if (!file.ok()) return 0;
    uint64_t at = 0;
    symbols::ForEachElfSymbol((*file)->elf(), SHT_DYNSYM,
                              [&](const GElf_Sym& sym, const char* name, std::string_view) {
                                if (sym.st_shndx != SHN_UNDEF && sym.st_size == 4 &&
                                    std::strcmp(name, unwind::kGlibcPthreadSizeSymbol) == 0) {
                                  at = sym.st_value;
                                }
                              });
    uint32_t size = 0;
    if (at == 0 || !memory.Read(all[i].load_bias + at, &size, sizeof(size))) return 0;
    return size;
  }
  return 0;
}

}  // namespace

int MinorFromModuleName(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string_view name(path);
  if (slash != std::string::npos) name.remove_prefix(slash + 1);
  if (name.starts_with("lib")) name.remove_prefix(3);
  if (!name.starts_with("python3.")) return -1;
  name.remove_prefix(8);
  int minor = 0;
  size_t digits = 0;
  while (digits < name.size() && digits < 3 && name[digits] >= '0' && name[digits] <= '9') {
    minor = minor * 10 + (name[digits] - '0');
    ++digits;
  }
  if (digits == 0) return -1;
  // What may follow: nothing (the executable), ".so...", or an ABI flag ("d", "m", "t").
  const std::string_view rest = name.substr(digits);
  if (!rest.empty() && rest[0] != '.' && rest[0] != 'd' && rest[0] != 'm' && rest[0] != 't') {
    return -1;
  }
  return minor;
}

absl::StatusOr<InterpreterAddresses> LocateInterpreter(const symbols::ProcessModules& modules,
                                                       const MemoryReader& memory) {
  symbols::ElfLibraryInit();
  const auto all = modules.map->modules();
  // Both the executable and libpython may be named python3.X: the one exporting _PyRuntime
  // with a definition is the interpreter (a python3.X linked with libpython only imports it).
  for (size_t i = 0; i < all.size(); ++i) {
    const int name_minor = MinorFromModuleName(all[i].path);
    if (name_minor < 0 || i >= modules.open_paths.size() || modules.open_paths[i].empty()) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<symbols::ElfFile>> file =
        symbols::ElfFile::Open(modules.open_paths[i]);
    if (!file.ok()) return file.status();
    const Exports e = ReadExports((*file)->elf());
    if (e.runtime == 0) continue;
    InterpreterAddresses a;
    a.module_path = all[i].path;
    a.minor = name_minor;
    const uint64_t bias = all[i].load_bias;
    a.runtime = bias + e.runtime;
    if (e.code_type != 0) a.code_type = bias + e.code_type;
    if (e.eval != 0 && e.eval_size != 0) {
      a.eval_lo = bias + e.eval;
      a.eval_hi = a.eval_lo + e.eval_size;
    }
    // Py_Version (3.11+): PY_VERSION_HEX, 0xMMmmuuRS.
    uint32_t hex = 0;
    if (e.version != 0 && memory.Read(bias + e.version, &hex, sizeof(hex))) {
      if ((hex >> 24) == 3) {
        a.minor = static_cast<int>((hex >> 16) & 0xff);
        a.micro = static_cast<int>((hex >> 8) & 0xff);
      }
    }
    if (a.code_type == 0) {
      return absl::FailedPreconditionError(all[i].path + " exports _PyRuntime but not PyCode_Type");
    }
    a.pthread_size = ReadPthreadSize(modules, memory);
    return a;
  }
  return absl::NotFoundError(
      "no CPython interpreter (python3.X or libpython3.X.so) in the process");
}

}  // namespace hangwatch::python
