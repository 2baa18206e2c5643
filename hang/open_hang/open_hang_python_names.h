// The open-hang file's names region (open_hang_file.h, format 6; called the Python names since
// Python was the first runtime): the function, file and line of each interpreter frame word
// (runtime_frame_word.h: Python, JavaScript, Ruby) its samples hold, as the watchdog had
// resolved them (agent/samplers/python_stacks.h and the other runtimes'), so that a fatal hang
// read back names its interpreter frames as the live hang did and keeps its culprit, signature
// and fingerprint.
//
// A fixed region of kOpenHangPythonNamesBytes, filled from its start by entries appended on the
// watchdog thread (never in a signal handler), each whole in itself:
//   u64 word | i32 line | u16 symbol bytes | u16 file bytes | u64 checksum | symbol | file |
//   zero padding to 8 bytes
// where the symbol bytes' top four bits are flags: bits 12-13 the language (0 Python, which
// every entry written before the other runtimes has; 1 JavaScript; 2 Ruby), bit 14 the line
// is the function's first line (RuntimeFrameName::line_is_definition).
// The checksum covers the entry's other bytes. Entries are only appended while a hang is open,
// beyond the bytes the newest live header counts (LiveHeader::python_names_bytes): a write torn
// by the process dying is past what any valid header counts. A word named again (its code
// object's address reused) gets a new entry; the last one counts, as the live cache's does.
// When the region is full, the words not yet named stay unnamed in the file.
#ifndef HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_PYTHON_NAMES_H_
#define HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_PYTHON_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "hang/model/runtime_names.h"

namespace hangwatch::agent {

inline constexpr size_t kOpenHangPythonNamesBytes = 256 * 1024;
// Longest symbol and file kept (agent/samplers/python_stacks.h cuts them at 256 and 512 already).
inline constexpr size_t kOpenHangPythonSymbolBytes = 1024;
inline constexpr size_t kOpenHangPythonFileBytes = 1024;

// Appends names to the region of a mapped file. Its memory is allocated once (at construction):
// a set of the words written, so that each is written once per name.
class OpenHangPythonNamesWriter {
 public:
  // Words remembered at most: beyond them, new words stay unnamed in the file.
  static constexpr size_t kMaxWords = 6144;

  OpenHangPythonNamesWriter();
  // A new hang: the region (zeroed by the caller) is empty.
  void Reset();
  // Appends the entry of `word` named `name` at the end of `region` unless the same name was
  // written for it already; nothing when the region or the set is full.
  void Note(uintptr_t word, const RuntimeFrameName& name, unsigned char* region);
  // Bytes of the region filled with whole entries.
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kSlots = 8192;  // a power of two, above kMaxWords
  struct Slot {
    uint64_t word = 0;  // 0: empty (a Python word always has bit 63 set)
    uint64_t name_hash = 0;
  };
  std::unique_ptr<Slot[]> slots_;
  size_t words_ = 0;
  uint64_t bytes_ = 0;
};

// The names read back from a file's region: what Materialize asks for a fatal hang.
class OpenHangPythonNamesTable final : public RuntimeNames {
 public:
  bool Find(uintptr_t word, RuntimeFrameName* out) const override;
  size_t size() const { return names_.size(); }

  // Reads the entries of `region[0, bytes)` (bytes clamped to the region's size), stopping at
  // the first that is not whole (checksum, lengths, a word that is not a Python word): the
  // frames it and later entries name stay unnamed, never named wrongly.
  void Parse(const unsigned char* region, uint64_t bytes);

 private:
  std::unordered_map<uintptr_t, RuntimeFrameName> names_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_OPEN_HANG_OPEN_HANG_PYTHON_NAMES_H_
