// Files written by another engine (llama.cpp's converter and quantizer): a
// tiny qwen3 model (3 layers, hidden 256, 4 query / 2 KV heads of 64, FFN 512,
// vocabulary 3000). Read from the shared test data; skipped when absent.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gguf/gguf.h"
#include "util/fp16.h"

namespace ember::gguf {
namespace {

std::string peer_file(const std::string& type) {
  return std::string(EMBER_SHARED_DIR) + "/testdata/peer-gguf-qwen3/qwen3-tiny-" + type + ".gguf";
}

#define SKIP_IF_MISSING(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "peer test data not found: " << path

const std::vector<std::string> kTypes = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q5_1",
                                         "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"};

TEST(GgufPeerFiles, KnownFactsInEveryFile) {
  for (const std::string& type : kTypes) {
    const std::string path = peer_file(type);
    SKIP_IF_MISSING(path);
    SCOPED_TRACE(path);
    const Reader r = Reader::open(path);
    EXPECT_EQ(r.get_string("general.architecture"), "qwen3");
    EXPECT_EQ(r.get_int("qwen3.block_count"), 3);
    EXPECT_EQ(r.get_int("qwen3.embedding_length"), 256);
    EXPECT_EQ(r.get_int("qwen3.feed_forward_length"), 512);
    EXPECT_EQ(r.get_int("qwen3.attention.head_count"), 4);
    EXPECT_EQ(r.get_int("qwen3.attention.head_count_kv"), 2);
    EXPECT_EQ(r.get_float("qwen3.rope.freq_base"), 1e6);
    EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(r.get_string_array("tokenizer.ggml.tokens").size(), 3000u);
    EXPECT_EQ(r.get_int_array("tokenizer.ggml.token_type").size(), 3000u);

    // 11 tensors per layer plus token_embd, output_norm and output (untied head).
    EXPECT_EQ(r.tensors().size(), 3u * 11 + 3);
    const TensorInfo* q = r.find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->ne, (std::vector<int64_t>{256, 256}));
    EXPECT_EQ(r.find_tensor("blk.2.attn_k.weight")->ne, (std::vector<int64_t>{256, 128}));
    EXPECT_EQ(r.find_tensor("blk.1.ffn_down.weight")->ne, (std::vector<int64_t>{512, 256}));
    EXPECT_EQ(r.find_tensor("blk.0.attn_q_norm.weight")->ne, (std::vector<int64_t>{64}));
    EXPECT_EQ(r.find_tensor("token_embd.weight")->ne, (std::vector<int64_t>{256, 3000}));
    EXPECT_EQ(r.find_tensor("output_norm.weight")->type, GgmlType::F32);  // norms stay F32

    // The tensors tile the data section: the last one ends within one
    // alignment unit of the end of the file.
    uint64_t end = 0;
    for (const TensorInfo& t : r.tensors()) end = std::max<uint64_t>(end, r.data_offset() + t.offset + t.nbytes);
    EXPECT_LE(end, r.file_size());
    EXPECT_GT(end + r.alignment(), r.file_size());
  }
}

TEST(GgufPeerFiles, QuantizerTypeMixes) {
  const std::string path = peer_file("Q4_K_M");
  SKIP_IF_MISSING(path);
  const Reader r = Reader::open(path);
  EXPECT_EQ(r.find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q4_K);
  EXPECT_EQ(r.find_tensor("output.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(r.find_tensor("blk.0.attn_q.weight")->nbytes, 256u / 256 * 144 * 256);
}

// The F16 file holds the F32 file's weights rounded to half precision, so
// reading the same tensor from both checks every data pointer independently.
TEST(GgufPeerFiles, F16DataMatchesF32Data) {
  const std::string p32 = peer_file("F32"), p16 = peer_file("F16");
  SKIP_IF_MISSING(p32);
  SKIP_IF_MISSING(p16);
  const Reader r32 = Reader::open(p32), r16 = Reader::open(p16);
  int compared = 0;
  for (const TensorInfo& a : r32.tensors()) {
    const TensorInfo* b = r16.find_tensor(a.name);
    ASSERT_NE(b, nullptr) << a.name;
    ASSERT_EQ(a.type, GgmlType::F32);
    ASSERT_EQ(a.ne, b->ne) << a.name;
    if (b->type != GgmlType::F16) continue;
    ++compared;
    float max_abs = 0;
    for (int64_t k = 0; k < a.n_elements(); ++k) {
      float x;
      uint16_t h;
      std::memcpy(&x, a.data + 4 * k, 4);
      std::memcpy(&h, b->data + 2 * k, 2);
      ASSERT_LE(std::fabs(fp16_to_f32(h) - x), 1e-3f * std::fabs(x) + 1e-7f) << a.name << " element " << k;
      max_abs = std::max(max_abs, std::fabs(x));
    }
    EXPECT_GT(max_abs, 0.0f) << a.name << " is all zeros: probably the wrong bytes";
  }
  EXPECT_GE(compared, 3 * 7 + 2);  // every matrix
}

}  // namespace
}  // namespace ember::gguf
