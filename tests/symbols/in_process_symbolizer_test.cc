// SymbolizeInProcess and ElfSymbolTable: static functions from .symtab, demangling, return
// addresses at addr - 1, .dynsym only, MiniDebugInfo, bad files.
#include "symbols/in_process_symbolizer.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbols/debug_file_locator.h"
#include "symbols/elf_symbol_table.h"
#include "tests/sanitizer_allocator.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;
using ::testing::HasSubstr;

namespace {
__attribute__((noinline)) int HiddenStaticFunction(int x) {
  asm volatile("" ::: "memory");
  return x * 7;
}
}  // namespace

template <typename T>
struct Box {
  __attribute__((noinline)) static T Twice(T v) {
    asm volatile("" ::: "memory");
    return v + v;
  }
};

__attribute__((noinline)) uintptr_t ReturnAddressOfThisCall() {
  auto ra = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
  return ra;
}

__attribute__((noinline)) uintptr_t CallerOfReturnAddress() {
  uintptr_t ra = ReturnAddressOfThisCall();
  asm volatile("" ::: "memory");
  return ra;
}

TEST(InProcessSymbolizerTest, StaticFunctionInAnonymousNamespace) {
  SymbolInfo info;
  auto addr = reinterpret_cast<uintptr_t>(&HiddenStaticFunction);
  ASSERT_TRUE(SymbolizeInProcess(addr, false, &info));
  EXPECT_EQ(info.name,
            "hangwatch::symbols::(anonymous namespace)::(anonymous "
            "namespace)::HiddenStaticFunction(int)");
  EXPECT_EQ(info.function_offset, 0u);
  ASSERT_TRUE(SymbolizeInProcess(addr + 3, false, &info));
  EXPECT_EQ(info.function_offset, 3u);
}

// The vDSO has no file: its names come from its image in memory.
TEST(InProcessSymbolizerTest, VdsoFunctionsAreNamedFromTheImageInMemory) {
  if (getauxval(AT_SYSINFO_EHDR) == 0) GTEST_SKIP() << "no vDSO";
  void* vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(vdso, nullptr) << dlerror();
  void* fn = dlsym(vdso, "__vdso_clock_gettime");
  ASSERT_NE(fn, nullptr);
  SymbolInfo info;
  ASSERT_TRUE(SymbolizeInProcess(reinterpret_cast<uintptr_t>(fn) + 2, false, &info));
  EXPECT_THAT(info.name, HasSubstr("clock_gettime"));
  EXPECT_EQ(info.function_offset, 2u);
  auto map = CurrentModuleMap();
  SymbolView view;
  ASSERT_TRUE(LookupInProcess(*map, reinterpret_cast<uintptr_t>(fn), false, true, &view));
  EXPECT_THAT(view.module->path, HasSubstr("vdso"));
  dlclose(vdso);
}

// A stripped library whose debug file is installed (libc6-dbg): its local functions are named
// from the debug file's .symtab, as `hangwatch report` names them, and versioned names lose
// their version ("__libc_start_main", not "__libc_start_main@@GLIBC_2.34").
TEST(InProcessSymbolizerTest, StrippedLibraryIsNamedFromItsInstalledDebugFile) {
  auto map = CurrentModuleMap();
  const Module* libc = nullptr;
  for (const Module& m : map->modules()) {
    if (m.path.find("/libc.so.6") != std::string::npos) libc = &m;
  }
  ASSERT_NE(libc, nullptr);
  DebugFileSearch search;
  if (libc->build_id.empty() || FindDebugFileByBuildId(libc->build_id, &search).empty()) {
    GTEST_SKIP() << "no debug file for " << libc->path << " (install libc6-dbg)";
  }
  // This test runs on the main thread: its outermost frames are libc's start-up functions.
  void* frames[256];
  const int n = backtrace(frames, 256);
  std::vector<std::string> libc_names;
  for (int i = 1; i < n; ++i) {
    const auto addr = reinterpret_cast<uintptr_t>(frames[i]);
    if (map->Find(addr - 1).module != libc) continue;
    SymbolInfo info;
    ASSERT_TRUE(SymbolizeInProcess(addr, true, &info)) << std::hex << addr;
    libc_names.push_back(info.name);
  }
  EXPECT_THAT(libc_names, ::testing::Contains("__libc_start_call_main"));
  EXPECT_THAT(libc_names, ::testing::Contains("__libc_start_main"));
}

