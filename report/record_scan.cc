// The scanner of record_scan.h: the line's structure found sixteen bytes at a time (SSE2 where
// the target has it), then the kept top-level values checked against their record type's
// table (record_types.h).
#include "report/record_scan.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <system_error>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "report/context_scan.h"
#include "report/utf8.h"

namespace hangwatch::report {

using scan_internal::IsWs;
using scan_internal::SkipWs;

namespace {

// The bytes of a 64-byte block the scanner looks at, bit i for byte i of the block.
struct BlockBits {
  uint64_t quote = 0, backslash = 0, control = 0, bracket = 0;
};

// The classes of the 64 bytes at p (SSE2 where the target has it, every x86-64). With SSE2, '{' and
// '[' are the bytes that are '{' with bit 5 set ('}' and ']' likewise), and a control character is
// one whose unsigned minimum with 0x1f is itself.
inline BlockBits Classify64(const char* p) {
  BlockBits b;
#if defined(__SSE2__)
  const auto bits = [](__m128i m, int k) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))) << (16 * k);
  };
  const auto backslashes = [](__m128i x) { return _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')); };
  const auto controls = [](__m128i x) {
    return _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
  };
  __m128i x[4];
  __m128i rare = _mm_setzero_si128();
  for (int k = 0; k < 4; ++k) {
    x[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(x[k], _mm_set1_epi8(0x20));
    b.quote |= bits(_mm_cmpeq_epi8(x[k], _mm_set1_epi8('"')), k);
    b.bracket |= bits(_mm_or_si128(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')),
                                   _mm_cmpeq_epi8(folded, _mm_set1_epi8('}'))),
                      k);
    rare = _mm_or_si128(rare, _mm_or_si128(backslashes(x[k]), controls(x[k])));
  }
  // Backslashes and control characters are rare: their bits only when the block has some.
  if (_mm_movemask_epi8(rare) != 0) {
    for (int k = 0; k < 4; ++k) {
      b.backslash |= bits(backslashes(x[k]), k);
      b.control |= bits(controls(x[k]), k);
    }
  }
#else
  // Eight bytes at a time, each test exact per byte (no borrow between bytes), the high bits
  // then gathered into eight bits by a multiplication.
  constexpr uint64_t kOnes = 0x0101010101010101ull, kLow7 = kOnes * 0x7f, kHigh = kOnes * 0x80;
  const auto nonzero = [](uint64_t t) { return (((t & kLow7) + kLow7) | t) & kHigh; };
  const auto gather = [](uint64_t high) { return ((high >> 7) * 0x0102040810204080ull) >> 56; };
  for (int k = 0; k < 8; ++k) {
    uint64_t w;
    std::memcpy(&w, p + 8 * k, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    const uint64_t folded = w | (kOnes * 0x20);
    b.quote |= gather(~nonzero(w ^ (kOnes * '"')) & kHigh) << (8 * k);
    b.backslash |= gather(~nonzero(w ^ (kOnes * '\\')) & kHigh) << (8 * k);
    b.control |= gather(~(((w & kLow7) + kOnes * 0x60) | w) & kHigh) << (8 * k);
    b.bracket |=
        gather((~nonzero(folded ^ (kOnes * '{')) | ~nonzero(folded ^ (kOnes * '}'))) & kHigh)
        << (8 * k);
  }
#endif
  return b;
}

// Classify64 of the bytes from p to e: a last block shorter than 64 bytes is copied first, so
// that nothing past the line is read, and the bits past the line are cleared.
inline BlockBits ClassifyAt(const char* p, const char* e) {
  const size_t n = static_cast<size_t>(e - p);
  if (n >= 64) return Classify64(p);
  char block[64];
  std::memset(block, 'a', sizeof block);
  std::memcpy(block, p, n);
  BlockBits b = Classify64(block);
  const uint64_t line = (uint64_t{1} << n) - 1;
  b.quote &= line;
  b.backslash &= line;
  b.control &= line;
  b.bracket &= line;
  return b;
}

// Bit i is the parity of bits 0..i of x: with x the quotes of a block without escapes, the
// bytes inside strings (each opening quote in, each closing one out).
inline uint64_t PrefixXor(uint64_t x) {
  for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
  return x;
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

// Where a nested value is: its open brackets (each one's closer), whether the block being read
// starts inside a string.
struct NestedState {
  char closers[kMaxDepth];
  size_t depth = 0;
  bool in_string = false;
};

// Bracket c outside a string: false when it does not match or nests too deep; *done when it
// closes the value.
inline bool Bracket(char c, NestedState* s, bool* done) {
  if (c == '{' || c == '[') {
    if (s->depth == kMaxDepth) return false;
    s->closers[s->depth++] = c == '{' ? '}' : ']';
    return true;
  }
  if (s->depth == 0 || s->closers[s->depth - 1] != c) return false;
  *done = --s->depth == 0;
  return true;
}

// A block without backslashes, at p: the end of the value when it closes in the block (after
// its last bracket), p + 64 when it goes on, nullptr when it is malformed. Strings are found by
// the parity of the quotes before each byte, so no byte is looked at one by one but brackets.
const char* PlainBlock(const char* p, const BlockBits& b, NestedState* s) {
  const uint64_t in = PrefixXor(b.quote) ^ (s->in_string ? ~uint64_t{0} : 0);
  uint64_t brackets = b.bracket & ~in;
  uint64_t read = ~uint64_t{0};  // the bytes of the value in this block
  const char* end = nullptr;
  while (brackets != 0) {
    const int i = std::countr_zero(brackets);
    brackets &= brackets - 1;
    bool done = false;
    if (!Bracket(p[i], s, &done)) return nullptr;
    if (done) {
      read = i == 63 ? ~uint64_t{0} : (uint64_t{2} << i) - 1;
      end = p + i + 1;
      break;
    }
  }
  // A control character in a string, or outside one other than tab and CR.
  for (uint64_t c = b.control & read; c != 0; c &= c - 1) {
    const int i = std::countr_zero(c);
    if ((in >> i) & 1 || (p[i] != '\t' && p[i] != '\r')) return nullptr;
  }
  s->in_string = in >> 63;
  return end != nullptr ? end : p + 64;
}

// A block with a backslash, at p: each quote, backslash, control character and bracket in turn.
// The end of the value, or where to go on reading (past 64 bytes when an escape ends there),
// nullptr when it is malformed; *done tells which.
const char* EscapedBlock(const char* p, const char* e, const BlockBits& b, NestedState* s,
                         bool* done) {
  for (uint64_t stops = b.quote | b.backslash | b.control | b.bracket; stops != 0;
       stops &= stops - 1) {
    const char* q = p + std::countr_zero(stops);
    const char c = *q;
    if (s->in_string) {
      if (c == '"') {
        s->in_string = false;
      } else if (c == '\\') {
        uint32_t code = 0;
        return Escape(q, e, &code);  // may hide a quote: read on from its end
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return nullptr;
      }  // a bracket in a string is text
    } else if (c == '"') {
      s->in_string = true;
    } else if (c == '{' || c == '[' || c == '}' || c == ']') {
      if (!Bracket(c, s, done)) return nullptr;
      if (*done) return q + 1;
    } else if (c != '\\' && c != '\t' && c != '\r') {
      return nullptr;  // a control character (outside a string, a backslash is any byte)
    }
  }
  return p + 64;
}

// An object or array at p: brackets matched, strings checked as SkipString checks them, other
// bytes taken as they come except control characters other than tab and CR. 64 bytes at a
// time (Classify64).
const char* SkipNested(const char* p, const char* e) {
  NestedState s;
  while (p < e) {
    const BlockBits b = ClassifyAt(p, e);
    bool done = false;
    if (b.backslash == 0) {
      const char* next = PlainBlock(p, b, &s);
      if (next == nullptr || s.depth == 0) return next;
      p = next;
    } else {
      p = EscapedBlock(p, e, b, &s, &done);
      if (p == nullptr || done) return p;
    }
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
      FrameLanguage language;
      ok &= x[0] == '"' && ParseFrameLanguage(kind, &language);
    } else if (key == "line_is_definition") {
      ok &= x == "true" || x == "false";
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

// A thread: an object whose "tid" is a 64-bit integer and whose "name" and "role" are strings.
bool IsThread(std::string_view v) {
  if (v[0] != '{') return false;
  bool ok = true;
  bool has_tid = false;
  ForEachMember(v, [&](std::string_view key, std::string_view x) {
    if (key == "tid") {
      int64_t n = 0;
      has_tid = true;
      ok &= IsInteger(x) && ParseInt64(x, &n);
    } else if (key == "name" || key == "role") {
      ok &= x[0] == '"';
    }
  });
  return ok && has_tid;
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
    case ValueKind::kThread:
      return IsThread(v);
    case ValueKind::kContext:
      return ScanContext(v, nullptr);
    case ValueKind::kInput:
      return ScanInput(v, nullptr);
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
// allow. 64 bytes at a time (Classify64), then the first stop.
const char* SkipString(const char* p, const char* e) {
  ++p;
  while (p < e) {
    const BlockBits b = ClassifyAt(p, e);
    const uint64_t stops = b.quote | b.backslash | b.control;
    if (stops == 0) {
      p += 64;
      continue;
    }
    p += std::countr_zero(stops);
    if (*p == '"') return p + 1;
    uint32_t code = 0;
    if (*p != '\\' || (p = Escape(p, e, &code)) == nullptr) return nullptr;
  }
  return nullptr;
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
  if (!IsReadableVersion(!version.empty(), v)) return out->kind = LineKind::kOtherVersion;
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

std::string_view ScannedRole(const ScannedLine& line, std::string* scratch) {
  std::string_view role;
  ForEachMember(line[KeyIndex("thread")], [&](std::string_view key, std::string_view v) {
    if (key == "role") role = StringValue(v, scratch);
  });
  return RoleOrMain(role);
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
