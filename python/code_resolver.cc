#include "python/code_resolver.h"

#include <cstring>

namespace hangwatch::python {
namespace {

constexpr size_t kMaxNameChars = 1024;
constexpr size_t kMaxFileChars = 4096;
constexpr uint64_t kMaxLineTableBytes = 1 << 20;

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x110000) {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->append("\xef\xbf\xbd");  // U+FFFD
  }
}

}  // namespace

CodeResolver::CodeResolver(const MemoryReader& memory, const PythonLayout& layout,
                           const InterpreterAddresses& addresses)
    : memory_(memory), layout_(layout), addresses_(addresses) {}

bool CodeResolver::ReadString(uint64_t addr, size_t max_chars, std::string* out) const {
  out->clear();
  uint64_t length = 0;
  uint32_t state = 0;
  if (!memory_.ReadWord(addr + layout_.unicode_length, &length) ||
      !memory_.Read(addr + layout_.unicode_state, &state, sizeof(state))) {
    return false;
  }
  // state: interned (2 bits), kind (3), compact (1), ascii (1), the same from 3.10 to 3.13.
  const unsigned kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) return false;
  if (length > max_chars) length = max_chars;
  const uint64_t data = addr + (ascii ? layout_.unicode_ascii_data : layout_.unicode_compact_data);
  std::vector<unsigned char> raw(static_cast<size_t>(length) * kind);
  if (!memory_.Read(data, raw.data(), raw.size())) return false;
  out->reserve(raw.size());
  for (size_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    if (kind == 1) {
      c = raw[i];
    } else if (kind == 2) {
      uint16_t u;
      std::memcpy(&u, &raw[i * 2], 2);
      c = u;
    } else {
      std::memcpy(&c, &raw[i * 4], 4);
    }
    AppendUtf8(c, out);
  }
  return true;
}

bool CodeResolver::ReadCode(uint64_t code, CodeInfo* info) const {
  uint64_t type = 0;
  if (!memory_.ReadWord(code + layout_.object_type, &type) || type != addresses_.code_type) {
    return false;
  }
  uint64_t name = 0;
  uint64_t file = 0;
  uint64_t table = 0;
  int32_t first_line = 0;
  const uint32_t name_field =
      layout_.code_qualname != kNoField ? layout_.code_qualname : layout_.code_name;
  if (!memory_.ReadWord(code + name_field, &name) ||
      !memory_.ReadWord(code + layout_.code_filename, &file) ||
      !memory_.ReadWord(code + layout_.code_linetable, &table) ||
      !memory_.Read(code + layout_.code_firstlineno, &first_line, sizeof(first_line))) {
    return false;
  }
  if (!ReadString(name, kMaxNameChars, &info->name)) return false;
  if (!ReadString(file, kMaxFileChars, &info->file)) info->file.clear();
  info->first_line = first_line;
  uint64_t size = 0;
  if (table != 0 && memory_.ReadWord(table + layout_.bytes_size, &size) &&
      size <= kMaxLineTableBytes) {
    info->line_table.resize(static_cast<size_t>(size));
    if (!memory_.Read(table + layout_.bytes_data, info->line_table.data(), size)) {
      info->line_table.clear();
    }
  }
  return true;
}

const CodeInfo* CodeResolver::Code(uint64_t code) {
  auto [it, inserted] = cache_.try_emplace(code);
  if (inserted) it->second.ok = ReadCode(code, &it->second.info);
  return it->second.ok ? &it->second.info : nullptr;
}

int CodeResolver::Line(const CodeInfo& info, int64_t instr) const {
  return LineForOffset(LineTableFormatFor(layout_.minor), info.line_table.data(),
                       info.line_table.size(), info.first_line, instr);
}

}  // namespace hangwatch::python
