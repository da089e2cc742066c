// The reader against files assembled byte by byte from the format description.
#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "util/error.h"

namespace ember::gguf {
namespace {

using test::Bytes;
namespace vt = test;

// One key of every scalar type, a string, a flat array and a nested array.
Bytes every_value_type(uint32_t version) {
  Bytes f;
  f.header(version, 0, 15);
  f.key("u8", vt::U8).u8(200);
  f.key("i8", vt::I8).put<int8_t>(-100);
  f.key("u16", vt::U16).put<uint16_t>(65000);
  f.key("i16", vt::I16).put<int16_t>(-32000);
  f.key("u32", vt::U32).u32(4000000000u);
  f.key("i32", vt::I32).put<int32_t>(-2000000000);
  f.key("f32", vt::F32).put<float>(1.5f);
  f.key("bool.t", vt::BOOL).u8(1);
  f.key("bool.f", vt::BOOL).u8(0);
  f.key("str", vt::STRING).str("héllo\nworld");
  f.key("u64", vt::U64).u64(18000000000000000000ull);
  f.key("i64", vt::I64).put<int64_t>(-9000000000000000000ll);
  f.key("f64", vt::F64).put<double>(-2.25e300);
  f.key("strings", vt::ARRAY).u32(vt::STRING).u64(3).str("a").str("").str("ccc");
  // [[1, 2], [], [3]] as an array of arrays of i32.
  f.key("nested", vt::ARRAY).u32(vt::ARRAY).u64(3);
  f.u32(vt::I32).u64(2).put<int32_t>(1).put<int32_t>(2);
  f.u32(vt::I32).u64(0);
  f.u32(vt::I32).u64(1).put<int32_t>(3);
  return f;
}

Reader read(const Bytes& f, const std::string& name = "test.gguf") {
  return Reader::from_memory(f.b.data(), f.b.size(), name);
}

void check_every_value_type(const Reader& r) {
  ASSERT_EQ(r.metadata().size(), 15u);
  EXPECT_EQ(r.metadata()[0].first, "u8");  // file order is kept
  EXPECT_EQ(r.find("u8")->type, ValueType::U8);
  EXPECT_EQ(r.get_int("u8"), 200);
  EXPECT_EQ(r.find("i8")->type, ValueType::I8);
  EXPECT_EQ(r.get_int("i8"), -100);
  EXPECT_EQ(r.get_int("u16"), 65000);
  EXPECT_EQ(r.get_int("i16"), -32000);
  EXPECT_EQ(r.get_int("u32"), 4000000000ll);
  EXPECT_EQ(r.get_int("i32"), -2000000000);
  EXPECT_EQ(r.find("f32")->type, ValueType::F32);
  EXPECT_EQ(r.get_float("f32"), 1.5);
  EXPECT_TRUE(r.get_bool("bool.t", false));
  EXPECT_FALSE(r.get_bool("bool.f", true));
  EXPECT_EQ(r.get_string("str"), "héllo\nworld");
  EXPECT_EQ(r.find("u64")->u, 18000000000000000000ull);
  EXPECT_THROW(r.get_int("u64"), Error);  // does not fit int64
  EXPECT_EQ(r.get_int("i64"), -9000000000000000000ll);
  EXPECT_EQ(r.get_float("f64"), -2.25e300);
  EXPECT_EQ(r.get_string_array("strings"), (std::vector<std::string>{"a", "", "ccc"}));

  const Value* nested = r.find("nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->type, ValueType::ARRAY);
  EXPECT_EQ(nested->elem_type, ValueType::ARRAY);
  ASSERT_EQ(nested->array.size(), 3u);
  EXPECT_EQ(nested->array[0].elem_type, ValueType::I32);
  ASSERT_EQ(nested->array[0].array.size(), 2u);
  EXPECT_EQ(nested->array[0].array[1].as_int(), 2);
  EXPECT_TRUE(nested->array[1].array.empty());
  EXPECT_EQ(nested->array[2].array[0].as_int(), 3);
  EXPECT_EQ(nested->to_display(), "[[1, 2], [], [3]]");
}

TEST(GgufReader, EveryValueTypeVersion3) {
  const Bytes f = every_value_type(3);
  const Reader r = read(f);
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_TRUE(r.tensors().empty());
  check_every_value_type(r);
}

TEST(GgufReader, EveryValueTypeVersion2) {
  const Bytes f = every_value_type(2);
  const Reader r = read(f);
  EXPECT_EQ(r.version(), 2u);
  check_every_value_type(r);
}

TEST(GgufReader, TypedLookupErrorsNameFileAndKey) {
  const Bytes f = every_value_type(3);
  const Reader r = read(f, "model.gguf");
  try {
    r.get_int("str");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.gguf: metadata key 'str'"), std::string::npos) << e.what();
  }
  try {
    r.get_string("no.such.key");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no.such.key' is missing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.get_int("no.such.key", 7), 7);
  EXPECT_EQ(r.get_string("no.such.key", "x"), "x");
  EXPECT_EQ(r.get_float("u8", 0.0), 200.0);  // integers convert to float
  EXPECT_THROW(r.get_string_array("nested"), Error);
  EXPECT_THROW(r.get_float_array("u8"), Error);
}

// Two tensors with a custom alignment of 64: the data section starts at the
// 64-aligned end of the tensor infos and each offset is relative to it.
TEST(GgufReader, TensorsWithCustomAlignment) {
  Bytes f;
  f.header(3, 2, 2);
  f.key("general.architecture", vt::STRING).str("toy");
  f.key("general.alignment", vt::U32).u32(64);
  f.tensor("a", {3, 2}, 0 /*F32*/, 0);
  f.tensor("b.q8", {32, 1}, 8 /*Q8_0*/, 64);  // 24 bytes of "a" padded to 64
  const size_t infos_end = f.pos();
  f.pad_to(64);
  const size_t data_start = f.pos();
  ASSERT_GT(data_start, infos_end);  // the test means to exercise padding
  for (int k = 0; k < 6; ++k) f.put<float>(float(k) + 0.5f);
  f.pad_to(64);
  for (int k = 0; k < 34; ++k) f.u8(uint8_t(k));

  const Reader r = read(f);
  EXPECT_EQ(r.alignment(), 64u);
  EXPECT_EQ(r.data_offset(), data_start);
  ASSERT_EQ(r.tensors().size(), 2u);
  const TensorInfo* a = r.find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a->type, GgmlType::F32);
  EXPECT_EQ(a->n_elements(), 6);
  EXPECT_EQ(a->rows(), 2);
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(a->data, f.b.data() + data_start);  // points into the buffer: no copy
  float v5;
  std::memcpy(&v5, a->data + 20, 4);
  EXPECT_EQ(v5, 5.5f);
  const TensorInfo* b = r.find_tensor("b.q8");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, GgmlType::Q8_0);
  EXPECT_EQ(b->nbytes, 34u);
  EXPECT_EQ(b->offset, 64u);
  EXPECT_EQ(b->data, f.b.data() + data_start + 64);
  EXPECT_EQ(b->data[33], 33);
  EXPECT_EQ(r.find_tensor("c"), nullptr);
}

TEST(GgufReader, ZeroSizeDimensionIsAccepted) {
  Bytes f;
  f.header(3, 1, 0);
  f.tensor("empty", {4, 0}, 0, 0);
  f.pad_to(32);
  const Reader r = read(f);
  EXPECT_EQ(r.tensors()[0].n_elements(), 0);
  EXPECT_EQ(r.tensors()[0].nbytes, 0u);
}

TEST(GgufReader, OpensFromDisk) {
  Bytes f = every_value_type(3);
  const std::string path = ::testing::TempDir() + "/gguf_reader_disk.gguf";
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  std::fwrite(f.b.data(), 1, f.b.size(), fp);
  std::fclose(fp);
  const Reader r = Reader::open(path);
  EXPECT_EQ(r.path(), path);
  EXPECT_EQ(r.file_size(), f.b.size());
  check_every_value_type(r);
  std::remove(path.c_str());
  EXPECT_THROW(Reader::open(path), Error);  // missing file
}

}  // namespace
}  // namespace ember::gguf