TEST(InProcessSymbolizerTest, TemplateIsDemangled) {
  SymbolInfo info;
  ASSERT_TRUE(SymbolizeInProcess(reinterpret_cast<uintptr_t>(&Box<long>::Twice), false, &info));
  EXPECT_EQ(info.name, "hangwatch::symbols::(anonymous namespace)::Box<long>::Twice(long)");
}

TEST(InProcessSymbolizerTest, ReturnAddressIsAttributedToTheCaller) {
  uintptr_t ra = CallerOfReturnAddress();
  SymbolInfo info;
  ASSERT_TRUE(SymbolizeInProcess(ra, true, &info));
  EXPECT_THAT(info.name, HasSubstr("CallerOfReturnAddress"));
  EXPECT_GT(info.function_offset, 0u);
}

TEST(InProcessSymbolizerTest, ReturnAddressAtFunctionEndUsesAddressMinusOne) {
  // A return address equal to the next function's first byte (a noreturn call as the last
  // instruction) must still name the calling function.
  const auto next = reinterpret_cast<uintptr_t>(&HiddenStaticFunction);
  SymbolInfo as_pc, as_return;
  ASSERT_TRUE(SymbolizeInProcess(next, false, &as_pc));
  EXPECT_THAT(as_pc.name, HasSubstr("HiddenStaticFunction"));
  // next - 1 is the previous function's last byte or alignment padding (then unknown).
  if (SymbolizeInProcess(next, true, &as_return)) {
    EXPECT_THAT(as_return.name, ::testing::Not(HasSubstr("HiddenStaticFunction")));
  }
}

