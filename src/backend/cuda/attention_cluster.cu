// Attention of tokens with short contexts in one kernel (attention.h,
// kClusterContext): one thread block cluster per (token, key/value head), a
// warp per query head of the group in each block (attention_warps).
//
// Why: at batch 1 a short context gives the split kernel little to do and a
// long wait: each block's positions were a chain of load latencies, its
// partial results went out to global memory and a second kernel read them
// back to merge them. Measured in place, that pair cost 8.7-9.8 us a layer,
// the largest share of a one-token step after the weight products.
//
// Here each block of the cluster (8 blocks; 16 where a step holds a context
// past kClusterShort positions) stages its slice of the head's positions in
// shared memory (cp.async: every load of the slice in flight at once), each
// warp runs the online softmax of its query head over the slice, and after a
// cluster barrier the blocks merge the slices by reading one another's partial
// results through distributed shared memory, in rank order, one 256-element
// int8 block of the output at a time (and round it for wo's integer product).
// The slices are cut from the token's own context only, so its result is the
// same bits in any batch.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/async_copy.cuh"
#include "backend/cuda/attention.h"
#include "backend/cuda/attention_positions.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/int8_round.cuh"
#include "backend/cuda/kv_access.cuh"
#include "backend/cuda/launch.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

namespace cg = cooperative_groups;

// Positions one block stages at most: in clusters of 8 (every context of the
// step short) and of 16.
constexpr int kShortSlots = kClusterShort / kClusterShortSlices, kSlots = kClusterContext / kClusterSlices;
static_assert(kClusterSlices % kClusterShortSlices == 0 && kSlots >= kShortSlots);
constexpr int kMaxGroup = 32;  // query heads per key/value head (their partial results fill shared memory)
constexpr int kMaxHeadDim = 256;

// Shared memory of one block: the slice's keys, then its values (slots rows
// of head_dim elements each), then each query head's partial result
// (head_dim sums, the running maximum and the denominator).
template <class E>
__host__ __device__ constexpr size_t cluster_smem_bytes(int slots, int group, int head_dim) {
  return size_t(2) * size_t(slots) * size_t(head_dim) * sizeof(E) + size_t(group) * size_t(head_dim + 2) * sizeof(float);
}

// Positions one block of a cluster of NB stages at most.
template <int NB>
constexpr int slots_of() { return NB == kClusterShortSlices ? kShortSlots : kSlots; }

