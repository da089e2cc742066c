// qkv_post: one warp per head of each token. attention: the cluster kernel
// (attention_cluster.cu) for contexts it takes; for the rest one block per
// (token, key/value head, split of the sequence), a warp per query head of
// the group (attention_warps; groups of more than 8 in several blocks), each
// lane holding head_dim / 32 consecutive elements; the split's keys and values
// staged in shared memory chunk by chunk, an online softmax over its
// positions, then a merge of the splits in a fixed order (and, for wo's
// integer product, the rounding of the merged rows to int8).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/attention.h"
#include "backend/cuda/async_copy.cuh"
#include "backend/cuda/attention_positions.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/int8_round.cuh"
#include "backend/cuda/kv_access.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kPostWarps = 4;
constexpr int kMaxHeadDim = 256;

// Blocks of the grid: (token, group of kPostWarps heads, q heads first, then
// k heads), one warp per head; every block also stores its share of the
// token's values. One block per token took ~13 us a layer for one decoding
// token (its four warps walked 40 heads in turn); spread over the heads it is
// a few microseconds, with each element computed as before.
template <class E>
__global__ void __launch_bounds__(kPostWarps * 32) qkv_post_kernel(QkvArgs a, StepIndex ix, KvLayer kv) {
  __shared__ float cs[kMaxHeadDim / 2], sn[kMaxHeadDim / 2];
  __shared__ float head[kPostWarps][kMaxHeadDim];
  // The step's positions, block tables and the rotation's frequencies are
  // there before the step's first kernel and never change during it: the
  // rotation's angles (a double cosine and sine each) are computed before
  // waiting for the product that writes q and k (launch.cuh).
  const int64_t t = blockIdx.x;
  const int hd = a.head_dim, half = hd / 2, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t pos = ix.pos[t];
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const double angle = double(pos) * a.inv_freq[i];
    cs[i] = float(cos(angle));
    sn[i] = float(sin(angle));
  }
  const int32_t* table = ix.tables + ix.table_off[ix.seq[t]];
  begin_kernel();
  __syncthreads();
  const int QD = a.n_heads * hd, KVD = a.n_kv_heads * hd;
  const int h = int(blockIdx.y) * kPostWarps + w;
  if (h < a.n_heads + a.n_kv_heads) {
    const bool is_q = h < a.n_heads;
    const int hh = is_q ? h : h - a.n_heads;
    float* x = is_q ? a.q + t * QD + hh * hd : a.k + t * KVD + hh * hd;
    const float* bias = is_q ? a.bq : a.bk;
    const float* norm = is_q ? a.q_norm : a.k_norm;
    float* buf = head[w];
    float ss = 0.f;
    for (int i = lane; i < hd; i += 32) {
      const float v = x[i] + (bias ? bias[hh * hd + i] : 0.f);
      buf[i] = v;
      ss = fmaf(v, v, ss);
    }
    if (norm) {
      const float inv = rsqrtf(warp_sum(ss) / float(hd) + a.eps);
      for (int i = lane; i < hd; i += 32) buf[i] = buf[i] * inv * norm[i];
    }
    __syncwarp();
    E* krow = is_q ? nullptr : kv_at<E>(kv, table, int(pos), 0) + hh * hd;
    for (int i = lane; i < half; i += 32) {
      const int ia = a.adjacent_pairs ? 2 * i : i, ib = a.adjacent_pairs ? 2 * i + 1 : i + half;
      const float x0 = buf[ia], x1 = buf[ib];
      const float r0 = x0 * cs[i] - x1 * sn[i], r1 = x1 * cs[i] + x0 * sn[i];
      x[ia] = r0;
      x[ib] = r1;
      if (krow) {
        krow[ia] = from_f<E>(r0);
        krow[ib] = from_f<E>(r1);
      }
    }
  }
  E* vrow = kv_at<E>(kv, table, int(pos), 1);
  for (int i = int(blockIdx.y * blockDim.x + threadIdx.x); i < KVD; i += int(gridDim.y * blockDim.x))
    vrow[i] = from_f<E>(a.v[t * KVD + i] + (a.bv ? a.bv[i] : 0.f));
}

