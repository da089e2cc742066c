// safetensors files assembled byte by byte (8-byte little-endian header length,
// JSON header, data), single and sharded folders, and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "safetensors/safetensors.h"
#include "util/error.h"

namespace ember::safetensors {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> st_file(const std::string& json, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b;
  b.reserve(8 + json.size() + data.size());
  const uint64_t n = json.size();
  for (int k = 0; k < 8; ++k) b.push_back(uint8_t(n >> (8 * k)));
  for (char c : json) b.push_back(uint8_t(c));
  for (uint8_t d : data) b.push_back(d);
  return b;
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Parses a private copy of exactly these bytes; returns the error text or "".
std::string parse_error(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  try {
    Folder::from_memory(copy.get(), bytes.size(), "m.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& prefix, const std::string& problem) {
  const std::string msg = parse_error(bytes);
  ASSERT_FALSE(msg.empty()) << "parsed without error; expected " << prefix;
  EXPECT_EQ(msg.rfind("m.safetensors: " + prefix, 0), 0u) << "message: " << msg << "\nexpected prefix: " << prefix;
  EXPECT_NE(msg.find(problem), std::string::npos) << "message: " << msg << "\nexpected to contain: " << problem;
}

// F32 [2, 3] then BF16 [4]: 24 + 8 = 32 data bytes; header padded with spaces
// as the reference writer does.
std::vector<uint8_t> two_tensors() {
  std::vector<uint8_t> data = float_bytes({1, 2, 3, 4, 5, 6});
  for (uint16_t h : {0x3f80, 0x4000, 0xbf80, 0x0000}) {  // bf16 1, 2, -1, 0
    data.push_back(uint8_t(h));
    data.push_back(uint8_t(h >> 8));
  }
  return st_file(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},)"
      R"("a.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}    )",
      data);
}

TEST(Safetensors, ReadsHandBuiltFile) {
  const std::vector<uint8_t> f = two_tensors();
  const Folder st = Folder::from_memory(f.data(), f.size(), "m.safetensors");
  ASSERT_EQ(st.tensors().size(), 2u);
  EXPECT_EQ(st.tensors()[0].name, "a.weight");  // in data order
  const Tensor* a = st.find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, "F32");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->n_elements(), 6);
  EXPECT_EQ(a->nbytes, 24u);
  const size_t data_start = f.size() - 32;
  EXPECT_EQ(a->data, f.data() + data_start);  // no copy
  float last;
  std::memcpy(&last, a->data + 20, 4);
  EXPECT_EQ(last, 6.0f);
  const Tensor* b = st.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, "BF16");
  EXPECT_EQ(b->data, f.data() + data_start + 24);
  EXPECT_EQ(b->data[4], 0x80);
  EXPECT_EQ(b->data[5], 0xbf);
  EXPECT_EQ(st.find("c"), nullptr);
  EXPECT_EQ(st.metadata().at("format"), "pt");
}

TEST(Safetensors, ScalarAndEmptyTensors) {
  const auto f = st_file(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"I32","shape":[0,3],"data_offsets":[8,8]}})",
                         std::vector<uint8_t>(8, 0));
  const Folder st = Folder::from_memory(f.data(), f.size(), "m.safetensors");
  EXPECT_EQ(st.find("s")->n_elements(), 1);
  EXPECT_EQ(st.find("e")->nbytes, 0u);
  EXPECT_EQ(dtype_size("BF16"), 2u);
  EXPECT_EQ(dtype_size("I64"), 8u);
  EXPECT_EQ(dtype_size("F33"), 0u);
}

TEST(Safetensors, EveryTruncationErrorsCleanly) {
  const auto f = two_tensors();
  for (size_t n = 0; n < f.size(); ++n) {
    const std::string msg = parse_error(std::vector<uint8_t>(f.begin(), f.begin() + n));
    EXPECT_FALSE(msg.empty()) << "cut to " << n << " bytes parsed";
    EXPECT_NE(msg.find(" at byte "), std::string::npos) << msg;
  }
}

TEST(Safetensors, EveryByteSetToFFNeverCrashes) {
  const auto f = two_tensors();
  for (size_t k = 0; k < f.size(); ++k) {
    auto bad = f;
    bad[k] = 0xFF;
    parse_error(bad);
  }
}

TEST(SafetensorsBadInput, HeaderLength) {
  expect_error({1, 2, 3}, "header length at byte 0", "too short");
  auto huge = two_tensors();
  for (int k = 0; k < 8; ++k) huge[k] = 0xFF;
  expect_error(huge, "header length at byte 0", "18446744073709551615 exceeds the remaining");
  expect_error(st_file("[]", {}), "header at byte 8", "does not start with '{'");
}

TEST(SafetensorsBadInput, InvalidJsonNamesByte) {
  // The error is at the 7th character of the JSON text: byte 8 + 6.
  expect_error(st_file(R"({"a": x})", {}), "header at byte 14", "invalid JSON");
}

