// symbols/index/symbol_index: the inflated twin of a compressed cached index
// (`BUILDID.hwsym.flat`), which a warm `hangwatch snapshot` maps instead of inflating chunks. The
// twin must give the very answers of the compressed index, be written on the first open, be served
// on later ones, and be ignored (and rewritten) when it is stale or not a twin of that index.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "symbols/elf_file.h"
#include "symbols/index/symbol_index.h"
#include "symbols/offline_symbolizer.h"

namespace hangwatch::symbols {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Every frame of every answer, as text.
std::string Answers(const SymbolIndex& index, uint64_t lo, uint64_t hi) {
  std::string out;
  SymbolizedAddress a;
  for (uint64_t addr = lo; addr < hi; ++addr) {
    index.Lookup(addr, &a);
    AppendLlvmStyle(a, &out);
  }
  return out;
}

class IndexTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hangwatch_twin_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    OfflineSymbolizerOptions options;
    options.cache_dir = dir_;
    OfflineSymbolizer symbolizer(options);
    // The test target: built with -g, so the index has DWARF (and compressed byte sections).
    absl::StatusOr<std::string> path = symbolizer.IndexBinary(SNAPSHOT_TARGET);
    ASSERT_TRUE(path.ok()) << path.status();
    path_ = *path;
    twin_ = path_ + ".flat";
    // Every address of the target's .text (wherever the build put it).
    auto elf = ElfFile::Open(SNAPSHOT_TARGET);
    ASSERT_TRUE(elf.ok()) << elf.status();
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn((*elf)->elf(), scn)) != nullptr;) {
      GElf_Shdr shdr;
      size_t strndx = 0;
      if (gelf_getshdr(scn, &shdr) == nullptr || elf_getshdrstrndx((*elf)->elf(), &strndx) != 0) {
        continue;
      }
      const char* name = elf_strptr((*elf)->elf(), strndx, shdr.sh_name);
      if (name != nullptr && std::string(name) == ".text") {
        lo_ = shdr.sh_addr;
        hi_ = shdr.sh_addr + shdr.sh_size;
      }
    }
    ASSERT_LT(lo_, hi_) << "no .text in " << SNAPSHOT_TARGET;
    auto reference = SymbolIndex::FromBytes(ReadFile(path_));
    ASSERT_TRUE(reference.ok()) << reference.status();
    expected_ = Answers(**reference, lo_, hi_);
    ASSERT_NE(expected_.find("Recurse"), std::string::npos);  // real names, not only "??"
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  uint64_t lo_ = 0;  // the target's .text
  uint64_t hi_ = 0;
  std::string dir_;
  std::string path_;
  std::string twin_;
  std::string expected_;
};

TEST_F(IndexTwinTest, FirstOpenWritesTheTwinLaterOpensServeItWithTheSameAnswers) {
  ASSERT_EQ(FileSize(twin_), -1);
  {
    auto first = SymbolIndex::Open(path_);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ((*first)->size_bytes(), static_cast<size_t>(FileSize(path_)));  // the original
    EXPECT_EQ(Answers(**first, lo_, hi_), expected_);
  }
  ASSERT_GT(FileSize(twin_), 0) << "no twin written";
  auto second = SymbolIndex::Open(path_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->size_bytes(), static_cast<size_t>(FileSize(twin_)));  // the twin
  EXPECT_EQ(Answers(**second, lo_, hi_), expected_);
  // No temporary files left behind: the index and its twin only.
  std::string listing;
  FILE* ls = popen(("ls " + dir_).c_str(), "r");
  ASSERT_NE(ls, nullptr);
  for (int c; (c = std::fgetc(ls)) != EOF;) listing.push_back(static_cast<char>(c));
  pclose(ls);
  const std::string name = path_.substr(path_.rfind('/') + 1);
  EXPECT_EQ(listing, name + "\n" + name + ".flat\n");
}

TEST_F(IndexTwinTest, TwinOlderThanTheIndexIsNotServedAndIsRewritten) {
  { ASSERT_TRUE(SymbolIndex::Open(path_).ok()); }
  ASSERT_GT(FileSize(twin_), 0);
  // The index rebuilt after the twin was written: make the twin a minute older.
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  timespec times[2] = {st.st_atim, st.st_mtim};
  times[0].tv_sec -= 60;
  times[1].tv_sec -= 60;
  ASSERT_EQ(utimensat(AT_FDCWD, twin_.c_str(), times, 0), 0);
  auto stale = SymbolIndex::Open(path_);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ((*stale)->size_bytes(), static_cast<size_t>(FileSize(path_)));
  EXPECT_EQ(Answers(**stale, lo_, hi_), expected_);
  struct stat twin;
  ASSERT_EQ(stat(twin_.c_str(), &twin), 0);
  EXPECT_GE(twin.st_mtim.tv_sec, st.st_mtim.tv_sec) << "stale twin not rewritten";
}

TEST_F(IndexTwinTest, TwinThatIsNotThisIndexIsIgnoredAndReplaced) {
  // A valid, newer file that is not this index's twin: the compressed index itself (it has
  // chunks), then garbage.
  for (const std::string& impostor : {ReadFile(path_), std::string(5000, 'x')}) {
    {
      std::ofstream out(twin_, std::ios::binary | std::ios::trunc);
      out << impostor;
    }
    auto index = SymbolIndex::Open(path_);
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_EQ((*index)->size_bytes(), static_cast<size_t>(FileSize(path_)));
    EXPECT_EQ(Answers(**index, lo_, hi_), expected_);
    EXPECT_NE(ReadFile(twin_), impostor) << "the impostor was kept";
    auto served = SymbolIndex::Open(path_);
    ASSERT_TRUE(served.ok());
    EXPECT_EQ((*served)->size_bytes(), static_cast<size_t>(FileSize(twin_)));
    EXPECT_EQ(Answers(**served, lo_, hi_), expected_);
  }
}

}  // namespace
}  // namespace hangwatch::symbols
