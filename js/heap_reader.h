// HeapReader: V8 heap objects read through a MemoryReader with the layout of V8Metadata: an
// object's instance type (through its map), a tagged field, and strings (sequential one- and
// two-byte, cons, sliced and thin; external strings are not read) as UTF-8, or scanned for the
// line a character position is on.
//
// Every object is taken for what its map says, never for what the caller expected: a pointer
// that no longer holds an object of that type (moved by the GC, or garbage) fails the read.
// Bounded: strings cut at the caller's length, cons trees followed to a fixed depth, a line
// scan stops after kMaxLineScan characters.
#ifndef HANGWATCH_JS_HEAP_READER_H_
#define HANGWATCH_JS_HEAP_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "js/memory_reader.h"
#include "js/v8_metadata.h"

namespace hangwatch::js {

class HeapReader {
 public:
  // Characters a line scan reads at most (a bundled script's function near its end: 16 MiB).
  static constexpr int64_t kMaxLineScan = int64_t{16} << 20;

  HeapReader(const V8Metadata& metadata, const MemoryReader& memory)
      : m_(metadata), memory_(memory) {}

  const V8Metadata& metadata() const { return m_; }
  const MemoryReader& memory() const { return memory_; }

  // The instance type of the heap object `object` (a tagged pointer).
  bool InstanceType(uint64_t object, uint16_t* type) const;
  // The tagged word at `offset` in `object`.
  bool Field(uint64_t object, int32_t offset, uint64_t* out) const;
  bool IsString(uint16_t type) const { return type < m_.first_nonstring_type; }

  // The string `object` as UTF-8, its first `max_chars` characters at most. False when it is no
  // string or cannot be read (an external string, a cons tree too deep).
  bool ReadString(uint64_t object, size_t max_chars, std::string* out) const;
  // The 1-based line of character `position` of string `object` (the newlines before it
  // counted); false beyond kMaxLineScan, or as ReadString.
  bool LineOfPosition(uint64_t object, int64_t position, int* line) const;

 private:
  // Calls `chunk` on characters [from, from + count) of string `object`, in order, as spans of
  // one-byte or two-byte characters; false when a part cannot be read.
  using ChunkFn = std::function<bool(const void* chars, size_t n, bool two_byte)>;
  bool Visit(uint64_t object, int64_t from, int64_t count, int depth, const ChunkFn& chunk) const;
  bool Length(uint64_t object, int64_t* length) const;

  const V8Metadata& m_;
  const MemoryReader& memory_;
};

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_HEAP_READER_H_
