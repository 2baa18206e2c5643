// symbols/leb128: the one LEB128 decoder (DWARF and the symbol index), on well-formed, padded
// (overlong), oversized and truncated input, and against the index writer's encoder.
#include "symbols/leb128.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "symbols/index/internal/index_tables.h"

namespace hangwatch::symbols {
namespace {

// Decodes `bytes` whole: the value, and how many bytes the decoder took (-1: it refused).
struct Unsigned {
  uint64_t value = 0;
  long used = -1;
};
struct Signed {
  int64_t value = 0;
  long used = -1;
};

Unsigned U(const std::vector<uint8_t>& bytes) {
  Unsigned out;
  const uint8_t* end = bytes.data() + bytes.size();
  const uint8_t* p = ReadUleb(bytes.data(), end, &out.value);
  if (p != nullptr) out.used = p - bytes.data();
  return out;
}

Signed S(const std::vector<uint8_t>& bytes) {
  Signed out;
  const uint8_t* end = bytes.data() + bytes.size();
  const uint8_t* p = ReadSleb(bytes.data(), end, &out.value);
  if (p != nullptr) out.used = p - bytes.data();
  return out;
}

long Skipped(const std::vector<uint8_t>& bytes) {
  const uint8_t* p = SkipLeb(bytes.data(), bytes.data() + bytes.size());
  return p == nullptr ? -1 : p - bytes.data();
}

std::vector<uint8_t> Padded(uint8_t first, size_t continuation_bytes, uint8_t last) {
  std::vector<uint8_t> bytes{first};
  bytes.insert(bytes.end(), continuation_bytes, 0x80);
  bytes.push_back(last);
  return bytes;
}

TEST(Leb128Test, UnsignedValues) {
  EXPECT_EQ(U({0x00}).value, 0u);
  EXPECT_EQ(U({0x7f}).value, 127u);
  EXPECT_EQ(U({0x80, 0x01}).value, 128u);
  EXPECT_EQ(U({0xe5, 0x8e, 0x26}).value, 624485u);  // DWARF 5, 7.6's example
  EXPECT_EQ(U({0xe5, 0x8e, 0x26}).used, 3);
  const std::vector<uint8_t> max{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  EXPECT_EQ(U(max).value, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(U(max).used, 10);
  // Only the first value is read.
  EXPECT_EQ(U({0x02, 0x03}).value, 2u);
  EXPECT_EQ(U({0x02, 0x03}).used, 1);
}

TEST(Leb128Test, SignedValues) {
  EXPECT_EQ(S({0x00}).value, 0);
  EXPECT_EQ(S({0x3f}).value, 63);
  EXPECT_EQ(S({0x40}).value, -64);
  EXPECT_EQ(S({0x7f}).value, -1);
  EXPECT_EQ(S({0xc0, 0x00}).value, 64);
  EXPECT_EQ(S({0xff, 0x7e}).value, -129);
  EXPECT_EQ(S({0xc0, 0xbb, 0x78}).value, -123456);
  EXPECT_EQ(S({0xc0, 0xbb, 0x78}).used, 3);
  const std::vector<uint8_t> min{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
  EXPECT_EQ(S(min).value, std::numeric_limits<int64_t>::min());
  const std::vector<uint8_t> max{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
  EXPECT_EQ(S(max).value, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(S(max).used, 10);
}

// Encodings longer than their value needs (producers pad fields to a fixed width) are read to
// their last byte, however long.
TEST(Leb128Test, OverlongEncodingsAreReadWhole) {
  EXPECT_EQ(U({0x80, 0x80, 0x80, 0x00}).value, 0u);
  EXPECT_EQ(U({0x80, 0x80, 0x80, 0x00}).used, 4);
  EXPECT_EQ(U({0x81, 0x80, 0x80, 0x00}).value, 1u);
  EXPECT_EQ(U(Padded(0x85, 20, 0x00)).value, 5u);
  EXPECT_EQ(U(Padded(0x85, 20, 0x00)).used, 22);
  EXPECT_EQ(S({0xff, 0xff, 0x7f}).value, -1);
  EXPECT_EQ(S({0xff, 0xff, 0x7f}).used, 3);
  EXPECT_EQ(S({0x80, 0x80, 0x00}).value, 0);
  EXPECT_EQ(S(Padded(0x83, 20, 0x00)).value, 3);
  EXPECT_EQ(S(Padded(0x83, 20, 0x00)).used, 22);
  EXPECT_EQ(Skipped(Padded(0x85, 20, 0x00)), 22);
}

// Value bits past the 64th do not fit the result: they are dropped, and the whole encoding is
// still consumed (the reader stays in step with what follows).
TEST(Leb128Test, BitsBeyond64AreDropped) {
  const std::vector<uint8_t> big{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  EXPECT_EQ(U(big).value, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(U(big).used, 10);
  std::vector<uint8_t> huge(10, 0x80);
  huge.push_back(0x7f);  // bits 70..76 only
  EXPECT_EQ(U(huge).value, 0u);
  EXPECT_EQ(U(huge).used, 11);
  EXPECT_EQ(S(huge).value, 0);
  EXPECT_EQ(S(huge).used, 11);
}

TEST(Leb128Test, TruncatedInputIsRefused) {
  for (const std::vector<uint8_t>& bytes : std::initializer_list<std::vector<uint8_t>>{
           {},
           {0x80},
           {0xe5, 0x8e},
           {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
           Padded(0x80, 30, 0x80)}) {
    EXPECT_EQ(U(bytes).used, -1) << bytes.size() << " bytes";
    EXPECT_EQ(S(bytes).used, -1) << bytes.size() << " bytes";
    EXPECT_EQ(Skipped(bytes), -1) << bytes.size() << " bytes";
  }
  // The bound is `end`, not the terminator beyond it.
  const std::vector<uint8_t> bytes{0x80, 0x01};
  uint64_t u = 0;
  int64_t s = 0;
  EXPECT_EQ(ReadUleb(bytes.data(), bytes.data() + 1, &u), nullptr);
  EXPECT_EQ(ReadSleb(bytes.data(), bytes.data() + 1, &s), nullptr);
  EXPECT_EQ(SkipLeb(bytes.data(), bytes.data() + 1), nullptr);
}

// Every value the index writer encodes (internal/index_tables.h) decodes to itself, using
// exactly the bytes written; SkipLeb steps over the same bytes.
TEST(Leb128Test, DecodesWhatTheIndexWriterEncodes) {
  std::vector<uint64_t> unsigned_values{0, std::numeric_limits<uint64_t>::max()};
  std::vector<int64_t> signed_values{0, -1, std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max()};
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t v = uint64_t{1} << bit;
    for (uint64_t x : {v - 1, v, v + 1}) {
      unsigned_values.push_back(x);
      signed_values.push_back(static_cast<int64_t>(x));
      signed_values.push_back(-static_cast<int64_t>(x & 0x7fffffffffffffffu));
    }
  }
  for (uint64_t v : unsigned_values) {
    std::string bytes;
    internal::PutUleb(&bytes, v);
    const std::vector<uint8_t> encoded(bytes.begin(), bytes.end());
    EXPECT_EQ(U(encoded).value, v);
    EXPECT_EQ(U(encoded).used, static_cast<long>(encoded.size())) << v;
    EXPECT_EQ(Skipped(encoded), static_cast<long>(encoded.size())) << v;
  }
  for (int64_t v : signed_values) {
    std::string bytes;
    internal::PutSleb(&bytes, v);
    const std::vector<uint8_t> encoded(bytes.begin(), bytes.end());
    EXPECT_EQ(S(encoded).value, v);
    EXPECT_EQ(S(encoded).used, static_cast<long>(encoded.size())) << v;
    EXPECT_EQ(Skipped(encoded), static_cast<long>(encoded.size())) << v;
  }
}

}  // namespace
}  // namespace hangwatch::symbols
