// IseqResolver: what an instruction sequence names (its location's label: "crunch",
// "block in handle", "<main>"; its path; its first line) and the line of a pc in it (its
// line table, line_table.h), read through a MemoryReader and cached per iseq address.
//
// Not for the capture path: it allocates (the cache, the strings). An iseq is checked to be
// one (imemo_iseq) before anything of it is read; its strings must be String objects (or, for
// the path, an Array whose first element is one), read up to a bound; else it resolves to
// nothing.
#ifndef HANGWATCH_RUBY_ISEQ_RESOLVER_H_
#define HANGWATCH_RUBY_ISEQ_RESOLVER_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "python/memory_reader.h"
#include "ruby/ruby_layout.h"

namespace hangwatch::ruby {

struct IseqInfo {
  std::string label;  // location.label
  std::string path;   // location.pathobj (its path, not its realpath)
  int first_line = 0;
  uint64_t encoded = 0;  // iseq_encoded: the first instruction
  uint32_t size = 0;     // iseq_size, in VALUEs
  uint64_t entries = 0;  // insns_info.body
  uint32_t entry_count = 0;
  uint64_t positions = 0;  // insns_info.positions (0 in release builds)
  uint64_t succ_table = 0;
  // The VM's own placeholder at the bottom of the main thread's stack (Init_VM's "<main>" of
  // type TOP, which never runs): no frame of the program, left out of every stack.
  bool vm_placeholder = false;
};

struct IseqLine {
  int line = 0;
  bool is_definition = false;  // the iseq's first line: the pc's own could not be told
};

// Reads a String object as bytes, at most `max_bytes` (longer ones are cut). False when
// `value` is no readable String.
bool ReadRString(const python::MemoryReader& memory, const RubyLayout& layout, uint64_t value,
                 size_t max_bytes, std::string* out);

class IseqResolver {
 public:
  static constexpr size_t kMaxLabel = 256;
  static constexpr size_t kMaxPath = 1024;

  // `memory` and `layout` must outlive the resolver.
  IseqResolver(const python::MemoryReader& memory, const RubyLayout& layout)
      : memory_(memory), layout_(layout) {}

  // The iseq at `iseq`, read once; nullptr when it is not a readable instruction sequence.
  // The pointer stays valid for the resolver's life.
  const IseqInfo* Iseq(uint64_t iseq);

  // The instruction `pc` is at, in VALUEs from the first (the instruction before the one pc
  // points to, as Ruby's own backtraces count it); -1 when pc is not inside the iseq.
  static int64_t Position(const IseqInfo& info, uint64_t pc);

  // The line of instruction `pos` of `info`; its first line, marked so, when the table cannot
  // be read or pos is -1.
  IseqLine Line(const IseqInfo& info, int64_t pos) const;

 private:
  bool ReadIseq(uint64_t iseq, IseqInfo* info) const;

  const python::MemoryReader& memory_;
  const RubyLayout& layout_;
  struct Entry {
    bool ok = false;
    IseqInfo info;
  };
  std::unordered_map<uint64_t, Entry> cache_;
};

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_ISEQ_RESOLVER_H_
