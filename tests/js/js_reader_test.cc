// js/: V8's postmortem metadata, strings and functions of a real node child (/usr/bin/node),
// read out of process (process_vm_readv), as the agent reads its own process. The child runs
// with --allow-natives-syntax only so that %DebugPrint tells the test where its objects are
// (the reader itself needs no flag).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "js/function_resolver.h"
#include "js/heap_reader.h"
#include "js/memory_reader.h"
#include "js/v8_metadata.h"
#include "symbols/process_modules.h"
#include "tests/tools/cli_util.h"

namespace hangwatch::js {
namespace {

using ::hangwatch::testing::TempDir;

constexpr char kNode[] = "/usr/bin/node";

constexpr char kScript[] =
    "function crunch(n) {\n"
    "  return n + 1;\n"
    "}\n"
    "const obj = {};\n"
    "obj.handler = function () { return 2; };\n"
    "function \xe5\x87\xbd\xe6\x95\xb0() { return 3; }\n"  // a name of two-byte characters
    "crunch(1); obj.handler(); \xe5\x87\xbd\xe6\x95\xb0();\n"
    "const cons = 'first part of it '.repeat(3) + String(process.pid) + ' second part';\n"
    "%DebugPrint(crunch); %DebugPrint(obj.handler); %DebugPrint(\xe5\x87\xbd\xe6\x95\xb0);\n"
    "%DebugPrint(cons);\n"
    "process.stdout.write('ready\\n');\n"
    "setInterval(() => {}, 1000);\n";

// A node child stopped at nothing: it idles in its loop once it printed "ready".
class NodeChild {
 public:
  explicit NodeChild(const std::string& script) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(kNode, kNode, "--allow-natives-syntax", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    char buffer[4096];
    ssize_t n = 0;
    // Until "ready" (or the child's end: EOF), bounded by the child itself.
    while (output_.find("ready\n") == std::string::npos &&
           (n = read(fds[0], buffer, sizeof(buffer))) > 0) {
      output_.append(buffer, static_cast<size_t>(n));
    }
    close(fds[0]);
  }
  ~NodeChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  std::string output_;
};

class JsReader : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << kNode << " is not installed";
    script_ = dir_ / "objects.js";
    std::ofstream(script_) << kScript;
    child_ = std::make_unique<NodeChild>(script_);
    ASSERT_NE(child_->output().find("ready"), std::string::npos) << child_->output();
    reader_ = std::make_unique<ProcessMemoryReader>(child_->pid());
    auto modules = symbols::ReadProcessModules(child_->pid());
    ASSERT_TRUE(modules.ok()) << modules.status();
    modules_ = *modules;
    auto metadata = LoadV8Metadata(modules_, *reader_);
    ASSERT_TRUE(metadata.ok()) << metadata.status();
    metadata_ = *metadata;
    // The SharedFunctionInfos %DebugPrint named, by name.
    const std::regex sfi(" - shared_info: (0x[0-9a-f]+) <SharedFunctionInfo ([^>]*)>");
    for (std::sregex_iterator it(child_->output().begin(), child_->output().end(), sfi), end;
         it != end; ++it) {
      sfis_[(*it)[2]] = std::stoull((*it)[1], nullptr, 16);
    }
    const std::regex string(R"(DebugPrint: (0x[0-9a-f]+): \[String\])");
    std::smatch m;
    if (std::regex_search(child_->output(), m, string)) cons_ = std::stoull(m[1], nullptr, 16);
  }

  TempDir dir_;
  std::string script_;
  std::unique_ptr<NodeChild> child_;
  std::unique_ptr<ProcessMemoryReader> reader_;
  symbols::ProcessModules modules_;
  V8Metadata metadata_;
  std::map<std::string, uint64_t> sfis_;
  uint64_t cons_ = 0;
};