// Positions of one chunk the split kernel stages in shared memory: 8 KB of
// keys (and as many bytes of values) a buffer, a multiple of the 8 positions
// attend_positions takes at a time (4 where a lane holds 8 elements), at most 64.
__host__ __device__ constexpr int split_chunk_positions(int row_bytes) {
  const int c = 8192 / row_bytes / 8 * 8;
  return c < 8 ? 8 : c > 64 ? 64 : c;
}
// Its dynamic shared memory: two buffers of a chunk's keys and values.
constexpr size_t split_smem_bytes(int row_bytes) { return size_t(4) * size_t(split_chunk_positions(row_bytes)) * size_t(row_bytes); }

// Blocks of a group's query heads: kAttentionWarps heads a block, each block
// of a group staging the same keys and values (only groups of more than 8
// heads take several).
__host__ __device__ constexpr int split_head_parts(int group) { return (group + kAttentionWarps - 1) / kAttentionWarps; }

// NE: elements of the head each lane holds, consecutive (head_dim <= 32 * NE).
// Blocks of the grid: (token of this chunk, key/value head x part of its
// group's query heads, split); token t0 + x.
//
// The split's keys and values go through shared memory in chunks
// (split_chunk_positions), the next chunk's copies (cp.async, every one of
// them in flight at once) issued before the warps attend the current one.
// Read straight from the paged blocks, as before, each warp's loads of 8
// positions at a time were a chain of memory latencies, and every warp of a
// group read the same rows again: at long contexts the kernel read its keys
// and values at a small part of the bandwidth. A chunk holds a multiple of
// the positions attend_positions takes together, so each position meets the
// same arithmetic, in the same order, as in one pass over the split.
template <class E, int NE>
__global__ void __launch_bounds__(kAttentionWarps * 32, 1)
    attention_kernel(AttnArgs a, StepIndex ix, KvLayer kv, int64_t t0, int skip_upto) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t t = a.tokens ? a.tokens[t0 + blockIdx.x] : t0 + blockIdx.x;
  const int group = a.n_heads / a.n_kv_heads, parts = split_head_parts(group);
  const int g = int(blockIdx.y) / parts, part = int(blockIdx.y) % parts, z = int(blockIdx.z);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int hd = a.head_dim;
  const int last = ix.pos[t];
  const int span = attended_positions(last, a.sliding_window), first = last + 1 - span;
  // A token the cluster kernel takes, or a block past this token's splits
  // (its merge stops before them): nothing to do, after the wait (launch.cuh).
  if (last < skip_upto || z >= attention_splits(span)) {
    begin_kernel();
    return;
  }
  const int split = attention_split(span);
  const int lo = first + z * split, n = min(last, first + (z + 1) * split - 1) - lo + 1;
  const int32_t* table = ix.tables + ix.table_off[ix.seq[t]];
  const int row_bytes = hd * int(sizeof(E)), chunk = split_chunk_positions(row_bytes);
  const int chunks = (n + chunk - 1) / chunk, off = g * hd;
  const bool whole = row_bytes % 16 == 0;
  const int units = whole ? row_bytes / 16 : hd;
  // Buffer b: a chunk's keys, then its values.
  auto keys = [&](int b) { return reinterpret_cast<E*>(smem) + b * 2 * chunk * hd; };
  auto count = [&](int c) { return min(chunk, n - c * chunk); };
  // Chunk c's positions from .. to - 1 (counted from the chunk's first) into
  // buffer c % 2: its keys, then its values.
  auto stage = [&](int c, int from, int to) {
    E* ks = keys(c & 1);
    E* vs = ks + chunk * hd;
    for (int i = from * 2 * units + int(threadIdx.x); i < to * 2 * units; i += int(blockDim.x)) {
      const int r = i / units, u = i - r * units, p = r >> 1, kvsel = r & 1;
      const E* src = kv_at<E>(kv, table, lo + c * chunk + p, kvsel) + off;
      E* dst = (kvsel ? vs : ks) + p * hd;
      if (whole) cp_async16(reinterpret_cast<char*>(dst) + 16 * u, reinterpret_cast<const char*>(src) + 16 * u);
      else dst[u] = src[u];
    }
  };
  // Positions from `fresh` on are stored in this step, by the kernel before
  // (qkv_post): the first chunk's earlier ones are copied before the wait.
  const int fresh = ix.seq_start ? ix.seq_start[ix.seq[t]] : lo;
  const int stored = min(count(0), max(0, fresh - lo));
  stage(0, 0, stored);
  begin_kernel();
  stage(0, stored, count(0));
  cp_async_commit();

  const int hl = part * kAttentionWarps + w, h = g * group + hl;  // the warp's query head
  const bool has_head = hl < group;
  const int d0 = lane * NE;
  const bool vec = hd % NE == 0;
  float q[NE], acc[NE], m = -INFINITY, l = 0.f;
  const float* qr = a.q + (t * a.n_heads + h) * hd;