TEST(InProcessSymbolizerTest, LibcExportsAndDlopenedLibrary) {
  SymbolInfo info;
  ASSERT_TRUE(SymbolizeInProcess(reinterpret_cast<uintptr_t>(&::dlopen), false, &info));
  EXPECT_THAT(info.name, HasSubstr("dlopen"));

  void* handle = dlopen(SYMBOLS_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* entry = dlsym(handle, "symbols_test_plugin_entry");
  ASSERT_TRUE(SymbolizeInProcess(reinterpret_cast<uintptr_t>(entry) + 1, false, &info));
  EXPECT_EQ(info.name, "symbols_test_plugin_entry");
  EXPECT_EQ(info.function_offset, 1u);
  dlclose(handle);
}

// Out of address space while a module's table is read: the lookup fails,
// the process lives on, and the same module is named once memory is back (a table that could
// not be loaded is not remembered as "no names", and no once-flag is left stuck half-way).
// In a forked child, bounded by a deadline.
TEST(InProcessSymbolizerTest, OutOfMemoryWhileLoadingIsRetriedLater) {
#if defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
  GTEST_SKIP()
      << "the sanitizer's allocator aborts when a mapping fails (tests/sanitizer_allocator.h)";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A large library nothing here has named yet: its table needs megabytes.
    void* handle = dlopen("libLLVM-14.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) _exit(10);
    const auto entry = reinterpret_cast<uintptr_t>(dlsym(handle, "LLVMContextCreate"));
    // This thread has looked something up before (as the agent's watchdog has when memory runs
    // out): Abseil sets up its per-thread state on a first lock, and aborts when it cannot.
    SymbolInfo info;
    if (!SymbolizeInProcess(reinterpret_cast<uintptr_t>(&::dlopen), false, &info)) _exit(16);
    rlimit saved;
    if (getrlimit(RLIMIT_AS, &saved) != 0) _exit(11);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    if (pages == 0 || setrlimit(RLIMIT_AS, &low) != 0) _exit(12);
    const bool named_without_memory = SymbolizeInProcess(entry, false, &info);
    if (setrlimit(RLIMIT_AS, &saved) != 0) _exit(13);
    if (!SymbolizeInProcess(entry, false, &info) || info.name != "LLVMContextCreate") {
      _exit(named_without_memory ? 14 : 15);
    }
    _exit(named_without_memory ? 1 : 0);  // 1: the limit did not bite (not what this tests)
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t r = 0;
  while ((r = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the child blocked (a lookup spins on a load that threw)";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 10) GTEST_SKIP() << "no libLLVM-14.so.1 (llvm-14-dev)";
  EXPECT_NE(WEXITSTATUS(status), 15) << "the module stayed unnamed once memory was back";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(InProcessSymbolizerTest, AllocationFreeLookupWithASnapshot) {
  auto map = ModuleMap::Snapshot();  // a private snapshot, freed at the end of the test
  WarmUpInProcessSymbolizer(*map);
  SymbolView view;
  const auto addr = reinterpret_cast<uintptr_t>(&Box<int>::Twice) + 2;
  ASSERT_TRUE(LookupInProcess(*map, addr, false, false, &view));
  EXPECT_THAT(view.mangled, HasSubstr("3BoxIiE5Twice"));
  EXPECT_TRUE(view.demangled.empty());
  EXPECT_EQ(view.function_offset, 2u);
  EXPECT_EQ(view.module_offset, addr - view.module->load_bias);
  ASSERT_TRUE(LookupInProcess(*map, addr, false, true, &view));
  EXPECT_EQ(view.demangled, "hangwatch::symbols::(anonymous namespace)::Box<int>::Twice(int)");
  map.reset();
  // A new snapshot (possibly at the same addresses) still finds the right table.
  auto again = ModuleMap::Snapshot();
  ASSERT_TRUE(LookupInProcess(*again, addr, false, true, &view));
  EXPECT_EQ(view.demangled, "hangwatch::symbols::(anonymous namespace)::Box<int>::Twice(int)");
}

TEST(InProcessSymbolizerTest, UnknownAddresses) {
  SymbolInfo info;
  int local = 0;
  EXPECT_FALSE(SymbolizeInProcess(reinterpret_cast<uintptr_t>(&local), false, &info));
  EXPECT_FALSE(SymbolizeInProcess(0, true, &info));
  EXPECT_FALSE(SymbolizeInProcess(1, false, nullptr));
}

// Files built by the test: a shared library with .symtab, stripped to .dynsym, and stripped
// with MiniDebugInfo added the way Fedora does it.
class ElfSymbolTableFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::WriteFile(dir_.Join("lib.cc"), R"(
      namespace { __attribute__((noinline)) int Local(int x) { return x * 5; } }
      __attribute__((noinline)) static int StaticOne(int x) { return Local(x) + 1; }
      namespace ns { __attribute__((noinline)) int Exported(int x) { return StaticOne(x) + 2; } }
      extern "C" int c_export(int x) { return ns::Exported(x); }
    )");
    lib_ = dir_.Join("lib.so");
    auto r =
        RunCommand("g++ -O2 -g -fPIC -shared -o " + lib_ + " " + dir_.Join("lib.cc"), "", true);
    ASSERT_EQ(r.status, 0) << r.out;
  }
  TempDir dir_;
  std::string lib_;
};

std::string NameAt(const ElfSymbolTable& t, const std::string& nm_line_name,
                   const std::string& lib) {
  auto r = RunCommand("nm -C '" + lib + "' | grep -F '" + nm_line_name + "' | head -1");
  if (r.out.empty()) return "<no nm line>";
  const ElfSymbolTable::Symbol* s = t.Find(std::stoull(r.out, nullptr, 16));
  return s == nullptr ? "<none>" : std::string(t.DemangledName(*s));
}

TEST_F(ElfSymbolTableFilesTest, SymtabHasStaticFunctions) {
  auto t = ElfSymbolTable::Load(lib_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE((*t)->sources() & ElfSymbolTable::kSymtab);
  EXPECT_EQ(NameAt(**t, "StaticOne", lib_), "StaticOne(int)");
  EXPECT_EQ(NameAt(**t, "Local", lib_), "(anonymous namespace)::Local(int)");
  EXPECT_EQ(NameAt(**t, "ns::Exported", lib_), "ns::Exported(int)");
}

TEST_F(ElfSymbolTableFilesTest, DynsymOnlyAfterStrip) {
  const std::string full = dir_.Join("full.so");
  ASSERT_EQ(RunCommand("cp " + lib_ + " " + full + " && strip --strip-all " + lib_).status, 0);
  auto t = ElfSymbolTable::Load(lib_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->sources(), ElfSymbolTable::kDynsym);
  EXPECT_EQ(NameAt(**t, "ns::Exported", full), "ns::Exported(int)");
  EXPECT_EQ(NameAt(**t, "c_export", full), "c_export");
  // A static function is not in .dynsym: its address falls to no symbol or the neighbour,
  // never to its own name.
  EXPECT_NE(NameAt(**t, "StaticOne", full), "StaticOne(int)");
}

TEST_F(ElfSymbolTableFilesTest, MiniDebugInfoRestoresStaticFunctions) {
  // Fedora's recipe: keep the function symbols that .dynsym lacks in a symbol-only ELF,
  // xz it, and add it as .gnu_debugdata to the stripped file.
  const std::string full = dir_.Join("full.so");
  const std::string d = dir_.path();
  std::string script =
      "set -e; cd " + d +
      "; cp lib.so full.so;"
      "nm -D full.so --format=posix --defined-only | awk '{print $1}' | sort > dynsyms;"
      "nm full.so --format=posix --defined-only | awk '$2==\"T\"||$2==\"t\" {print $1}' | sort "
      "> funcsyms;"
      "comm -13 dynsyms funcsyms > keep;"
      "objcopy --only-keep-debug full.so debug;"
      "objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep "
      "debug mini;"
      "xz -f mini;"
      "strip --strip-all lib.so;"
      "objcopy --add-section .gnu_debugdata=mini.xz lib.so";
  auto r = RunCommand(script, "", true);
  ASSERT_EQ(r.status, 0) << r.out;
  auto t = ElfSymbolTable::Load(lib_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->sources(), ElfSymbolTable::kDynsym | ElfSymbolTable::kMiniDebugInfo);
  EXPECT_EQ(NameAt(**t, "StaticOne", full), "StaticOne(int)");
  EXPECT_EQ(NameAt(**t, "ns::Exported", full), "ns::Exported(int)");
}

TEST_F(ElfSymbolTableFilesTest, CorruptMiniDebugInfoFallsBackToDynsym) {
  auto r = RunCommand("cd " + dir_.path() +
                          " && head -c 300 /dev/urandom > junk && strip --strip-all lib.so && "
                          "objcopy --add-section .gnu_debugdata=junk lib.so",
                      "", true);
  ASSERT_EQ(r.status, 0) << r.out;
  auto t = ElfSymbolTable::Load(lib_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->sources(), ElfSymbolTable::kDynsym);
}

TEST_F(ElfSymbolTableFilesTest, BadFilesAreErrorsNotCrashes) {
  EXPECT_FALSE(ElfSymbolTable::Load(dir_.Join("missing")).ok());
  symtest::WriteFile(dir_.Join("text"), "hello, not an ELF file\n");
  EXPECT_FALSE(ElfSymbolTable::Load(dir_.Join("text")).ok());
  symtest::WriteFile(dir_.Join("empty"), "");
  EXPECT_FALSE(ElfSymbolTable::Load(dir_.Join("empty")).ok());
  // Truncated at several points: an error or a smaller table, never a crash.
  std::string bytes = symtest::ReadFile(lib_);
  for (size_t cut : {size_t{16}, size_t{64}, size_t{1000}, bytes.size() / 2, bytes.size() - 1}) {
    symtest::WriteFile(dir_.Join("cut"), bytes.substr(0, cut));
    auto t = ElfSymbolTable::Load(dir_.Join("cut"));
    if (t.ok()) {
      EXPECT_LE((*t)->size(), 64u);
    }
  }
}

}  // namespace
}  // namespace hangwatch::symbols
