// Corrupt and hostile GGUF files: each must give an ember::Error whose message
// names the file, the field and the byte offset of the defect; none may crash
// or allocate what the file cannot back.
#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "util/error.h"

namespace ember::gguf {
namespace {

using test::Bytes;
namespace vt = test;

constexpr uint64_t kHuge = 0xFFFFFFFFFFFFFFFFull;

// Parses a private copy of exactly the given bytes (so a read past the end is
// an address-sanitizer error, not a silent read of the next vector element)
// and returns the error text, or "" when parsing succeeded.
std::string parse_error(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  try {
    Reader::from_memory(copy.get(), bytes.size(), "x.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects "x.gguf: <field> at byte <at>: ...<problem>...".
void expect_error(const Bytes& f, const std::string& field, size_t at, const std::string& problem) {
  const std::string msg = parse_error(f.b);
  ASSERT_FALSE(msg.empty()) << "parsed without error; expected " << field;
  const std::string prefix = "x.gguf: " + field + " at byte " + std::to_string(at) + ": ";
  EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "message: " << msg << "\nexpected prefix: " << prefix;
  EXPECT_NE(msg.find(problem), std::string::npos) << "message: " << msg << "\nexpected to contain: " << problem;
}

// A small valid file: a few kinds of metadata and two tensors; the file ends
// exactly at the end of the last tensor's data.
Bytes small_valid_file() {
  Bytes f;
  f.header(3, 2, 4);
  f.key("general.architecture", vt::STRING).str("toy");
  f.key("toy.block_count", vt::U32).u32(2);
  f.key("toy.flag", vt::BOOL).u8(1);
  f.key("tokens", vt::ARRAY).u32(vt::STRING).u64(2).str("ab").str("c");
  f.tensor("w", {2, 2}, 0, 0);
  f.tensor("v", {3}, 1 /*F16*/, 32);
  f.pad_to(32);
  for (int k = 0; k < 4; ++k) f.put<float>(float(k));
  f.pad_to(32);
  for (int k = 0; k < 3; ++k) f.put<uint16_t>(0x3c00);
  return f;
}

TEST(GgufBadInput, SmallValidFileParses) { EXPECT_EQ(parse_error(small_valid_file().b), ""); }

TEST(GgufBadInput, EveryTruncationErrorsCleanly) {
  const Bytes f = small_valid_file();
  for (size_t n = 0; n < f.b.size(); ++n) {
    const std::vector<uint8_t> cut(f.b.begin(), f.b.begin() + n);
    const std::string msg = parse_error(cut);
    EXPECT_FALSE(msg.empty()) << "a file cut to " << n << " bytes parsed";
    EXPECT_EQ(msg.rfind("x.gguf: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(" at byte "), std::string::npos) << msg;
  }
}

TEST(GgufBadInput, EveryByteSetToFFNeverCrashes) {
  const Bytes f = small_valid_file();
  for (size_t k = 0; k < f.b.size(); ++k) {
    std::vector<uint8_t> bad = f.b;
    bad[k] = 0xFF;
    parse_error(bad);  // may parse (a data byte) or fail; must not crash
  }
}

TEST(GgufBadInput, EmptyAndTinyFiles) {
  expect_error(Bytes{}, "magic", 0, "0 bytes, too short");
  Bytes f;
  f.raw("GG");
  expect_error(f, "magic", 0, "too short");
}

TEST(GgufBadInput, WrongMagic) {
  Bytes f;
  f.raw("GGML").u32(3).u64(0).u64(0);
  expect_error(f, "magic", 0, "not a GGUF file");
}

TEST(GgufBadInput, UnsupportedVersions) {
  Bytes v1;
  v1.raw("GGUF").u32(1).u32(0).u32(0);
  expect_error(v1, "version", 4, "version 1 (32-bit counts) is not supported");
  Bytes v4;
  v4.header(4, 0, 0);
  expect_error(v4, "version", 4, "unsupported version 4");
  Bytes big_endian;
  big_endian.header(0x03000000u, 0, 0);
  expect_error(big_endian, "version", 4, "big-endian");
}

TEST(GgufBadInput, AbsurdCounts) {
  Bytes tensors;
  tensors.header(3, uint64_t(1) << 60, 0);
  expect_error(tensors, "tensor count", 8, "1152921504606846976 tensors cannot fit");
  Bytes kvs;
  kvs.header(3, 0, kHuge);
  expect_error(kvs, "metadata kv count", 16, "key/value pairs cannot fit");
}

TEST(GgufBadInput, AbsurdKeyLength) {
  Bytes f;
  f.header(3, 0, 1).u64(kHuge).zeros(50);
  expect_error(f, "metadata key #0 string length", 24, "18446744073709551615 exceeds remaining 50 bytes");
}

TEST(GgufBadInput, AbsurdStringValueLength) {
  Bytes f;
  f.header(3, 0, 1).key("name", vt::STRING);
  const size_t at = f.pos();
  f.u64(1000).raw("short");
  expect_error(f, "metadata 'name' string length", at, "1000 exceeds remaining 5 bytes");
}

TEST(GgufBadInput, AbsurdArrayLengths) {
  Bytes strings;
  strings.header(3, 0, 1).key("tokens", vt::ARRAY).u32(vt::STRING);
  size_t at = strings.pos();
  strings.u64(uint64_t(1) << 40).zeros(64);
  expect_error(strings, "metadata 'tokens' array length", at, "exceed the remaining 64 bytes");

  // 10 u64 elements need 80 bytes; only 20 remain, although 10 bytes would not.
  Bytes wide;
  wide.header(3, 0, 1).key("ids", vt::ARRAY).u32(vt::U64);
  at = wide.pos();
  wide.u64(10).zeros(20);
  expect_error(wide, "metadata 'ids' array length", at, "at least 8 bytes each");

  // An array of arrays: each element needs at least 12 bytes.
  Bytes nested;
  nested.header(3, 0, 1).key("n", vt::ARRAY).u32(vt::ARRAY);
  at = nested.pos();
  nested.u64(5).zeros(40);
  expect_error(nested, "metadata 'n' array length", at, "at least 12 bytes each");
}

TEST(GgufBadInput, BadStringInsideArrayNamesElement) {
  Bytes f;
  f.header(3, 0, 1).key("tokens", vt::ARRAY).u32(vt::STRING).u64(2).str("ok");
  const size_t at = f.pos();
  f.u64(99).raw("abc");
  expect_error(f, "metadata 'tokens' element #1 string length", at, "99 exceeds remaining");
}

TEST(GgufBadInput, UnknownValueTypes) {
  Bytes f;
  f.header(3, 0, 2).key("ok", vt::U8).u8(1).str("bad");
  const size_t at = f.pos();
  f.u32(13).u64(0);
  expect_error(f, "metadata 'bad' value type", at, "unknown value type 13");

  Bytes elem;
  elem.header(3, 0, 1).key("arr", vt::ARRAY);
  const size_t eat = elem.pos();
  elem.u32(99).u64(0);
  expect_error(elem, "metadata 'arr' array element type", eat, "unknown value type 99");
}

TEST(GgufBadInput, BoolOtherThanZeroOrOne) {
  Bytes f;
  f.header(3, 0, 1).key("b", vt::BOOL);
  const size_t at = f.pos();
  f.u8(2);
  expect_error(f, "metadata 'b'", at, "bool value 2");
}

TEST(GgufBadInput, ArraysNestedTooDeep) {
  Bytes f;
  f.header(3, 0, 1).key("deep", vt::ARRAY);
  for (int k = 0; k < 40; ++k) f.u32(vt::ARRAY).u64(1);
  f.u32(vt::U8).u64(0);
  const std::string msg = parse_error(f.b);
  EXPECT_NE(msg.find("nested more than"), std::string::npos) << msg;
}

TEST(GgufBadInput, DuplicateKey) {
  Bytes f;
  f.header(3, 0, 2).key("k", vt::U8).u8(1);
  const size_t at = f.pos();
  f.key("k", vt::U8).u8(2);
  expect_error(f, "metadata key #1", at, "duplicate key 'k'");
}

TEST(GgufBadInput, BadAlignment) {
  for (uint32_t a : {0u, 48u, 3u}) {
    Bytes f;
    f.header(3, 0, 1).key("general.alignment", vt::U32);
    const size_t at = f.pos();
    f.u32(a);
    expect_error(f, "metadata 'general.alignment'", at, "not a power of two");
  }
  Bytes s;
  s.header(3, 0, 1).key("general.alignment", vt::STRING);
  const size_t at = s.pos();
  s.str("32");
  expect_error(s, "metadata 'general.alignment'", at, "has type string");
}

// One tensor info `w` with the given fields, then an aligned data section of
// `data_bytes` zero bytes. Returns the byte positions of the info's fields.
struct OneTensor {
  Bytes f;
  size_t name_at, dims_at, ne_at, type_at, offset_at, data_at;
};
OneTensor one_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset, size_t data_bytes) {
  OneTensor t;
  t.f.header(3, 1, 0);
  t.name_at = t.f.pos();
  t.f.str("w");
  t.dims_at = t.f.pos();
  t.f.u32(uint32_t(ne.size()));
  t.ne_at = t.f.pos();
  for (uint64_t d : ne) t.f.u64(d);
  t.type_at = t.f.pos();
  t.f.u32(type);
  t.offset_at = t.f.pos();
  t.f.u64(offset);
  t.f.pad_to(32);
  t.data_at = t.f.pos();
  t.f.zeros(data_bytes);
  return t;
}

TEST(GgufBadInput, OneTensorBaselineParses) {
  EXPECT_EQ(parse_error(one_tensor({4, 2}, 0, 0, 32).f.b), "");
}

TEST(GgufBadInput, TensorDataPastEndOfFile) {
  const OneTensor t = one_tensor({4, 2}, 0, 0, 31);  // needs 32 bytes
  expect_error(t.f, "tensor 'w' data", t.data_at, "32 bytes extend past end of file (size " +
                                                      std::to_string(t.f.b.size()) + ")");
}

TEST(GgufBadInput, TensorOffsetPastEndOfFile) {
  const OneTensor t = one_tensor({4}, 0, 1 << 20, 16);
  expect_error(t.f, "tensor 'w' data", t.offset_at, "starts past end of file");
  const OneTensor huge = one_tensor({4}, 0, 0xFFFFFFFFFFFFFFE0ull, 16);  // aligned, and would wrap around
  expect_error(huge.f, "tensor 'w' data", huge.offset_at, "starts past end of file");
}

TEST(GgufBadInput, MisalignedOffset) {
  const OneTensor t = one_tensor({4}, 0, 4, 64);
  expect_error(t.f, "tensor 'w' offset", t.offset_at, "offset 4 is not a multiple of the alignment 32");
}

TEST(GgufBadInput, UnknownTensorType) {
  for (uint32_t type : {4u, 5u, 31u, 1000u}) {
    const OneTensor t = one_tensor({4}, type, 0, 64);
    expect_error(t.f, "tensor 'w' type", t.type_at, "unknown tensor type id " + std::to_string(type));
  }
}

TEST(GgufBadInput, DimensionCounts) {
  const OneTensor five = one_tensor({1, 1, 1, 1, 1}, 0, 0, 64);
  expect_error(five.f, "tensor 'w' dimension count", five.dims_at, "5 dimensions");
  const OneTensor none = one_tensor({}, 0, 0, 64);
  expect_error(none.f, "tensor 'w' dimension count", none.dims_at, "0 dimensions");
}

TEST(GgufBadInput, ShapeProductOverflow) {
  const OneTensor t = one_tensor({uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0, 64);
  expect_error(t.f, "tensor 'w' ne[1]", t.ne_at + 8, "overflows");
  // A zero dimension must not hide an overflowing product of the others.
  const OneTensor z = one_tensor({0, uint64_t(1) << 40, uint64_t(1) << 40}, 0, 0, 64);
  expect_error(z.f, "tensor 'w' ne[2]", z.ne_at + 16, "overflows");
  const OneTensor neg = one_tensor({kHuge}, 0, 0, 64);
  expect_error(neg.f, "tensor 'w' ne[0]", neg.ne_at, "negative or too large");
}

TEST(GgufBadInput, TensorLargerThanFile) {
  const OneTensor t = one_tensor({uint64_t(1) << 40}, 0, 0, 64);
  expect_error(t.f, "tensor 'w' type", t.type_at, "larger than the whole file");
}

TEST(GgufBadInput, RowLengthNotMultipleOfBlock) {
  const OneTensor t = one_tensor({100, 2}, 12 /*Q4_K*/, 0, 1024);
  expect_error(t.f, "tensor 'w' ne[0]", t.ne_at, "row length 100 is not a multiple of the Q4_K block size 256");
}

TEST(GgufBadInput, DuplicateTensorName) {
  Bytes f;
  f.header(3, 2, 0).tensor("w", {4}, 0, 0);
  const size_t at = f.pos();
  f.tensor("w", {4}, 0, 32);
  f.pad_to(32).zeros(64);
  expect_error(f, "tensor #1 name", at, "duplicate tensor name 'w'");
}

TEST(GgufBadInput, OverlappingTensorData) {
  Bytes f;
  f.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32);  // a spans 64 bytes
  f.pad_to(32);
  const size_t data_at = f.pos();
  f.zeros(128);
  expect_error(f, "tensor 'b' data", data_at + 32, "overlaps tensor 'a'");
}

TEST(GgufBadInput, TruncatedTensorInfoNamesField) {
  Bytes f;
  // The name is long enough that the tensor count alone passes its check.
  f.header(3, 1, 0).str("wwwwwwwwwwww").u32(2).u64(4);
  const size_t at = f.pos();
  f.u32(0);  // half of ne[1]
  expect_error(f, "tensor 'wwwwwwwwwwww' ne[1]", at, "needs 8 bytes but only 4 remain");
}

}  // namespace
}  // namespace ember::gguf
