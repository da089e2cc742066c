// The writer: its bytes against a file assembled from the format description,
// then round trips through the reader, then misuse.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "util/error.h"

namespace ember::gguf {
namespace {

using test::Bytes;
namespace vt = test;

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/" + name; }

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(GgufWriter, BytesMatchTheFormat) {
  const std::string path = temp_path("writer_bytes.gguf");
  Writer w(64);
  w.set("a", Value::u32(7));
  w.set("s", Value::str("x"));
  w.set("a", Value::u32(9));  // replaces, keeping its place
  w.add_tensor("t1", {3}, GgmlType::F32);
  w.add_tensor("t2", {32}, GgmlType::Q8_0);
  w.begin(path);
  const float t1[3] = {1, 2, 3};
  uint8_t t2[34];
  for (int k = 0; k < 34; ++k) t2[k] = uint8_t(k * 7);
  w.write_tensor_data(t1, sizeof t1);
  w.write_tensor_data(t2, sizeof t2);
  w.finish();

  Bytes want;
  want.header(3, 2, 3);
  want.key("general.alignment", vt::U32).u32(64);
  want.key("a", vt::U32).u32(9);
  want.key("s", vt::STRING).str("x");
  want.tensor("t1", {3}, 0, 0);
  want.tensor("t2", {32}, 8, 64);
  want.pad_to(64);
  for (float v : t1) want.put<float>(v);
  want.pad_to(64);
  for (uint8_t v : t2) want.u8(v);
  want.pad_to(64);
  EXPECT_EQ(slurp(path), want.b);
  std::remove(path.c_str());
}

TEST(GgufWriter, RoundTripEveryValueTypeAndTensors) {
  const std::string path = temp_path("writer_roundtrip.gguf");
  Writer w;
  w.set("u8", Value::u8(255));
  w.set("i8", Value::i8(-128));
  w.set("u16", Value::u16(65535));
  w.set("i16", Value::i16(-32768));
  w.set("u32", Value::u32(4294967295u));
  w.set("i32", Value::i32(-7));
  w.set("u64", Value::u64(1ull << 63));
  w.set("i64", Value::i64(-(1ll << 62)));
  w.set("f32", Value::f32(0.1f));
  w.set("f64", Value::f64(0.1));
  w.set("bool", Value::boolean(true));
  w.set("str", Value::str(std::string("nul\0inside", 10)));
  w.set("strs", Value::str_array({"x", "yy", ""}));
  w.set("floats", Value::f32_array({1.5f, -2.0f}));
  w.set("ints", Value::i32_array({3, -4, 5}));
  w.set("nested", Value::arr(ValueType::ARRAY, {Value::str_array({"p"}), Value::str_array({}),
                                                  Value::str_array({"q", "r"})}));
  w.set("empty", Value::arr(ValueType::F64, {}));

  struct T { std::string name; std::vector<int64_t> ne; GgmlType type; };
  const std::vector<T> ts = {{"f32.2d", {5, 3}, GgmlType::F32},  {"q4k", {256, 2}, GgmlType::Q4_K},
                             {"f16.4d", {2, 1, 3, 2}, GgmlType::F16}, {"empty", {8, 0}, GgmlType::F32},
                             {"iq4", {32}, GgmlType::IQ4_NL},      {"i8", {7}, GgmlType::I8}};
  for (const T& t : ts) w.add_tensor(t.name, t.ne, t.type);
  std::vector<std::vector<uint8_t>> data;
  for (size_t k = 0; k < ts.size(); ++k) {
    int64_t n = 1;
    for (int64_t d : ts[k].ne) n *= d;
    std::vector<uint8_t> bytes(row_bytes(ts[k].type, n));
    for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = uint8_t(b * 31 + k);
    data.push_back(bytes);
  }
  w.begin(path);
  for (const auto& d : data) w.write_tensor_data(d.data(), d.size());
  w.finish();

  const Reader r = Reader::open(path);
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.get_int("u8"), 255);
  EXPECT_EQ(r.find("u8")->type, ValueType::U8);
  EXPECT_EQ(r.get_int("i8"), -128);
  EXPECT_EQ(r.get_int("u16"), 65535);
  EXPECT_EQ(r.get_int("i16"), -32768);
  EXPECT_EQ(r.get_int("u32"), 4294967295ll);
  EXPECT_EQ(r.find("u64")->u, 1ull << 63);
  EXPECT_EQ(r.get_int("i64"), -(1ll << 62));
  EXPECT_EQ(r.get_float("f32"), double(0.1f));
  EXPECT_EQ(r.get_float("f64"), 0.1);
  EXPECT_TRUE(r.get_bool("bool", false));
  EXPECT_EQ(r.get_string("str"), std::string("nul\0inside", 10));
  EXPECT_EQ(r.get_string_array("strs"), (std::vector<std::string>{"x", "yy", ""}));
  EXPECT_EQ(r.get_float_array("floats"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(r.get_int_array("ints"), (std::vector<int64_t>{3, -4, 5}));
  EXPECT_EQ(r.find("nested")->to_display(), "[[\"p\"], [], [\"q\", \"r\"]]");
  EXPECT_EQ(r.find("empty")->elem_type, ValueType::F64);
  EXPECT_TRUE(r.find("empty")->array.empty());

  ASSERT_EQ(r.tensors().size(), ts.size());
  for (size_t k = 0; k < ts.size(); ++k) {
    const TensorInfo& ti = r.tensors()[k];
    EXPECT_EQ(ti.name, ts[k].name);
    EXPECT_EQ(ti.ne, ts[k].ne);
    EXPECT_EQ(ti.type, ts[k].type);
    EXPECT_EQ(ti.offset % 32, 0u);
    ASSERT_EQ(ti.nbytes, data[k].size()) << ti.name;
    EXPECT_TRUE(ti.nbytes == 0 || std::memcmp(ti.data, data[k].data(), ti.nbytes) == 0) << ti.name;
  }
  std::remove(path.c_str());
}

TEST(GgufWriter, Misuse) {
  EXPECT_THROW(Writer(0), Error);
  EXPECT_THROW(Writer(24), Error);
  {
    Writer w(32);
    EXPECT_THROW(w.set("general.alignment", Value::u32(64)), Error);
    EXPECT_THROW(w.add_tensor("q", {100}, GgmlType::Q4_K), Error);  // row not a block multiple
    EXPECT_THROW(w.add_tensor("d", {1, 1, 1, 1, 1}, GgmlType::F32), Error);
    EXPECT_THROW(w.add_tensor("n", {-1}, GgmlType::F32), Error);
    EXPECT_THROW(w.add_tensor("u", {4}, static_cast<GgmlType>(4)), Error);
    w.add_tensor("a", {4}, GgmlType::F32);
    EXPECT_THROW(w.add_tensor("a", {4}, GgmlType::F32), Error);
    EXPECT_THROW(w.write_tensor_data(nullptr, 0), Error);  // before begin
  }
  const std::string path = temp_path("writer_misuse.gguf");
  Writer w;
  w.add_tensor("a", {4}, GgmlType::F32);
  w.add_tensor("b", {2}, GgmlType::F32);
  w.begin(path);
  EXPECT_THROW(w.set("late", Value::u8(1)), Error);
  const float four[4] = {};
  EXPECT_THROW(w.write_tensor_data(four, 12), Error);  // wrong size
  w.write_tensor_data(four, 16);
  try {
    w.finish();
    FAIL() << "finish() accepted a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 of 2 tensors"), std::string::npos) << e.what();
  }
  w.write_tensor_data(four, 8);
  EXPECT_THROW(w.write_tensor_data(four, 8), Error);  // one too many
  w.finish();
  EXPECT_EQ(Reader::open(path).tensors().size(), 2u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ember::gguf
