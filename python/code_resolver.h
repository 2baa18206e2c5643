// CodeResolver: what a code object names (co_qualname, or co_name before 3.11; co_filename)
// and the line of an instruction in it (co_linetable, line_table.h), read through a
// MemoryReader and cached per code object address.
//
// Not for the capture path: it allocates (the cache). A code object is checked to be one (its
// type is PyCode_Type) before anything of it is read; its strings must be compact unicode
// objects and its line table a bytes object of bounded size, else it resolves to nothing.
#ifndef HANGWATCH_PYTHON_CODE_RESOLVER_H_
#define HANGWATCH_PYTHON_CODE_RESOLVER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "python/interpreter_locator.h"
#include "python/line_table.h"
#include "python/memory_reader.h"
#include "python/python_layout.h"

namespace hangwatch::python {

struct CodeInfo {
  std::string name;  // co_qualname (3.11+) or co_name; UTF-8
  std::string file;  // co_filename
  int first_line = 0;
  std::vector<uint8_t> line_table;
};

class CodeResolver {
 public:
  // `memory` and `layout` must outlive the resolver.
  CodeResolver(const MemoryReader& memory, const PythonLayout& layout,
               const InterpreterAddresses& addresses);

  // The code object at `code`, read once; nullptr when it is not a readable code object.
  // The pointer stays valid for the resolver's life.
  const CodeInfo* Code(uint64_t code);

  // The line of instruction `instr` (code units; -1: not started) of `info`; -1 when unknown.
  int Line(const CodeInfo& info, int64_t instr) const;

  // Reads a str object as UTF-8 (compact ASCII, Latin-1, UCS-2 or UCS-4), at most `max_chars`.
  bool ReadString(uint64_t addr, size_t max_chars, std::string* out) const;

 private:
  bool ReadCode(uint64_t code, CodeInfo* info) const;

  const MemoryReader& memory_;
  const PythonLayout& layout_;
  InterpreterAddresses addresses_;
  // Node-based: CodeInfo pointers handed out stay valid. nullopt-like: a failed code is kept
  // as an entry with `ok` false so that it is not read again.
  struct Entry {
    bool ok = false;
    CodeInfo info;
  };
  std::unordered_map<uint64_t, Entry> cache_;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_CODE_RESOLVER_H_
