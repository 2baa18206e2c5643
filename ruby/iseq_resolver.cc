#include "ruby/iseq_resolver.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ruby/line_table.h"

namespace hangwatch::ruby {
namespace {

// A heap object: not a special constant (Fixnum, Symbol, Flonum, nil...) and aligned.
bool IsHeapObject(uint64_t value) { return value != 0 && (value & 7) == 0; }

// Line tables and positions larger than this are not read (no method has a million lines).
constexpr uint32_t kMaxEntries = 1u << 20;

uint64_t Word(const unsigned char* p, uint32_t offset) {
  uint64_t w = 0;
  std::memcpy(&w, p + offset, sizeof(w));
  return w;
}

}  // namespace

bool ReadRString(const python::MemoryReader& memory, const RubyLayout& layout, uint64_t value,
                 size_t max_bytes, std::string* out) {
  if (!IsHeapObject(value)) return false;
  // The header and the embedded bytes (up to 23 and a NUL: an object is 40 bytes in 3.1).
  unsigned char head[48];
  const size_t span = std::max<size_t>(layout.string_heap_ptr + 8, layout.string_embed + 24);
  if (span > sizeof(head) || !memory.Read(value, head, span)) return false;
  const uint64_t flags = Word(head, 0);
  if ((flags & kTypeMask) != kTypeString) return false;
  if ((flags & kEmbedFlag) == 0) {  // embedded: the bytes follow the header
    const size_t len = (flags >> kStringEmbedLenShift) & kStringEmbedLenMask;
    if (layout.string_embed + len > span) return false;
    out->assign(reinterpret_cast<const char*>(head + layout.string_embed),
                std::min(len, max_bytes));
    return true;
  }
  const uint64_t len = Word(head, layout.string_heap_len);
  const uint64_t ptr = Word(head, layout.string_heap_ptr);
  if (static_cast<int64_t>(len) < 0) return false;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(len, max_bytes));
  out->resize(n);
  if (n > 0 && !memory.Read(ptr, out->data(), n)) {
    out->clear();
    return false;
  }
  return true;
}

int64_t IseqResolver::Position(const IseqInfo& info, uint64_t pc) {
  if (pc < info.encoded || (pc - info.encoded) % 8 != 0) return -1;
  const uint64_t next = (pc - info.encoded) / 8;
  if (next > info.size) return -1;
  return next == 0 ? 0 : static_cast<int64_t>(next) - 1;
}

const IseqInfo* IseqResolver::Iseq(uint64_t iseq) {
  auto [it, inserted] = cache_.try_emplace(iseq);
  if (inserted) it->second.ok = ReadIseq(iseq, &it->second.info);
  return it->second.ok ? &it->second.info : nullptr;
}

bool IseqResolver::ReadIseq(uint64_t iseq, IseqInfo* info) const {
  uint64_t flags = 0, body = 0;
  if (!IsHeapObject(iseq) || !memory_.ReadWord(iseq, &flags) || !IsIseqFlags(flags) ||
      !memory_.ReadWord(iseq + layout_.iseq_body, &body) || body == 0) {
    return false;
  }
  unsigned char b[256];
  const size_t span = layout_.body_succ_index_table + 8;
  if (span > sizeof(b) || !memory_.Read(body, b, span)) return false;
  uint32_t type = 0, size = 0, entry_count = 0;
  std::memcpy(&type, b + layout_.body_type, 4);
  std::memcpy(&size, b + layout_.body_iseq_size, 4);
  std::memcpy(&entry_count, b + layout_.body_insns_size, 4);
  info->size = size;
  info->encoded = Word(b, layout_.body_iseq_encoded);
  info->entries = Word(b, layout_.body_insns_info);
  info->entry_count = entry_count;
  info->positions = Word(b, layout_.body_insns_positions);
  info->succ_table = Word(b, layout_.body_succ_index_table);
  const uint64_t first_lineno = Word(b, layout_.body_first_lineno);
  info->first_line =
      (first_lineno & 1) != 0 ? static_cast<int>(static_cast<int64_t>(first_lineno) >> 1) : 0;
  if (!ReadRString(memory_, layout_, Word(b, layout_.body_label), kMaxLabel, &info->label)) {
    return false;
  }
  info->vm_placeholder = IsVmPlaceholder(type, first_lineno) && info->label == "<main>";
  // The path: a String, or an Array [path, realpath].
  const uint64_t pathobj = Word(b, layout_.body_pathobj);
  uint64_t path_flags = 0;
  if (!IsHeapObject(pathobj) || !memory_.ReadWord(pathobj, &path_flags)) return true;
  uint64_t path = pathobj;
  if ((path_flags & kTypeMask) == kTypeArray) {
    path = 0;
    if ((path_flags & kEmbedFlag) != 0) {
      if (((path_flags >> kArrayEmbedLenShift) & kArrayEmbedLenMask) >= 1) {
        memory_.ReadWord(pathobj + layout_.array_embed, &path);
      }
    } else {
      uint64_t len = 0, ptr = 0;
      if (memory_.ReadWord(pathobj + layout_.array_heap_len, &len) && len >= 1 &&
          memory_.ReadWord(pathobj + layout_.array_heap_ptr, &ptr)) {
        memory_.ReadWord(ptr, &path);
      }
    }
  }
  ReadRString(memory_, layout_, path, kMaxPath, &info->path);
  return true;
}

IseqLine IseqResolver::Line(const IseqInfo& info, int64_t pos) const {
  const IseqLine definition{info.first_line, true};
  if (pos < 0 || info.entries == 0 || info.entry_count == 0 || info.entry_count > kMaxEntries) {
    return definition;
  }
  size_t entry = 0;
  if (info.entry_count > 1) {
    if (info.succ_table != 0) {
      const int rank = SuccIndexRank(memory_, info.succ_table, info.size, pos);
      if (rank < 1 || static_cast<uint32_t>(rank) > info.entry_count) return definition;
      entry = static_cast<size_t>(rank - 1);
    } else if (info.positions != 0) {
      std::vector<uint32_t> positions(info.entry_count);
      if (!memory_.Read(info.positions, positions.data(), positions.size() * 4)) {
        return definition;
      }
      entry = PositionsEntry(positions.data(), positions.size(), pos);
    } else {
      return definition;
    }
  }
  int32_t line = 0;
  if (!memory_.Read(info.entries + entry * layout_.insn_info_entry_size, &line, sizeof(line)) ||
      line <= 0) {
    return definition;
  }
  return IseqLine{line, false};
}

}  // namespace hangwatch::ruby
