#include "js/heap_reader.h"

#include <algorithm>
#include <cstring>

namespace hangwatch::js {
namespace {

constexpr int kMaxConsDepth = 24;
constexpr size_t kChunkChars = 4096;

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
  } else {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

}  // namespace

bool HeapReader::InstanceType(uint64_t object, uint16_t* type) const {
  if (!m_.IsHeapObject(object)) return false;
  uint64_t map = 0;
  if (!memory_.ReadWord(m_.Untag(object) + m_.heap_object_map, &map)) return false;
  if (!m_.IsHeapObject(map)) return false;
  return memory_.Read(m_.Untag(map) + m_.map_instance_type, type, sizeof(*type));
}

bool HeapReader::Field(uint64_t object, int32_t offset, uint64_t* out) const {
  return m_.IsHeapObject(object) && memory_.ReadWord(m_.Untag(object) + offset, out);
}

bool HeapReader::Length(uint64_t object, int64_t* length) const {
  int32_t n = 0;
  if (!memory_.Read(m_.Untag(object) + m_.string_length, &n, sizeof(n)) || n < 0) return false;
  *length = n;
  return true;
}

bool HeapReader::Visit(uint64_t object, int64_t from, int64_t count, int depth,
                       const ChunkFn& chunk) const {
  if (count <= 0) return true;
  if (depth > kMaxConsDepth) return false;
  uint16_t type = 0;
  int64_t length = 0;
  if (!InstanceType(object, &type) || !IsString(type) || !Length(object, &length)) return false;
  if (from < 0 || from + count > length) return false;
  const uint16_t representation = type & m_.string_representation_mask;
  const bool one_byte = (type & m_.string_encoding_mask) == m_.one_byte_string_tag;
  if (representation == m_.seq_string_tag) {
    const size_t width = one_byte ? 1 : 2;
    const uint64_t chars =
        m_.Untag(object) + (one_byte ? m_.seq_one_byte_chars : m_.seq_two_byte_chars);
    unsigned char buffer[kChunkChars * 2];
    for (int64_t done = 0; done < count;) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(count - done, kChunkChars));
      if (!memory_.Read(chars + static_cast<uint64_t>(from + done) * width, buffer, n * width)) {
        return false;
      }
      if (!chunk(buffer, n, !one_byte)) return true;  // the visitor has enough
      done += static_cast<int64_t>(n);
    }
    return true;
  }
  uint64_t first = 0;
  if (representation == m_.thin_string_tag) {
    return Field(object, m_.thin_actual, &first) && Visit(first, from, count, depth + 1, chunk);
  }
  if (representation == m_.sliced_string_tag) {
    uint64_t offset = 0;
    if (!Field(object, m_.sliced_parent, &first) || !Field(object, m_.sliced_offset, &offset) ||
        !m_.IsSmi(offset)) {
      return false;
    }
    return Visit(first, from + m_.SmiValue(offset), count, depth + 1, chunk);
  }
  if (representation == m_.cons_string_tag) {
    uint64_t second = 0;
    int64_t first_length = 0;
    if (!Field(object, m_.cons_first, &first) || !Field(object, m_.cons_second, &second) ||
        !m_.IsHeapObject(first) || !Length(first, &first_length)) {
      return false;
    }
    const int64_t in_first = std::clamp<int64_t>(first_length - from, 0, count);
    if (!Visit(first, from, in_first, depth + 1, chunk)) return false;
    return Visit(second, std::max<int64_t>(from - first_length, 0), count - in_first, depth + 1,
                 chunk);
  }
  return false;  // external: the characters are behind the embedder's resource
}

bool HeapReader::ReadString(uint64_t object, size_t max_chars, std::string* out) const {
  out->clear();
  uint16_t type = 0;
  int64_t length = 0;
  if (!InstanceType(object, &type) || !IsString(type) || !Length(object, &length)) return false;
  const int64_t count = std::min<int64_t>(length, static_cast<int64_t>(max_chars));
  uint32_t high_surrogate = 0;
  const bool ok = Visit(object, 0, count, 0, [&](const void* chars, size_t n, bool two_byte) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t c = 0;
      if (two_byte) {
        uint16_t u = 0;
        std::memcpy(&u, static_cast<const unsigned char*>(chars) + 2 * i, 2);
        c = u;
      } else {
        c = static_cast<const unsigned char*>(chars)[i];
      }
      if (c >= 0xd800 && c < 0xdc00) {
        if (high_surrogate != 0) AppendUtf8(0xfffd, out);
        high_surrogate = c;
        continue;
      }
      if (c >= 0xdc00 && c < 0xe000) {
        c = high_surrogate != 0 ? 0x10000 + ((high_surrogate - 0xd800) << 10) + (c - 0xdc00)
                                : 0xfffd;
        high_surrogate = 0;
      } else if (high_surrogate != 0) {
        AppendUtf8(0xfffd, out);
        high_surrogate = 0;
      }
      AppendUtf8(c, out);
    }
    return true;
  });
  if (high_surrogate != 0) AppendUtf8(0xfffd, out);
  return ok;
}

bool HeapReader::LineOfPosition(uint64_t object, int64_t position, int* line) const {
  if (position < 0 || position > kMaxLineScan) return false;
  uint16_t type = 0;
  int64_t length = 0;
  if (!InstanceType(object, &type) || !IsString(type) || !Length(object, &length) ||
      position > length) {
    return false;
  }
  int newlines = 0;
  if (!Visit(object, 0, position, 0, [&](const void* chars, size_t n, bool two_byte) {
        const unsigned char* bytes = static_cast<const unsigned char*>(chars);
        if (!two_byte) {
          newlines += static_cast<int>(std::count(bytes, bytes + n, '\n'));
        } else {
          for (size_t i = 0; i < n; ++i) {
            uint16_t u = 0;
            std::memcpy(&u, bytes + 2 * i, 2);
            newlines += u == '\n';
          }
        }
        return true;
      })) {
    return false;
  }
  *line = newlines + 1;
  return true;
}

}  // namespace hangwatch::js