#pragma unroll
  for (int i = 0; i < NE; ++i) {
    q[i] = has_head && d0 + i < hd ? qr[d0 + i] : 0.f;
    acc[i] = 0.f;
  }
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) {
      stage(c + 1, 0, count(c + 1));
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // chunk c is in shared memory
    const int c0 = lo + c * chunk;
    const E* ks = keys(c & 1);
    if (has_head)
      attend_positions<E, NE>(a, q, c0, c0 + count(c) - 1, d0, vec,
                              [&](int p, const E*& k, const E*& v) {
                                k = ks + (p - c0) * hd;
                                v = ks + (chunk + p - c0) * hd;
                              },
                              acc, m, l);
    __syncthreads();  // every warp is done with buffer c % 2 before chunk c + 2 goes there
  }
  if (has_head)
    store_partial(a.partial + ((int64_t(blockIdx.x) * a.n_heads + h) * int64_t(a.n_splits) + z) * (hd + 2), acc, m, l, d0, hd);
}

// One block per (token, 256 consecutive elements of its output row): one warp
// per head those elements belong to finds the splits' common maximum and each
// split's weight, then every thread combines its element over the splits in
// split order. Only the token's own splits (attention_splits of the positions
// it attends) count, whatever the step's grid: the result is the same bits in
// any batch.
// With int8 rows to fill, the block's 256 elements are one int8 block and
// warp 0 rounds them (no rounding kernel before wo).
constexpr int kMergeThreads = kInt8Block;

// Heads one merge block's elements can touch.
__host__ __device__ constexpr int merge_heads(int head_dim) { return (kMergeThreads + head_dim - 2) / head_dim + 1; }

// Dynamic shared memory: merge_heads(head_dim) rows of n_splits weights, then their denominators.
__global__ void __launch_bounds__(kMergeThreads) merge_kernel(AttnArgs a, const int32_t* pos, int64_t t0, int skip_upto) {
  extern __shared__ float weights[];
  __shared__ __align__(16) float merged[kMergeThreads];
  begin_kernel();
  const int64_t t = a.tokens ? a.tokens[t0 + blockIdx.x] : t0 + blockIdx.x;
  if (pos[t] < skip_upto) return;  // a token the cluster kernel takes
  const int hd = a.head_dim, n = a.n_splits, lane = threadIdx.x & 31;
  const int own = min(n, attention_splits(attended_positions(pos[t], a.sliding_window)));
  float* den = weights + merge_heads(hd) * n;
  const int64_t row = int64_t(a.n_heads) * hd, e0 = int64_t(blockIdx.y) * kMergeThreads;
  const int h0 = int(e0 / hd);
  const int heads = int((min(row, e0 + kMergeThreads) - 1) / hd) - h0 + 1;
  auto part_of = [&](int h) { return a.partial + (int64_t(blockIdx.x) * a.n_heads + h) * int64_t(n) * (hd + 2); };
  for (int hl = threadIdx.x >> 5; hl < heads; hl += kMergeThreads / 32) {
    const float* part = part_of(h0 + hl);
    float mx = -INFINITY;
    for (int z = lane; z < own; z += 32) mx = fmaxf(mx, part[z * (hd + 2) + hd]);
    mx = warp_max(mx);
    float sum = 0.f;
    for (int z = lane; z < own; z += 32) {
      const float l = part[z * (hd + 2) + hd + 1];
      const float wz = l > 0.f ? expf(part[z * (hd + 2) + hd] - mx) : 0.f;
      weights[hl * n + z] = wz;
      sum += l * wz;
    }
    sum = warp_sum(sum);
    if (lane == 0) den[hl] = sum;
  }
  __syncthreads();
  const int64_t e = e0 + threadIdx.x;
  float v = 0.f;
  if (e < row) {
    const int h = int(e / hd), d = int(e % hd);
    const float* part = part_of(h);
    const float* wt = weights + (h - h0) * n;
    float num = 0.f;
    for (int z = 0; z < own; ++z) num += part[z * (hd + 2) + d] * wt[z];
    v = num / den[h - h0];
    a.out[t * row + e] = v;
  }
  if (a.round.q == nullptr) return;
  merged[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x < 32) round_shared_block(merged, a.round, t, blockIdx.y);
}

}  // namespace

