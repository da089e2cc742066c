// What ember_bench_engine divides its figures by (bench/engine/step_costs.h):
// on a real file, one decode step of one sequence reads exactly the bytes
// Model::weight_bytes_per_token() counts plus its keys and values; the
// expected distinct experts grow from k at one token to all of them; prefill
// FLOPs follow 2 x parameters plus causal attention, capped by a window.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/step_costs.h"
#include "model/model.h"

namespace ember::bench {
namespace {

const std::filesystem::path kTiny = std::filesystem::path(EMBER_SHARED_DIR) / "testdata/peer-gguf-qwen3/qwen3-tiny-Q8_0.gguf";

TEST(StepCosts, OneSequenceReadsTheWeightsPerTokenAndItsKv) {
  auto m = Model::load(kTiny.string());
  const StepCosts c = step_costs(*m, KvType::F16, 16);
  const ModelDesc& d = m->desc();
  EXPECT_EQ(c.kv_bytes_per_position, double(d.n_layers) * 2 * d.kv_dim() * 2);
  EXPECT_DOUBLE_EQ(decode_step_bytes(c, 1, 100), double(m->weight_bytes_per_token()) + 100 * c.kv_bytes_per_position);
  // A dense model's weights are read once per step whatever the batch.
  EXPECT_DOUBLE_EQ(decode_step_bytes(c, 8, 100) - decode_step_bytes(c, 1, 100), 7 * 100 * c.kv_bytes_per_position);
  double params = 0;
  for (const LayerWeights& L : m->weights().layers)
    for (const Matrix* x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down})
      params += double(x->rows) * double(x->k);
  EXPECT_DOUBLE_EQ(c.dense_params, params);
  // One token sees one position: 2 x parameters plus 4 x q_dim per layer.
  EXPECT_DOUBLE_EQ(prefill_flops_per_token(c, 1), 2 * params + 4.0 * d.q_dim() * d.n_layers);
}

TEST(StepCosts, ExpertsAndWindows) {
  StepCosts c;
  c.n_experts = 128;
  c.n_used = 8;
  c.expert_bytes = 1000;
  c.shared_bytes = 50'000;
  EXPECT_DOUBLE_EQ(expected_distinct_experts(c, 1), 8);
  EXPECT_DOUBLE_EQ(decode_step_bytes(c, 1, 0), 50'000 + 8 * 1000);
  EXPECT_GT(expected_distinct_experts(c, 16), 8);
  EXPECT_LT(expected_distinct_experts(c, 16), 16 * 8);
  EXPECT_NEAR(expected_distinct_experts(c, 4096), 128, 1e-6);
  c.q_dim = 10;
  c.windows = {0, 4};
  // 8 tokens: the full layer sees 4.5 positions on average, the windowed one (1+2+3+4+4+4+4+4)/8 = 3.25.
  EXPECT_DOUBLE_EQ(prefill_flops_per_token(c, 8), 4.0 * 10 * (4.5 + 3.25));
}

}  // namespace
}  // namespace ember::bench
