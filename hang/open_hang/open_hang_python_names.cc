#include "hang/open_hang/open_hang_python_names.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "hang/model/runtime_frame_word.h"
#include "hang/open_hang/open_hang_layout.h"

namespace hangwatch::agent {
namespace {

using open_hang_layout::Checksum;

struct EntryHead {
  uint64_t word;
  int32_t line;
  uint16_t symbol_bytes;  // the length in its low 12 bits; its top 4 are kLanguage / kDefinition
  uint16_t file_bytes;
  uint64_t checksum;  // of the head's bytes before it, then the strings
};
static_assert(sizeof(EntryHead) == 24 && offsetof(EntryHead, checksum) == 16,
              "no padding: the checksum covers every byte before it");

// The top bits of symbol_bytes: the frame's language (0 Python, as every entry before the other
// runtimes had; 1 JavaScript, 2 Ruby) and line_is_definition.
constexpr uint16_t kLengthMask = 0x0fff;
constexpr unsigned kLanguageShift = 12;
constexpr uint16_t kLanguageMask = 0x3000;
constexpr uint16_t kDefinition = 0x4000;
static_assert(kOpenHangPythonSymbolBytes <= kLengthMask, "a symbol's length fits its bits");

uint16_t LanguageBits(FrameLanguage l) {
  const unsigned index = l == FrameLanguage::kJs ? 1 : l == FrameLanguage::kRuby ? 2 : 0;
  return static_cast<uint16_t>(index << kLanguageShift);
}

size_t Padded(size_t n) { return (n + 7) & ~size_t{7}; }

// FNV-1a continued over `n` more bytes from `h`.
uint64_t ChecksumMore(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t EntryChecksum(const EntryHead& head, const char* symbol, const char* file) {
  uint64_t h = Checksum(&head, offsetof(EntryHead, checksum));
  h = ChecksumMore(h, symbol, head.symbol_bytes & kLengthMask);
  return ChecksumMore(h, file, head.file_bytes);
}

uint64_t NameHash(const RuntimeFrameName& name) {
  uint64_t h = Checksum(name.symbol.data(), name.symbol.size());
  h = ChecksumMore(h, "\0", 1);
  h = ChecksumMore(h, name.file.data(), name.file.size());
  const uint16_t flags = static_cast<uint16_t>(LanguageBits(name.language) |
                                               (name.line_is_definition ? kDefinition : 0));
  h = ChecksumMore(h, &flags, sizeof(flags));
  return ChecksumMore(h, &name.line, sizeof(name.line));
}

}  // namespace

OpenHangPythonNamesWriter::OpenHangPythonNamesWriter() : slots_(new Slot[kSlots]) {}

void OpenHangPythonNamesWriter::Reset() {
  std::fill(slots_.get(), slots_.get() + kSlots, Slot{});
  words_ = 0;
  bytes_ = 0;
}

void OpenHangPythonNamesWriter::Note(uintptr_t word, const RuntimeFrameName& name,
                                     unsigned char* region) {
  if (!IsRuntimeWord(word)) return;
  const uint64_t hash = NameHash(name);
  // Open addressing, linear probing: the set never holds more than kMaxWords of kSlots.
  size_t i = static_cast<size_t>((word * 0x9e3779b97f4a7c15ull) >> 51) & (kSlots - 1);
  while (slots_[i].word != 0 && slots_[i].word != word) i = (i + 1) & (kSlots - 1);
  Slot& slot = slots_[i];
  if (slot.word == word && slot.name_hash == hash) return;  // written, with this name
  if (slot.word == 0 && words_ >= kMaxWords) return;        // the set is full: stays unnamed
  EntryHead head{};
  head.word = word;
  head.line = name.line;
  const size_t symbol_bytes = std::min(name.symbol.size(), kOpenHangPythonSymbolBytes);
  head.symbol_bytes = static_cast<uint16_t>(symbol_bytes | LanguageBits(name.language) |
                                            (name.line_is_definition ? kDefinition : 0));
  head.file_bytes = static_cast<uint16_t>(std::min(name.file.size(), kOpenHangPythonFileBytes));
  const size_t size = Padded(sizeof(EntryHead) + symbol_bytes + head.file_bytes);
  if (size > kOpenHangPythonNamesBytes - bytes_) return;  // the region is full
  head.checksum = EntryChecksum(head, name.symbol.data(), name.file.data());
  unsigned char* p = region + bytes_;
  std::memcpy(p, &head, sizeof(head));
  std::memcpy(p + sizeof(head), name.symbol.data(), symbol_bytes);
  std::memcpy(p + sizeof(head) + symbol_bytes, name.file.data(), head.file_bytes);
  const size_t used = sizeof(head) + symbol_bytes + head.file_bytes;
  std::memset(p + used, 0, size - used);
  bytes_ += size;
  if (slot.word == 0) ++words_;
  slot.word = word;
  slot.name_hash = hash;
}

bool OpenHangPythonNamesTable::Find(uintptr_t word, RuntimeFrameName* out) const {
  auto it = names_.find(word);
  if (it == names_.end()) return false;
  *out = it->second;
  return true;
}

void OpenHangPythonNamesTable::Parse(const unsigned char* region, uint64_t bytes) {
  const size_t end = static_cast<size_t>(std::min<uint64_t>(bytes, kOpenHangPythonNamesBytes));
  size_t at = 0;
  while (end - at >= sizeof(EntryHead)) {
    EntryHead head;
    std::memcpy(&head, region + at, sizeof(head));
    const size_t symbol_bytes = head.symbol_bytes & kLengthMask;
    const unsigned language = (head.symbol_bytes & kLanguageMask) >> kLanguageShift;
    if (!IsRuntimeWord(head.word) || symbol_bytes > kOpenHangPythonSymbolBytes ||
        head.file_bytes > kOpenHangPythonFileBytes || language > 2 ||
        (head.symbol_bytes & 0x8000) != 0) {
      return;
    }
    const size_t size = Padded(sizeof(EntryHead) + symbol_bytes + head.file_bytes);
    if (size > end - at) return;
    const auto* symbol = reinterpret_cast<const char*>(region + at + sizeof(head));
    const char* file = symbol + symbol_bytes;
    if (head.checksum != EntryChecksum(head, symbol, file)) return;
    RuntimeFrameName& name = names_[static_cast<uintptr_t>(head.word)];  // the last entry counts
    name.language = language == 1   ? FrameLanguage::kJs
                    : language == 2 ? FrameLanguage::kRuby
                                    : FrameLanguage::kPython;
    name.line_is_definition = (head.symbol_bytes & kDefinition) != 0;
    name.symbol.assign(symbol, symbol_bytes);
    name.file.assign(file, head.file_bytes);
    name.line = std::max(head.line, 0);
    at += size;
  }
}

}  // namespace hangwatch::agent
