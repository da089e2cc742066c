// Attention on the GPU over the paged KV blocks: the per-token work before it
// (biases, q/k norms, RoPE, storing keys and values), and attention itself,
// split along the sequence and merged so long contexts spread over the chip.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/int8_acts.h"
#include "engine/backend.h"
#include "model/descriptor.h"

namespace ember::cuda {

// Where the step's tokens sit: per token its position and sequence; per
// sequence the offset of its block table in `tables` and the position of its
// first token in this step (the keys and values before it were stored by
// earlier steps, so a kernel may read them before the step's previous
// kernel has finished; null: none may be).
struct StepIndex {
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  const int32_t* table_off = nullptr;
  const int32_t* tables = nullptr;
  const int32_t* seq_start = nullptr;
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

// Splits of a token's context: sized from that token's own context (so its
// result never depends on the rest of the batch), at least 16 positions each so
// a single decoding sequence still spreads over many blocks of threads (a
// block's loop over its positions is a chain of load latencies), and at most
// kAttentionMaxSplits of them.
constexpr int kAttentionMaxSplits = 64;
constexpr int attention_split(int n_positions) {
  const int s = (n_positions + kAttentionMaxSplits - 1) / kAttentionMaxSplits;
  return (s < 16 ? 16 : s + 7) / 8 * 8;
}
constexpr int attention_splits(int n_positions) {
  return (n_positions + attention_split(n_positions) - 1) / attention_split(n_positions);
}
// The positions a token at position `last` attends: its whole context, or
// the last `window` positions of it in a sliding-window layer. The split
// kernel cuts those into splits (a window of 1,024 at a context of 128K takes
// 64 splits of 16, not one split of 2,048 walked by one warp a head).
constexpr int attended_positions(int last, int window) { return window > 0 && window < last + 1 ? window : last + 1; }
// The split grid of a step whose tokens need at most `splits`: the next power
// of two, so that the CUDA Graphs captured per step shape number at most seven
// per batch shape instead of one per count. Blocks past a token's own splits
// return at once and its merge stops at its own count: the same bits.
constexpr int attention_split_grid(int splits) {
  int g = 1;
  while (g < splits) g *= 2;
  return g;
}

struct AttnArgs {
  const int32_t* tokens = nullptr;  // attention(): the step's tokens it covers (n_tok of them), or null for 0..n_tok-1
  const float* q = nullptr;
  float* out = nullptr;        // n_tok rows of n_heads * head_dim
  float* partial = nullptr;    // scratch: kAttentionTokens * n_heads * n_splits * (head_dim + 2) floats
  // attention(): where the output rows also go rounded to int8 (for wo's
  // integer product; rows of n_heads * head_dim, a multiple of 256), or q
  // null. Only with tokens null: every row of the step is rounded.
  Int8Acts round;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.f, softcap = 0.f;
  int sliding_window = 0;
  int n_splits = 1;            // the split grid: at least the most attention_splits() of any token of the step
  int context_class = 1 << 30;  // attention_context_class() of the step's longest context (default: any)
  // The cluster kernel's blocks per cluster: a power of two dividing its
  // slices (8 or 16), each block taking at most kClusterMaxSlicesPerBlock of
  // them in turn, and their keys and values within a block's shared memory
  // (else the launch throws); 0: a block per slice unless fewer take fewer
  // waves of clusters. The result is the same bits whatever it is.
  int cluster_blocks = 0;
};

// Attention for any step: the decode path. Tokens of short contexts take the
// cluster kernel below where the model fits it, the others are split along
// the sequence and merged.
void attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s);

// Tokens of at most kClusterContext positions are attended in one kernel, one
// thread block cluster per (token, key/value head): each block stages a slice
// of the head's keys and values in shared memory with all its loads in flight
// at once, the slices' partial results are merged through distributed shared
// memory, and the output rows are rounded to int8 there too. No partial
// results through global memory, no merge kernel: the round trip that made
// short contexts cost ~9 us a layer. A context of at most kClusterShort
// positions is cut into kClusterShortSlices slices, a longer one into
// kClusterSlices: from the token's own context, so its result is the same
// bits whatever the step (a cluster's blocks past its slices add nothing).
// A cluster has a block per slice, or fewer taking several slices in turn
// where the step's clusters would not all be resident at once
// (AttnArgs::cluster_blocks); each slice is still summed alone and merged in order.
constexpr int kClusterShort = 256, kClusterContext = 1024;
constexpr int kClusterShortSlices = 8, kClusterSlices = 16, kClusterMaxSlicesPerBlock = 4;

// What attention() launches depends on the longest context among its tokens,
// in three classes (a captured step's graph is keyed by it): up to
// kClusterShort positions, the cluster kernel of 8 slices; up to
// kClusterContext, of 16; longer, the split kernel and merge too.
constexpr int attention_context_class(int positions) {
  return positions <= kClusterShort ? kClusterShort : positions <= kClusterContext ? kClusterContext : 1 << 30;
}

// Whether the cluster kernel takes this model's short contexts: a group's
// output rows (query heads per key/value head x head_dim) a whole number of
// int8 blocks, so the cluster that merges them can round them; head_dim at most 256.
bool cluster_attention_fits(int n_heads, int n_kv_heads, int head_dim);

// The cluster kernel over the step's tokens (as attention() counts them); tokens of longer contexts are left alone.
void cluster_attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s);

// Query tiles of a prefill step: up to kFlashRows consecutive tokens of one
// sequence each, as pairs (first token of the step, number of tokens). A
// sequence takes flash_attention when a step holds more than kFlashRows of its
// tokens, so whether it does never depends on the rest of the batch, and steps
// a graph holds (at most 64 tokens) never do.
constexpr int kFlashRows = 64;

// Whether flash_attention runs this model and KV type: 16-bit keys and values
// (the tensor cores read them as they are stored), head_dim a multiple of 8, at most 256.
bool flash_attention_fits(KvType type, int head_dim);

// FlashAttention-style attention of whole query tiles on the tensor cores: keys
// and values of each tile of positions read once per tile of queries, an
// online softmax in registers. Queries and probabilities are rounded to the KV
// element type. `partial` and `n_splits` of `a` are not used.
void flash_attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, const int32_t* tiles, int n_tiles,
                     cudaStream_t s);

}  // namespace ember::cuda