TEST(SafetensorsBadInput, BadEntries) {
  const auto data = float_bytes({1, 2});
  expect_error(st_file(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data), "tensor 'a'",
               "dtype 'F33' is unknown");
  expect_error(st_file(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", data), "tensor 'a'", "no \"shape\"");
  expect_error(st_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data), "tensor 'a'",
               "non-negative integer");
  expect_error(st_file(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data), "tensor 'a'",
               "non-negative integer");
  expect_error(st_file(R"({"a":{"dtype":"F32","shape":[2]}})", data), "tensor 'a'", "data_offsets");
  expect_error(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data), "tensor 'a'",
               "run backwards");
  expect_error(st_file(R"({"a":7})", data), "tensor 'a'", "not an object");
  expect_error(st_file(R"({"__metadata__":{"k":1}})", {}), "header '__metadata__' key 'k'", "not a string");
  expect_error(st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data),
               "tensor 'a'", "overflows");
}

TEST(SafetensorsBadInput, DataPlacement) {
  const auto data = float_bytes({1, 2, 3, 4});  // 16 bytes
  const std::string head = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)";
  const auto past = st_file(head + "[8,24]}}", data);
  expect_error(past, "tensor 'a' data at byte " + std::to_string(past.size() - 16 + 8), "extend past end of file");
  const auto mismatch = st_file(head + "[0,12]}}", data);
  expect_error(mismatch, "tensor 'a' data", "12 bytes, but F32 shape [2] needs 8");
  const auto gap = st_file(head + "[8,16]}}", data);
  expect_error(gap, "tensor 'a' data at byte " + std::to_string(gap.size() - 16), "a gap of 8 bytes");
  const auto trailing = st_file(head + "[0,8]}}", data);
  expect_error(trailing, "data section at byte " + std::to_string(trailing.size() - 8), "8 trailing bytes");
  const auto overlap = st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                               data);
  expect_error(overlap, "tensor 'b' data at byte " + std::to_string(overlap.size() - 8), "overlaps tensor 'a'");
}

// --- folders on disk ---

class SafetensorsFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("st_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string open_error() {
    try {
      Folder::open(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  void write_shards() {
    write("model-00001-of-00002.safetensors",
          st_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", float_bytes({1, 2})));
    write("model-00002-of-00002.safetensors",
          st_file(R"({"y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", float_bytes({3})));
  }
  fs::path dir_;
};

TEST_F(SafetensorsFolder, SingleFileByFolderAndByPath) {
  write("model.safetensors", two_tensors());
  const Folder by_dir = Folder::open(dir_.string());
  EXPECT_EQ(by_dir.tensors().size(), 2u);
  EXPECT_EQ(by_dir.find("a.weight")->shape, (std::vector<int64_t>{2, 3}));
  const Folder by_file = Folder::open((dir_ / "model.safetensors").string());
  float v;
  std::memcpy(&v, by_file.find("a.weight")->data + 4, 4);
  EXPECT_EQ(v, 2.0f);
}

TEST_F(SafetensorsFolder, EmptyFolder) { EXPECT_NE(open_error().find("neither"), std::string::npos); }

TEST_F(SafetensorsFolder, Sharded) {
  write_shards();
  write("model.safetensors.index.json",
        R"({"metadata":{"total_size":12},"weight_map":{"x":"model-00001-of-00002.safetensors",)"
        R"("y":"model-00002-of-00002.safetensors"}})");
  Folder st = Folder::open(dir_.string());
  ASSERT_EQ(st.tensors().size(), 2u);
  float y;
  std::memcpy(&y, st.find("y")->data, 4);
  EXPECT_EQ(y, 3.0f);
  EXPECT_EQ(fs::path(st.find("x")->file).filename(), "model-00001-of-00002.safetensors");
  // Moving the folder keeps the mappings (and so the data pointers) alive.
  const Folder moved = std::move(st);
  std::memcpy(&y, moved.find("y")->data, 4);
  EXPECT_EQ(y, 3.0f);
}

TEST_F(SafetensorsFolder, ShardedIndexDisagreesWithShards) {
  write_shards();
  write("model.safetensors.index.json",
        R"({"weight_map":{"x":"model-00002-of-00002.safetensors","y":"model-00002-of-00002.safetensors"}})");
  EXPECT_NE(open_error().find("which does not hold it"), std::string::npos) << open_error();
}

TEST_F(SafetensorsFolder, ShardedBadIndex) {
  write_shards();
  write("model.safetensors.index.json", R"({"weight_map":{"x":"../escape.safetensors"}})");
  EXPECT_NE(open_error().find("not a file name in this folder"), std::string::npos) << open_error();
  write("model.safetensors.index.json", R"({"weight_map":{"x":"missing.safetensors"}})");
  EXPECT_NE(open_error().find("missing.safetensors: cannot open"), std::string::npos) << open_error();
  write("model.safetensors.index.json", R"({"weight_map":)");
  EXPECT_NE(open_error().find("invalid JSON"), std::string::npos) << open_error();
  write("model.safetensors.index.json", R"({"other":{}})");
  EXPECT_NE(open_error().find("no \"weight_map\""), std::string::npos) << open_error();
}

TEST_F(SafetensorsFolder, SameTensorInTwoShards) {
  write("a.safetensors", st_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", float_bytes({1})));
  write("b.safetensors", st_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", float_bytes({2})));
  write("model.safetensors.index.json", R"({"weight_map":{"x":"a.safetensors","y":"b.safetensors"}})");
  EXPECT_NE(open_error().find("is also in"), std::string::npos) << open_error();
}

}  // namespace
}  // namespace ember::safetensors