// Blocks of the grid: (rank in the cluster, key/value head, token t0 + z);
// clusters of NB blocks. (NB a template parameter: in clusters of 8 every
// context is short, and the slice arithmetic is constant.)
template <class E, int NE, int NB>
__global__ void __launch_bounds__(kAttentionWarps * 32, 1)
    cluster_attention_kernel(AttnArgs a, StepIndex ix, KvLayer kv, int64_t t0) {
  constexpr int slots = slots_of<NB>();
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ __align__(16) float merged[kInt8Block];
  const cg::cluster_group cl = cg::this_cluster();
  // Before waiting for the kernel before (qkv_post, which stores this step's
  // keys and values) only the step's index, uploaded before its first
  // kernel, and the keys and values of earlier steps are read (launch.cuh).
  const int64_t t = a.tokens ? a.tokens[t0 + blockIdx.z] : t0 + blockIdx.z;
  const int last = ix.pos[t];
  if (last >= kClusterContext) {  // the split kernel's token (the whole cluster returns)
    // Even so the blocks wait for the kernel before them (qkv_post) to finish:
    // where every token of the step is the split kernel's, this kernel must
    // not end before qkv_post, since the split kernel's wait covers this one
    // alone (launch.cuh).
    wait_for_previous_kernel();
    return;
  }
  const int rank = int(blockIdx.x), g = int(blockIdx.y);
  const int group = a.n_heads / a.n_kv_heads, hd = a.head_dim;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int first = a.sliding_window > 0 ? max(0, last - a.sliding_window + 1) : 0;
  // Slices from the token's own context (in clusters of 8 all are short).
  const int slices = NB == kClusterShortSlices || last < kClusterShort ? kClusterShortSlices : kClusterSlices;
  const int per = (last - first + 1 + slices - 1) / slices;
  const int lo = first + rank * per, cnt = max(0, min(last, lo + per - 1) - lo + 1);
  if (per > slots) __trap();  // a context too long for the launch's class: never let it pass silently
  const int32_t* table = ix.tables + ix.table_off[ix.seq[t]];
  E* ks = reinterpret_cast<E*>(smem);
  E* vs = ks + slots * hd;
  float* part = reinterpret_cast<float*>(vs + slots * hd);

  // The slice's keys and values, 16-byte copies where rows are whole 16-byte
  // units: those of earlier steps while the kernel before still runs, the
  // rest (this step's) after it.
  const int off = g * hd;
  const bool whole = hd * int(sizeof(E)) % 16 == 0;
  const int units = whole ? hd * int(sizeof(E)) / 16 : hd;
  auto stage = [&](int from, int to) {  // slice positions from .. to - 1
    for (int i = from * 2 * units + int(threadIdx.x); i < to * 2 * units; i += int(blockDim.x)) {
      const int r = i / units, u = i - r * units, p = r >> 1, kvsel = r & 1;
      const E* src = kv_at<E>(kv, table, lo + p, kvsel) + off;
      E* dst = (kvsel ? vs : ks) + p * hd;
      if (whole) cp_async16(reinterpret_cast<char*>(dst) + 16 * u, reinterpret_cast<const char*>(src) + 16 * u);
      else dst[u] = src[u];
    }
  };
  // Positions from `fresh` on are stored in this step (by qkv_post, just before).
  const int fresh = ix.seq_start ? ix.seq_start[ix.seq[t]] : lo;
  const int stored = min(cnt, max(0, fresh - lo));
  stage(0, stored);
  begin_kernel();
  stage(stored, cnt);
  cp_async_commit();

  // The warp's first query head loads while the copies fly.
  const int d0 = lane * NE;
  const bool vec = hd % NE == 0;
  float q[NE];
  auto load_q = [&](int hl) {
    const float* qr = a.q + (t * a.n_heads + g * group + hl) * hd;
#pragma unroll
    for (int i = 0; i < NE; ++i) q[i] = d0 + i < hd ? qr[d0 + i] : 0.f;
  };
  load_q(w);
  cp_async_wait<0>();
  __syncthreads();

  for (int hl = w; hl < group; hl += int(blockDim.x >> 5)) {
    if (hl != w) load_q(hl);
    float acc[NE], m = -INFINITY, l = 0.f;
#pragma unroll
    for (int i = 0; i < NE; ++i) acc[i] = 0.f;
    attend_positions<E, NE>(a, q, 0, cnt - 1, d0, vec,
                            [&](int p, const E*& k, const E*& v) {
                              k = ks + p * hd;
                              v = vs + p * hd;
                            },
                            acc, m, l);
    store_partial(part + hl * (hd + 2), acc, m, l, d0, hd);
  }
  cl.sync();  // every block's partial results are written and visible to the cluster

  // The group's output (group * head_dim elements, contiguous in the row) in
  // int8 blocks of 256: block `rank` merges blocks rank, rank + NB, ...
  // Only the token's own slices are read: the same sums, in the same order,
  // in a cluster of 8 or of 16.
  const int n_pieces = group * hd / kInt8Block;
  const int64_t row = int64_t(a.n_heads) * hd, base = t * row + int64_t(g) * group * hd;
  for (int piece = rank; piece < n_pieces; piece += NB) {
    for (int el = int(threadIdx.x); el < kInt8Block; el += int(blockDim.x)) {
      const int e = piece * kInt8Block + el, hl = e / hd, at = hl * (hd + 2);
      // The slices' common maximum, then their weighted sums in slice order,
      // eight slices at a time (a cluster of 16 then holds no more values
      // than one of 8: registers are what bound its blocks per SM).
      constexpr int kPer = kClusterShortSlices;
      float mx = -INFINITY;
#pragma unroll 1
      for (int z0 = 0; z0 < slices; z0 += kPer)
#pragma unroll
        for (int z = z0; z < z0 + kPer; ++z) mx = fmaxf(mx, cl.map_shared_rank(part, z)[at + hd]);
      float num = 0.f, den = 0.f;
#pragma unroll 1
      for (int z0 = 0; z0 < slices; z0 += kPer) {
        float mz[kPer], lz[kPer], az[kPer];
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          const float* other = cl.map_shared_rank(part, z0 + j);
          mz[j] = other[at + hd];
          lz[j] = other[at + hd + 1];
          az[j] = other[at + e - hl * hd];
        }
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          const float wz = lz[j] > 0.f ? expf(mz[j] - mx) : 0.f;  // an empty slice (a context shorter than its slices) weighs nothing
          den += lz[j] * wz;
          num += az[j] * wz;
        }
      }
      const float v = num / den;
      a.out[base + e] = v;
      merged[el] = v;
    }
    if (a.round.q == nullptr) continue;
    __syncthreads();
    if (threadIdx.x < 32) round_shared_block(merged, a.round, t, (int64_t(g) * group * hd) / kInt8Block + piece);
    __syncthreads();  // before the next piece overwrites `merged`
  }
  cl.sync();  // no block leaves while another may still read its partial results
}