TEST_F(JsReader, TheMetadataComesFromTheNodeExecutable) {
  EXPECT_EQ(metadata_.module_path, kNode);
  EXPECT_EQ(metadata_.tagged_size, 8);
  EXPECT_EQ(metadata_.smi_shift, 32);  // x86_64 without pointer compression
  EXPECT_TRUE(metadata_.IsHeapObject(metadata_.heap_object_tag));
  EXPECT_LT(metadata_.fp_function, 0);  // below the saved frame pointer
  EXPECT_NE(metadata_.type_js_function, metadata_.type_shared_function_info);
  // NodeSource's node keeps its static symbols: the builtins' range is known.
  EXPECT_LT(metadata_.builtins_lo, metadata_.builtins_hi);
  // ... inside the executable's own text (a copy mapped elsewhere is outside it).
  EXPECT_LT(metadata_.text_lo, metadata_.text_hi);
  EXPECT_GE(metadata_.builtins_lo, metadata_.text_lo);
  EXPECT_LE(metadata_.builtins_hi, metadata_.text_hi);
}

TEST_F(JsReader, FunctionsAreNamedWithTheirScriptAndFirstLine) {
  ASSERT_EQ(sfis_.size(), 3u) << child_->output();
  const HeapReader heap(metadata_, *reader_);
  const FunctionResolver resolver(heap);
  FunctionInfo info;
  ASSERT_TRUE(resolver.Resolve(sfis_.at("crunch"), &info));
  EXPECT_EQ(info.name, "crunch");
  EXPECT_EQ(info.script, script_);
  EXPECT_EQ(info.line, 1);
  // An anonymous function: the name V8 inferred.
  ASSERT_TRUE(resolver.Resolve(sfis_.at("obj.handler"), &info));
  EXPECT_EQ(info.name, "obj.handler");
  EXPECT_EQ(info.line, 5);
  // Two-byte characters, as UTF-8.
  ASSERT_TRUE(resolver.Resolve(sfis_.at("\xe5\x87\xbd\xe6\x95\xb0"), &info));
  EXPECT_EQ(info.name, "\xe5\x87\xbd\xe6\x95\xb0");
  EXPECT_EQ(info.line, 6);
}

TEST_F(JsReader, ObjectsOfAnotherTypeAreNoFunction) {
  const HeapReader heap(metadata_, *reader_);
  const FunctionResolver resolver(heap);
  FunctionInfo info;
  ASSERT_NE(cons_, 0u);
  EXPECT_FALSE(resolver.Resolve(cons_, &info));                   // a string
  EXPECT_FALSE(resolver.Resolve(sfis_.at("crunch") + 8, &info));  // inside an object
  EXPECT_FALSE(resolver.Resolve(0x10, &info));                    // unmapped
  EXPECT_FALSE(resolver.Resolve(0x1000, &info));                  // a Smi
}

TEST_F(JsReader, ConsStringsReadWholeAndCut) {
  const HeapReader heap(metadata_, *reader_);
  std::string s;
  ASSERT_TRUE(heap.ReadString(cons_, 1000, &s));
  EXPECT_EQ(s, "first part of it first part of it first part of it " +
                   std::to_string(child_->pid()) + " second part");
  ASSERT_TRUE(heap.ReadString(cons_, 20, &s));
  EXPECT_EQ(s, "first part of it fir");
  int line = 0;
  EXPECT_TRUE(heap.LineOfPosition(cons_, 10, &line));
  EXPECT_EQ(line, 1);
}

// A reader that fails every read: the metadata cannot be read, and says which constant.
class FailingReader final : public MemoryReader {
 public:
  bool Read(uint64_t, void*, size_t) const override { return false; }
};

TEST_F(JsReader, UnreadableMetadataNamesTheConstant) {
  const FailingReader failing;
  auto metadata = LoadV8Metadata(modules_, failing);
  ASSERT_FALSE(metadata.ok());
  EXPECT_NE(metadata.status().message().find("v8dbg_"), std::string::npos) << metadata.status();
  EXPECT_NE(metadata.status().message().find("cannot be read"), std::string::npos);
}

TEST(JsReaderWithoutNode, AProcessWithoutV8HasNoMetadata) {
  auto modules = symbols::ReadProcessModules(getpid());
  ASSERT_TRUE(modules.ok());
  const SelfMemoryReader self;
  auto metadata = LoadV8Metadata(*modules, self);
  ASSERT_FALSE(metadata.ok());
  EXPECT_TRUE(absl::IsNotFound(metadata.status())) << metadata.status();
}

}  // namespace
}  // namespace hangwatch::js
