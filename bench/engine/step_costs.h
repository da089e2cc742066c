// What one engine step must move and compute, so that every figure of
// ember_bench_engine is also a ratio to its roofline (../shared/models.md):
// - decode: bytes a step reads (the weights once, shared by every sequence of
//   the step; for a mixture of experts, the distinct experts its tokens pick;
//   each sequence's keys and values);
// - prefill: 2 x the matrix parameters each token multiplies, plus causal
//   attention (q.k and p.v over the positions before it, within a sliding
//   window where a layer has one).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "model/model.h"

namespace ember::bench {

struct StepCosts {
  double shared_bytes = 0;       // read once per step whatever the batch: all but the experts
  double expert_bytes = 0;       // one expert's three matrices, summed over the layers
  int n_experts = 0, n_used = 0;
  double kv_bytes_per_position = 0;
  double dense_params = 0;       // matrix elements every token multiplies (all but the experts and the output head)
  double expert_params = 0;      // one expert's three matrices, summed over the layers
  int q_dim = 0;
  std::vector<int> windows;      // per layer: 0, or its sliding window
};

inline StepCosts step_costs(const Model& m, KvType kv_type, int block_size) {
  const ModelDesc& d = m.desc();
  const Weights& w = m.weights();
  StepCosts c;
  c.n_experts = d.n_experts;
  c.n_used = d.n_experts_used;
  c.q_dim = d.q_dim();
  c.kv_bytes_per_position = double(kv_block_bytes(d, block_size, kv_type)) / block_size;
  for (int l = 0; l < d.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    for (const Matrix* x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.router})
      c.dense_params += double(x->rows) * double(x->k);
    if (L.gate_exps.present())
      for (const ExpertMatrices* e : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
        c.expert_bytes += double(e->experts[0].bytes());
        c.expert_params += double(e->experts[0].rows) * double(e->experts[0].k);
      }
    c.windows.push_back(d.layers[size_t(l)].sliding_window);
  }
  c.shared_bytes = double(m.weight_bytes_per_token()) - c.n_used * c.expert_bytes;
  return c;
}

// Experts a step of `tokens` tokens reads in each layer, expected when each
// token picks n_used of n_experts uniformly: E (1 - (1 - K/E)^B).
inline double expected_distinct_experts(const StepCosts& c, int tokens) {
  if (c.n_experts == 0) return 0;
  return c.n_experts * (1.0 - std::pow(1.0 - double(c.n_used) / c.n_experts, tokens));
}

// Bytes of one decode step of `seqs` sequences at `context` positions each.
inline double decode_step_bytes(const StepCosts& c, int seqs, double context) {
  return c.shared_bytes + expected_distinct_experts(c, seqs) * c.expert_bytes + seqs * context * c.kv_bytes_per_position;
}

// FLOPs per token of a cold prompt of n tokens (its average over the prompt).
inline double prefill_flops_per_token(const StepCosts& c, int n) {
  double positions = 0;  // visible positions summed over the layers, averaged over the prompt's tokens
  for (int w : c.windows) {
    double sum = 0;
    for (int t = 0; t < n; ++t) sum += w > 0 ? std::min(t + 1, w) : t + 1;
    positions += sum / n;
  }
  return 2.0 * (c.dense_params + c.n_used * c.expert_params) + 4.0 * c.q_dim * positions;
}

}  // namespace ember::bench
