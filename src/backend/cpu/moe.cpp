// Mixture-of-experts FFN: route each token to k experts, run each expert once
// on all the tokens routed to it, and add the weighted results back.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/moe_routing.h"

namespace ember {

namespace cpu {

void route_token(const ModelDesc& d, const float* logits, int32_t* ids, float* weights, float* scores) {
  const int E = d.n_experts, K = d.n_experts_used;
  // Scores to rank by: softmax probabilities, sigmoid, or raw logits (for top-k-then-softmax).
  if (d.routing == Routing::SoftmaxTopK) {
    float mx = -INFINITY;
    for (int e = 0; e < E; ++e) mx = std::max(mx, logits[e]);
    double sum = 0;
    for (int e = 0; e < E; ++e) { scores[e] = std::exp(logits[e] - mx); sum += scores[e]; }
    for (int e = 0; e < E; ++e) scores[e] = float(scores[e] / sum);
  } else if (d.routing == Routing::SigmoidTopK) {
    for (int e = 0; e < E; ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  } else {
    for (int e = 0; e < E; ++e) scores[e] = logits[e];
  }
  // Top k by score (ties: lower index first), k is small.
  for (int j = 0; j < K; ++j) {
    int best = -1;
    for (int e = 0; e < E; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken |= ids[i] == e;
      if (!taken && (best < 0 || scores[e] > scores[best])) best = e;
    }
    ids[j] = best;
    weights[j] = scores[best];
  }
  if (d.routing == Routing::TopKSoftmax) {
    const float mx = weights[0];
    double sum = 0;
    for (int j = 0; j < K; ++j) { weights[j] = std::exp(weights[j] - mx); sum += weights[j]; }
    for (int j = 0; j < K; ++j) weights[j] = float(weights[j] / sum);
  } else if (d.norm_topk) {
    double sum = 0;
    for (int j = 0; j < K; ++j) sum += weights[j];
    for (int j = 0; j < K; ++j) weights[j] = float(weights[j] / sum);
  }
}

}  // namespace cpu

void CpuBackend::moe_ffn(int l, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const LayerWeights& L = model_.weights().layers[size_t(l)];
  const int64_t H = d.hidden, E = d.n_experts, K = d.n_experts_used, EF = d.expert_ffn;

  norm_rows(L.ffn_norm, n_tok);
  cpu::matmul(pool_, L.router, s_.xn.data(), n_tok, s_.router.data(), E, s_.act.data());

  // Route every token; the router buffer doubles as the per-token score scratch.
  std::fill(s_.expert_count.begin(), s_.expert_count.end(), 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    int32_t* ids = s_.expert_ids.data() + t * K;
    float* wts = s_.expert_w.data() + t * K;
    float* logits = s_.router.data() + t * E;
    cpu::route_token(d, logits, ids, wts, s_.route_scores.data());
    for (int64_t j = 0; j < K; ++j) ++s_.expert_count[size_t(ids[j])];
  }
  // Group (token, weight) pairs by expert.
  s_.expert_offset[0] = 0;
  for (int64_t e = 0; e < E; ++e) s_.expert_offset[size_t(e + 1)] = s_.expert_offset[size_t(e)] + s_.expert_count[size_t(e)];
  std::fill(s_.expert_count.begin(), s_.expert_count.end(), 0);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t j = 0; j < K; ++j) {
      const int e = s_.expert_ids[size_t(t * K + j)];
      const int32_t slot = s_.expert_offset[size_t(e)] + s_.expert_count[size_t(e)]++;
      s_.expert_tokens[size_t(slot)] = int32_t(t);
      s_.expert_token_w[size_t(slot)] = s_.expert_w[size_t(t * K + j)];
    }

  std::fill(s_.proj.begin(), s_.proj.begin() + n_tok * H, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t first = s_.expert_offset[size_t(e)];
    const int64_t m = s_.expert_offset[size_t(e + 1)] - first;
    if (m == 0) continue;
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(s_.moe_in.data() + j * H, s_.xn.data() + int64_t(s_.expert_tokens[size_t(first + j)]) * H, size_t(H) * 4);
    cpu::matmul_many(pool_, {{&L.gate_exps.experts[size_t(e)], s_.moe_gate.data(), EF},
                             {&L.up_exps.experts[size_t(e)], s_.moe_up.data(), EF}},
                     s_.moe_in.data(), m, s_.act.data());
    for (int64_t j = 0; j < m; ++j)
      cpu::gated_activation(d.activation, s_.moe_gate.data() + j * EF, s_.moe_up.data() + j * EF, s_.moe_gate.data() + j * EF, EF);
    cpu::matmul(pool_, L.down_exps.experts[size_t(e)], s_.moe_gate.data(), m, s_.moe_out.data(), H, s_.act.data());
    for (int64_t j = 0; j < m; ++j) {
      const float wgt = s_.expert_token_w[size_t(first + j)];
      float* p = s_.proj.data() + int64_t(s_.expert_tokens[size_t(first + j)]) * H;
      const float* o = s_.moe_out.data() + j * H;
      for (int64_t i = 0; i < H; ++i) p[i] += wgt * o[i];
    }
  }

  add_residual(L.post_ffn_norm, n_tok);
}

}  // namespace ember
