// The scanner of record_scan.h: a byte loop over the line's structure, with strings skipped
// eight bytes at a time, then the kept top-level values checked against their record type's
// table (record_types.h).
#include "report/record_scan.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <system_error>

#include "report/utf8.h"

namespace hangwatch::report {

using scan_internal::IsWs;
using scan_internal::SkipWs;

namespace {

// Bytes the loop over a nested value stops at: strings, brackets and control characters other
// than tab and CR ('\n' ends the line, so a value that reaches it is torn).
struct StopTable {
  bool in_nested[256] = {};
  constexpr StopTable() {
    for (int c = 0; c < 0x20; ++c) in_nested[c] = true;
    in_nested[static_cast<int>('\t')] = in_nested[static_cast<int>('\r')] = false;
    for (char c : {'"', '{', '[', '}', ']'}) in_nested[static_cast<unsigned char>(c)] = true;
  }
};
constexpr StopTable kStop;

// The bytes of an 8-byte word (little-endian) that a string stops at: '"', '\\' or a control
// character. Only the lowest flagged byte is exact (a borrow can flag bytes above it), which is
// the only one used.
inline uint64_t StringStops(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
  return (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
          ((x - kOnes * 0x20) & ~x)) &
         kHigh;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits of a \u escape at p (after the 'u'); -1 when they are not there.
int32_t Hex4(const char* p, const char* e) {
  if (e - p < 4) return -1;
  int32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    const int d = HexDigit(p[k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// p is on a backslash: the position after its escape (a surrogate pair is one), nullptr when
// JSON does not allow it. *code gets the code point (a simple escape's character).
const char* Escape(const char* p, const char* e, uint32_t* code) {
  if (e - p < 2) return nullptr;
  switch (p[1]) {
    case '"':
    case '\\':
    case '/':
      *code = static_cast<unsigned char>(p[1]);
      return p + 2;
    case 'b':
      return *code = '\b', p + 2;
    case 'f':
      return *code = '\f', p + 2;
    case 'n':
      return *code = '\n', p + 2;
    case 'r':
      return *code = '\r', p + 2;
    case 't':
      return *code = '\t', p + 2;
    case 'u':
      break;
    default:
      return nullptr;
  }
  const int32_t high = Hex4(p + 2, e);
  if (high < 0 || (high >= 0xDC00 && high <= 0xDFFF)) return nullptr;  // a lone low surrogate
  if (high < 0xD800 || high > 0xDBFF) return *code = static_cast<uint32_t>(high), p + 6;
  if (e - p < 12 || p[6] != '\\' || p[7] != 'u') return nullptr;  // a lone high surrogate
  const int32_t low = Hex4(p + 8, e);
  if (low < 0xDC00 || low > 0xDFFF) return nullptr;
  *code = 0x10000u + ((static_cast<uint32_t>(high) - 0xD800u) << 10) +
          (static_cast<uint32_t>(low) - 0xDC00u);
  return p + 12;
}

// Nested arrays and objects deeper than this make the line bad (the decoder's own limit is
// higher than any real record needs).
constexpr size_t kMaxDepth = 1024;

// An object or array at p: brackets matched, strings skipped, other bytes taken as they come.
const char* SkipNested(const char* p, const char* e) {
  char closers[kMaxDepth];
  size_t depth = 0;
  while (p < e) {
    const char c = *p;
    if (!kStop.in_nested[static_cast<unsigned char>(c)]) {
      ++p;
      continue;
    }
    if (c == '"') {
      p = scan_internal::SkipString(p, e);
      if (p == nullptr) return nullptr;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == kMaxDepth) return nullptr;
      closers[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (depth == 0 || closers[depth - 1] != c) return nullptr;
      if (--depth == 0) return p + 1;
    } else {
      return nullptr;  // a control character
    }
    ++p;
  }
  return nullptr;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A JSON number by its grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
const char* SkipNumber(const char* p, const char* e) {
  if (p < e && *p == '-') ++p;
  if (p >= e || !IsDigit(*p)) return nullptr;
  if (*p == '0') {
    ++p;
  } else {
    while (p < e && IsDigit(*p)) ++p;
  }
  if (p < e && *p == '.') {
    if (++p >= e || !IsDigit(*p)) return nullptr;
    while (p < e && IsDigit(*p)) ++p;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (p >= e || !IsDigit(*p)) return nullptr;
    while (p < e && IsDigit(*p)) ++p;
  }
  return p;
}

const char* SkipLiteral(const char* p, const char* e, std::string_view word) {
  if (static_cast<size_t>(e - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) {
    return nullptr;
  }
  return p + word.size();
}

bool IsInteger(std::string_view v) {
  return !v.empty() && (IsDigit(v[0]) || v[0] == '-') &&
         v.find_first_of(".eE") == std::string_view::npos;
}

bool IsNumber(std::string_view v) { return !v.empty() && (IsDigit(v[0]) || v[0] == '-'); }

// An object of strings ({"k":"v",...}).
bool IsLabels(std::string_view v) {
  if (v[0] != '{') return false;
  bool strings = true;
  ForEachMember(v, [&](std::string_view, std::string_view x) { strings &= x[0] == '"'; });
  return strings;
}

// A culprit: null, or an object whose fields have the decoder's types and ranges.
bool IsCulprit(std::string_view v) {
  if (v == "null") return true;
  if (v[0] != '{') return false;
  bool ok = true;
  std::string scratch;
  ForEachMember(v, [&](std::string_view key, std::string_view x) {
    if (key == "kind") {
      const std::string_view kind = StringValue(x, &scratch);
      ok &= x[0] == '"' && (kind.empty() || kind == "native" || kind == "python");
    } else if (key == "symbol" || key == "module" || key == "file") {
      ok &= x[0] == '"';
    } else if (key == "line" || key == "frame" || key == "stack") {
      int64_t n = 0;
      ok &= IsInteger(x) && ParseInt64(x, &n) && n >= 0 && n <= INT32_MAX;
    } else if (key == "offset") {
      uint64_t offset = 0;
      ok &= x[0] == '"' && ParseHexString(StringValue(x, &scratch), &offset);
    }
  });
  return ok;
}

// Whether a raw value (well formed) has `kind`'s JSON type and range.
bool HasKind(std::string_view v, ValueKind kind) {
  int64_t i = 0;
  uint64_t u = 0;
  switch (kind) {
    case ValueKind::kInt64:
      return IsInteger(v) && ParseInt64(v, &i);
    case ValueKind::kInt32:
      return IsInteger(v) && ParseInt64(v, &i) && i >= INT32_MIN && i <= INT32_MAX;
    case ValueKind::kUint64:
      return IsInteger(v) && ParseUint64(v, &u);
    case ValueKind::kUint32:
      return IsInteger(v) && ParseUint64(v, &u) && u <= UINT32_MAX;
    case ValueKind::kNumber:
      return IsNumber(v);
    case ValueKind::kBusyMs: {
      double ms = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
      return IsNumber(v) && ec == std::errc() && end == v.data() + v.size() && ms >= 0 && ms < 1e15;
    }
    case ValueKind::kString:
      return v[0] == '"';
    case ValueKind::kBoolean:
      return v == "true" || v == "false";
    case ValueKind::kObject:
      return v[0] == '{';
    case ValueKind::kLabels:
      return IsLabels(v);
    case ValueKind::kArray:
      return v[0] == '[';
    case ValueKind::kCulprit:
      return IsCulprit(v);
    case ValueKind::kObjectOrNull:
      return v[0] == '{' || v == "null";
  }
  return false;
}

// A record type's table with each field's row in kScanKeys, found once, at compile time.
template <size_t N>
struct KeyedFields {
  const TopLevelField* fields;
  size_t keys[N];
};
template <size_t N>
constexpr KeyedFields<N> Keyed(const TopLevelField (&fields)[N]) {
  KeyedFields<N> k{fields, {}};
  for (size_t i = 0; i < N; ++i) k.keys[i] = KeyIndex(fields[i].name);
  return k;
}
constexpr auto kHangKeyed = Keyed(kHangFields);
constexpr auto kLagKeyed = Keyed(kLagFields);
constexpr auto kStallKeyed = Keyed(kStartupStallFields);
constexpr size_t kTypeKey = KeyIndex("type");
constexpr size_t kVersionKey = KeyIndex("format_version");

template <size_t N>
bool CheckFields(const ScannedLine& s, const KeyedFields<N>& keyed) {
  for (size_t i = 0; i < N; ++i) {
    const TopLevelField& f = keyed.fields[i];
    const std::string_view v = s.values[keyed.keys[i]];
    if (v.empty() ? f.required : !HasKind(v, f.kind)) return false;
  }
  return true;
}

// Every field of the record types' tables is kept.
template <size_t N>
constexpr bool AllKept(const KeyedFields<N>& keyed) {
  for (size_t key : keyed.keys) {
    if (key == kScanKeyCount) return false;
  }
  return true;
}
static_assert(AllKept(kHangKeyed) && AllKept(kLagKeyed) && AllKept(kStallKeyed));

// The key's row, trying first the one after the previous key's (an agent writes them in the
// order of kScanKeys' hang rows).
size_t FindKey(std::string_view key, size_t* next) {
  for (size_t k = 0; k < kScanKeyCount; ++k) {
    const size_t i = (*next + k) % kScanKeyCount;
    if (kScanKeys[i].size() == key.size() && kScanKeys[i] == key) {
      *next = i + 1;
      return i;
    }
  }
  return kScanKeyCount;
}

// The members of the object at p, each value kept when its key is; the end of the line (after
// trailing white space) or nullptr when the line is not one object.
const char* ScanObject(const char* p, const char* e, ScannedLine* out) {
  if (p >= e || *p != '{') return nullptr;
  p = SkipWs(p + 1, e);
  size_t next = 0;
  if (p < e && *p == '}') return SkipWs(p + 1, e);
  for (;;) {
    if (p >= e || *p != '"') return nullptr;
    const char* key_end = scan_internal::SkipString(p, e);
    if (key_end == nullptr) return nullptr;
    const std::string_view key(p + 1, static_cast<size_t>(key_end - p - 2));
    p = SkipWs(key_end, e);
    if (p >= e || *p != ':') return nullptr;
    p = SkipWs(p + 1, e);
    const char* value_end = SkipJsonValue(p, e);
    if (value_end == nullptr) return nullptr;
    if (const size_t k = FindKey(key, &next); k < kScanKeyCount) {
      out->values[k] = std::string_view(p, static_cast<size_t>(value_end - p));
    }
    p = SkipWs(value_end, e);
    if (p < e && *p == ',') {
      p = SkipWs(p + 1, e);
      continue;
    }
    if (p < e && *p == '}') return SkipWs(p + 1, e);
    return nullptr;
  }
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

namespace scan_internal {

// p is on a string's opening quote: the position after its closing quote, nullptr when there
// is none before the line ends, or it holds a control character or an escape JSON does not
// allow. Eight bytes at a time, then byte by byte at a stop.
const char* SkipString(const char* p, const char* e) {
  ++p;
  for (;;) {
    while (std::endian::native == std::endian::little && e - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      const uint64_t stops = StringStops(word);
      if (stops != 0) {
        p += __builtin_ctzll(stops) / 8;
        break;
      }
      p += 8;
    }
    while (p < e && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
    if (p >= e) return nullptr;
    if (*p == '"') return p + 1;
    uint32_t code = 0;
    if (*p != '\\' || (p = Escape(p, e, &code)) == nullptr) return nullptr;
  }
}

}  // namespace scan_internal

const char* SkipJsonValue(const char* p, const char* e) {
  if (p >= e) return nullptr;
  switch (*p) {
    case '"':
      return scan_internal::SkipString(p, e);
    case '{':
    case '[':
      return SkipNested(p, e);
    case 't':
      return SkipLiteral(p, e, "true");
    case 'f':
      return SkipLiteral(p, e, "false");
    case 'n':
      return SkipLiteral(p, e, "null");
    default:
      return SkipNumber(p, e);
  }
}

LineKind ScanLine(std::string_view line, ScannedLine* out) {
  *out = ScannedLine{};
  const char* e = line.data() + line.size();
  const char* p = SkipWs(line.data(), e);
  if (p == e) return out->kind = LineKind::kEmpty;
  if (ScanObject(p, e, out) != e) return out->kind = LineKind::kBad;
  const std::string_view version = out->values[kVersionKey];
  int64_t v = 0;
  if (!version.empty() && !(IsInteger(version) && ParseInt64(version, &v))) {
    // Not an integer (or past int64: the decoder reads a larger unsigned as another version).
    uint64_t u = 0;
    if (!(IsInteger(version) && ParseUint64(version, &u))) return out->kind = LineKind::kBad;
    v = 0;
  }
  if (!IsThisVersion(!version.empty(), v)) return out->kind = LineKind::kOtherVersion;
  // A "type" that is not a string is a type this build does not know.
  const std::string_view type = out->values[kTypeKey];
  if (!type.empty() && type[0] != '"') return out->kind = LineKind::kUnknownType;
  std::string scratch;
  switch (KindOfType(!type.empty(), StringValue(type, &scratch))) {
    case RecordKind::kHang:
      return out->kind = CheckFields(*out, kHangKeyed) ? LineKind::kHang : LineKind::kBad;
    case RecordKind::kLag:
      return out->kind = CheckFields(*out, kLagKeyed) ? LineKind::kLag : LineKind::kBad;
    case RecordKind::kStartupStall:
      return out->kind = CheckFields(*out, kStallKeyed) ? LineKind::kStartupStall : LineKind::kBad;
    case RecordKind::kUnknown:
      break;
  }
  return out->kind = LineKind::kUnknownType;
}

bool ParseUint64(std::string_view digits, uint64_t* out) {
  if (digits.empty()) return false;
  uint64_t n = 0;
  for (char c : digits) {
    if (!IsDigit(c)) return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  *out = n;
  return true;
}

bool ParseInt64(std::string_view digits, int64_t* out) {
  const bool negative = !digits.empty() && digits[0] == '-';
  uint64_t magnitude = 0;
  if (!ParseUint64(digits.substr(negative ? 1 : 0), &magnitude)) return false;
  if (magnitude > (negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX})) return false;
  *out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

bool ParseHexString(std::string_view s, uint64_t* out) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  const auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), *out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string_view StringValue(std::string_view raw, std::string* scratch) {
  if (raw.size() < 2 || raw[0] != '"') return {};
  const std::string_view inner = raw.substr(1, raw.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    if (IsValidUtf8(inner)) return inner;
    *scratch = ValidUtf8(inner);
    return *scratch;
  }
  std::string text;
  const char* e = inner.data() + inner.size();
  for (const char* p = inner.data(); p < e;) {
    if (*p != '\\') {
      text.push_back(*p++);
      continue;
    }
    uint32_t code = 0;
    const char* next = Escape(p, e, &code);
    if (next == nullptr) break;  // not a string ScanLine checked
    AppendUtf8(code, &text);
    p = next;
  }
  *scratch = ValidUtf8(text);
  return *scratch;
}

}  // namespace hangwatch::report
