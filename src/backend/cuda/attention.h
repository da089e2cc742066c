// Attention on the GPU over the paged KV blocks: the per-token work before it
// (biases, q/k norms, RoPE, storing keys and values), and attention itself,
// split along the sequence and merged so long contexts spread over the chip.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend.h"
#include "model/descriptor.h"

namespace ember::cuda {

// Where the step's tokens sit: per token its position and sequence; per
// sequence the offset of its block table in `tables`.
struct StepIndex {
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  const int32_t* table_off = nullptr;
  const int32_t* tables = nullptr;
};

// The KV storage of one layer: block b's keys at base + (b * 2) * half_elems elements, values after them.
struct KvLayer {
  void* base = nullptr;
  KvType type = KvType::F16;
  int block_size = 16;
  int kv_dim = 0;
  int64_t half_elems = 0;  // block_size * kv_dim
};

struct QkvArgs {
  float* q = nullptr;        // n_tok rows of n_heads * head_dim
  float* k = nullptr;        // n_tok rows of n_kv_heads * head_dim
  const float* v = nullptr;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr;  // biases, or null
  const float *q_norm = nullptr, *k_norm = nullptr;         // per-head RMSNorm weights, or null
  float eps = 1e-6f;
  const double* inv_freq = nullptr;  // head_dim / 2 RoPE inverse frequencies of this layer
  bool adjacent_pairs = false;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
};

// Biases, q/k norms and RoPE in place on q and k; keys and values stored in the KV blocks.
void qkv_post(const QkvArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s);

// Tokens one attention launch covers: the partial scratch holds this many tokens' splits.
constexpr int64_t kAttentionTokens = 64;

struct AttnArgs {
  const float* q = nullptr;
  float* out = nullptr;        // n_tok rows of n_heads * head_dim
  float* partial = nullptr;    // scratch: kAttentionTokens * n_heads * n_splits * (head_dim + 2) floats
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.f, softcap = 0.f;
  int sliding_window = 0;
  int split = 128;             // positions per split: fixed per backend, so results never depend on the batch
  int n_splits = 1;            // splits covering the longest sequence of the step
};

void attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s);

}  // namespace ember::cuda