template <class E, int NE, int NB>
void launch_clusters(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s) {
  // Above 48 KB of dynamic shared memory (float keys of long heads) a kernel
  // must opt in, and clusters of 16 blocks are beyond the portable 8: once per process.
  static const cudaError_t opted = [] {
    const cudaError_t e = cudaFuncSetAttribute(cluster_attention_kernel<E, NE, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               int(cluster_smem_bytes<E>(kSlots, kMaxGroup, 32 * NE)));
    if (e != cudaSuccess || NB <= 8) return e;
    return cudaFuncSetAttribute(cluster_attention_kernel<E, NE, NB>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  }();
  EMBER_CUDA_CHECK(opted);
  const int group = a.n_heads / a.n_kv_heads;
  const size_t smem = cluster_smem_bytes<E>(slots_of<NB>(), group, a.head_dim);
  constexpr int64_t kMaxGridZ = 65535;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxGridZ) {
    const dim3 grid(unsigned(NB), unsigned(a.n_kv_heads), unsigned(std::min(kMaxGridZ, n_tok - t0)));
    const dim3 block(unsigned(attention_warps(group) * 32));
    launch_clustered(cluster_attention_kernel<E, NE, NB>, grid, block, smem, unsigned(NB), s, a, ix, kv, t0);
  }
}

}  // namespace

bool cluster_attention_fits(int n_heads, int n_kv_heads, int head_dim) {
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0) return false;
  const int group = n_heads / n_kv_heads;
  return group <= kMaxGroup && head_dim > 0 && head_dim <= kMaxHeadDim && group * head_dim % kInt8Block == 0;
}

void cluster_attention(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s) {
  if (!cluster_attention_fits(a.n_heads, a.n_kv_heads, a.head_dim))
    throw Error("CUDA backend: the cluster attention kernel does not take this head layout");
  // Clusters of 8 where every context of the step is short, else of 16 (a short context's slices are the same).
  with_kv_type(kv.type, [&]<class E>() {
    with_lane_elems(a.head_dim, [&]<int NE>() {
      if (a.context_class <= kClusterShort) launch_clusters<E, NE, kClusterShortSlices>(a, ix, kv, n_tok, s);
      else launch_clusters<E, NE, kClusterSlices>(a, ix, kv, n_tok, s);
    });
  });
}

}  // namespace ember::cuda
