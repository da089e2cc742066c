// Weight tensors bound to the roles the forward pass uses them in.
//
// Matrices point straight into the memory-mapped model file and keep its
// format (quantised or float); only norms and biases, which are tiny, are
// copied into float vectors at load.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/types.h"

namespace ember {

// `rows` rows of `k` elements each, in `type`'s format, row_stride bytes apart.
struct Matrix {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t k = 0;
  int64_t rows = 0;
  size_t row_stride = 0;
  bool present() const { return data != nullptr; }
  const uint8_t* row(int64_t r) const { return data + size_t(r) * row_stride; }
  size_t bytes() const { return size_t(rows) * row_stride; }
};

// One matrix per expert, same shape and type.
struct ExpertMatrices {
  std::vector<Matrix> experts;
  bool present() const { return !experts.empty(); }
};

struct LayerWeights {
  std::vector<float> attn_norm, q_norm, k_norm, post_attn_norm, ffn_norm, post_ffn_norm;
  Matrix wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;
  // Dense FFN.
  Matrix ffn_gate, ffn_up, ffn_down;
  // Mixture of experts.
  Matrix router;  // [n_experts rows of hidden]
  ExpertMatrices gate_exps, up_exps, down_exps;
};

struct Weights {
  Matrix token_embd;  // vocab rows of hidden
  Matrix output;      // vocab rows of hidden (the embedding matrix when tied)
  std::vector<float> output_norm;
  std::vector<LayerWeights> layers;
};

}  // namespace ember
