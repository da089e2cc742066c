// Independent check against files written by another tool: the same tiny
// model quantised by llama.cpp into several formats. Every tensor of each
// quantised file is dequantised and compared with the same tensor of the F32
// file. A wrong block layout gives errors near 1.0; the per-type bounds are
// what a correct dequantiser shows for that many bits on these weights.
//
// The tensors are found with a minimal GGUF walk kept inside this test (the
// real reader lives in src/gguf and is tested there).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <map>
#include <string>

#include "quant/quant.h"
#include "test_util.h"

namespace ember::quant {
namespace {

struct Tensor {
  GgmlType type;
  int64_t n = 1;
  uint64_t offset;
};
struct File {
  std::vector<uint8_t> bytes;
  std::map<std::string, Tensor> tensors;
  size_t data = 0;
};

File load(const std::string& path) {
  File f;
  std::ifstream in(path, std::ios::binary);
  if (!in) return f;
  f.bytes.assign(std::istreambuf_iterator<char>(in), {});
  size_t pos = 0;
  auto need = [&](size_t n) {
    if (pos + n > f.bytes.size()) throw std::runtime_error(path + ": truncated");
  };
  auto u32 = [&] { need(4); uint32_t v; std::memcpy(&v, &f.bytes[pos], 4); pos += 4; return v; };
  auto u64 = [&] { need(8); uint64_t v; std::memcpy(&v, &f.bytes[pos], 8); pos += 8; return v; };
  auto str = [&] { const uint64_t n = u64(); need(n); std::string s(reinterpret_cast<char*>(&f.bytes[pos]), n); pos += n; return s; };
  const size_t scalar_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  std::function<void(uint32_t)> skip = [&](uint32_t type) {
    if (type == 8) { str(); return; }
    if (type == 9) {
      const uint32_t et = u32();
      const uint64_t n = u64();
      for (uint64_t i = 0; i < n; ++i) skip(et);
      return;
    }
    if (type > 12) throw std::runtime_error(path + ": bad value type");
    need(scalar_size[type]);
    pos += scalar_size[type];
  };
  if (u32() != 0x46554747) throw std::runtime_error(path + ": not GGUF");
  u32();  // version
  const uint64_t n_tensors = u64(), n_kv = u64();
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = str();
    const uint32_t type = u32();
    if (key == "general.alignment" && type == 4) alignment = u32();
    else skip(type);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const std::string name = str();
    Tensor t;
    const uint32_t dims = u32();
    for (uint32_t d = 0; d < dims; ++d) t.n *= int64_t(u64());
    t.type = static_cast<GgmlType>(u32());
    t.offset = u64();
    f.tensors[name] = t;
  }
  f.data = (pos + alignment - 1) / alignment * alignment;
  return f;
}

std::vector<float> dequant(const File& f, const Tensor& t) {
  std::vector<float> y(size_t(t.n));
  const size_t nbytes = row_bytes(t.type, t.n);
  if (f.data + t.offset + nbytes > f.bytes.size()) throw std::runtime_error("tensor past end of file");
  dequantize_row(t.type, f.bytes.data() + f.data + t.offset, y.data(), t.n);
  return y;
}

double bound_for(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1e-3;
    case GgmlType::BF16: return 5e-3;
    case GgmlType::Q8_0: return 0.01;
    case GgmlType::Q6_K: return 0.03;
    case GgmlType::Q5_K: case GgmlType::Q5_0: case GgmlType::Q5_1: return 0.06;
    case GgmlType::Q4_K: case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: return 0.13;
    case GgmlType::Q3_K: return 0.25;
    case GgmlType::Q2_K: return 0.45;
    default: return 0.5;
  }
}

const std::string kDir = std::string(EMBER_SHARED_DIR) + "/testdata/peer-gguf-qwen3/";

class PeerFile : public ::testing::TestWithParam<const char*> {};

TEST_P(PeerFile, EveryTensorMatchesTheF32File) {
  static const File ref = load(kDir + "qwen3-tiny-F32.gguf");
  ASSERT_FALSE(ref.tensors.empty()) << "missing " << kDir << "qwen3-tiny-F32.gguf";
  const File f = load(kDir + "qwen3-tiny-" + GetParam() + ".gguf");
  ASSERT_FALSE(f.tensors.empty());
  ASSERT_EQ(f.tensors.size(), ref.tensors.size());
  std::map<std::string, int> seen;
  for (const auto& [name, t] : f.tensors) {
    const auto it = ref.tensors.find(name);
    ASSERT_NE(it, ref.tensors.end()) << name;
    ASSERT_EQ(it->second.type, GgmlType::F32);
    ASSERT_EQ(t.n, it->second.n) << name;
    const auto want = dequant(ref, it->second);
    const auto got = dequant(f, t);
    const double err = test::rel_rms(got.data(), want.data(), want.size());
    EXPECT_LE(err, bound_for(t.type)) << GetParam() << " " << name << " (" << type_name(t.type) << ")";
    ++seen[type_name(t.type)];
  }
  std::string types;
  for (const auto& [n, c] : seen) types += n + "x" + std::to_string(c) + " ";
  RecordProperty("types", types);
  std::printf("  %s: %s\n", GetParam(), types.c_str());
}

INSTANTIATE_TEST_SUITE_P(Llamacpp, PeerFile,
                         ::testing::Values("F16", "BF16", "Q8_0", "Q4_0", "Q5_1", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K",
                                           "IQ4_XS"));

}  // namespace
}  // namespace ember::quant