void qkv_post(const QkvArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s) {
  if (a.head_dim > kMaxHeadDim || a.head_dim % 2) throw Error("CUDA backend: head_dim must be even and at most 256");
  const unsigned head_groups = unsigned((a.n_heads + a.n_kv_heads + kPostWarps - 1) / kPostWarps);
  with_kv_type(kv.type, [&]<class E>() {
    launch(qkv_post_kernel<E>, dim3(unsigned(n_tok), head_groups), kPostWarps * 32, 0, s, a, ix, kv);
  });
}

void attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s) {
  const int group = a.n_heads / a.n_kv_heads;
  if (a.n_splits < 1 || a.n_splits > kAttentionMaxSplits) throw Error("CUDA backend: attention splits out of range");
  if (a.round.q != nullptr && (a.tokens != nullptr || a.round.k != int64_t(a.n_heads) * a.head_dim || a.round.n < n_tok))
    throw Error("CUDA backend: attention cannot round its output into these int8 rows");
  // Tokens of short contexts take the cluster kernel (whichever tokens share
  // the step, so a token's result never depends on the batch); the split
  // kernel and its merge take the rest, and run only when a step holds one.
  const bool clustered = cluster_attention_fits(a.n_heads, a.n_kv_heads, a.head_dim);
  if (clustered) cluster_attention(a, ix, kv, n_tok, s);
  if (clustered && a.context_class <= kClusterContext) return;
  const int skip_upto = clustered ? kClusterContext : 0;  // positions below it: the cluster kernel's tokens
  // Tokens in chunks of kAttentionTokens: the partial results of one chunk fit the scratch.
  for (int64_t t0 = 0; t0 < n_tok; t0 += kAttentionTokens) {
    const unsigned nt = unsigned(std::min<int64_t>(kAttentionTokens, n_tok - t0));
    const dim3 grid(nt, unsigned(a.n_kv_heads * split_head_parts(group)), unsigned(a.n_splits));
    const dim3 block(unsigned(attention_warps(group) * 32));
    with_kv_type(kv.type, [&]<class E>() {
      const size_t smem = split_smem_bytes(a.head_dim * int(sizeof(E)));
      with_lane_elems(a.head_dim, [&]<int NE>() { launch(attention_kernel<E, NE>, grid, block, smem, s, a, ix, kv, t0, skip_upto); });
    });
    const unsigned row_blocks = unsigned((int64_t(a.n_heads) * a.head_dim + kMergeThreads - 1) / kMergeThreads);
    const size_t smem = size_t(merge_heads(a.head_dim) * (a.n_splits + 1)) * sizeof(float);
    launch(merge_kernel, dim3(nt, row_blocks), kMergeThreads, smem, s, a, ix.pos, t0, skip_upto);
  }
}

}  // namespace ember::cuda
