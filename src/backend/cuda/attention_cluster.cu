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
// Here each block of the cluster stages its slice of the head's positions in
// shared memory (cp.async: every load of the slice in flight at once), each
// warp runs the online softmax of its query head over the slice, and after a
// cluster barrier the blocks merge the slices by reading one another's partial
// results through distributed shared memory, in slice order, one 256-element
// int8 block of the output at a time (and round it for wo's integer product).
// A context is cut into 8 slices (16 where a step holds a context past
// kClusterShort positions); a cluster has a block per slice or, where a
// step's clusters would not all be resident at once (16 sequences), fewer
// blocks that take 2 or 4 slices each in turn: a block's work is a chain of
// latencies, and a second wave of blocks waits out the whole first one.
// The slices are cut from the token's own context only, so its result is the
// same bits in any batch.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

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

// Positions of one slice at most: a short context's (cut into 8) and a longer one's (16).
constexpr int kShortSlots = kClusterShort / kClusterShortSlices, kSlots = kClusterContext / kClusterSlices;
static_assert(kClusterSlices % kClusterShortSlices == 0 && kSlots >= kShortSlots);
constexpr int kMaxGroup = 32;  // query heads per key/value head (their partial results fill shared memory)
constexpr int kMaxHeadDim = 256;

// One slice's positions at most in the kernel of S slices.
template <int S>
constexpr int slots_of() { return S == kClusterShortSlices ? kShortSlots : kSlots; }

// Shared memory of one block taking `per_block` slices: their keys, then their
// values (rows of head_dim elements), then each slice's partial result of each
// query head (head_dim sums, the running maximum and the denominator).
template <class E>
__host__ __device__ constexpr size_t cluster_smem_bytes(int slots, int per_block, int group, int head_dim) {
  return size_t(2) * size_t(slots) * size_t(per_block) * size_t(head_dim) * sizeof(E) +
         size_t(per_block) * size_t(group) * size_t(head_dim + 2) * sizeof(float);
}

// Blocks of the grid: (rank in the cluster, key/value head, token t0 + z).
// A cluster's blocks (gridDim.x, a power of two dividing S) share the S
// slices of the kernel's class, S / gridDim.x each in turn, and every slice's
// partial result is computed alone and merged in slice order: the sums and
// their order are the same whichever block took a slice, so the blocks per
// cluster may follow the step's size without changing a bit. (S a template
// parameter: in the kernel of 8 every context is short, and the slice
// arithmetic is constant.)
template <class E, int NE, int S>
__global__ void __launch_bounds__(kAttentionWarps * 32, 1)
    cluster_attention_kernel(AttnArgs a, StepIndex ix, KvLayer kv, int64_t t0) {
  constexpr int slots = slots_of<S>();
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
  const int nb = int(gridDim.x), rank = int(blockIdx.x), g = int(blockIdx.y);
  const int shift = __ffs(S / nb) - 1;  // the block's slices: 1 << shift of them from rank << shift
  const int group = a.n_heads / a.n_kv_heads, hd = a.head_dim;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int first = a.sliding_window > 0 ? max(0, last - a.sliding_window + 1) : 0;
  // Slices from the token's own context (in the kernel of 8 all are short).
  const int slices = S == kClusterShortSlices || last < kClusterShort ? kClusterShortSlices : kClusterSlices;
  const int per = (last - first + 1 + slices - 1) / slices;
  if (per > slots) __trap();  // a context too long for the launch's class: never let it pass silently
  // The block's positions: its slices' runs, one after another.
  const int lo = first + (rank << shift) * per, cnt = max(0, min(last, lo + (per << shift) - 1) - lo + 1);
  const int32_t* table = ix.tables + ix.table_off[ix.seq[t]];
  E* ks = reinterpret_cast<E*>(smem);
  E* vs = ks + (slots << shift) * hd;
  float* part = reinterpret_cast<float*>(vs + (slots << shift) * hd);
  const int part_stride = group * (hd + 2);  // one slice's partial results

  // The block's slices' keys and values, 16-byte copies where rows are whole 16-byte
  // units: those of earlier steps while the kernel before still runs, the
  // rest (this step's) after it.
  const int off = g * hd;
  const bool whole = hd * int(sizeof(E)) % 16 == 0;
  const int units = whole ? hd * int(sizeof(E)) / 16 : hd;
  auto stage = [&](int from, int to) {  // the block's positions from .. to - 1
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
    for (int j = 0; j < 1 << shift; ++j) {  // each slice alone (an empty one: l = 0)
      float acc[NE], m = -INFINITY, l = 0.f;
#pragma unroll
      for (int i = 0; i < NE; ++i) acc[i] = 0.f;
      attend_positions<E, NE>(a, q, j * per, min(cnt, (j + 1) * per) - 1, d0, vec,
                              [&](int p, const E*& k, const E*& v) {
                                k = ks + p * hd;
                                v = vs + p * hd;
                              },
                              acc, m, l);
      store_partial(part + j * part_stride + hl * (hd + 2), acc, m, l, d0, hd);
    }
  }
  cl.sync();  // every block's partial results are written and visible to the cluster

  // The group's output (group * head_dim elements, contiguous in the row) in
  // int8 blocks of 256: block `rank` merges blocks rank, rank + nb, ...
  // Only the token's own slices are read: the same sums, in the same order,
  // in the kernel of 8 or of 16 and whichever block computed a slice.
  const int n_pieces = group * hd / kInt8Block;
  const int64_t row = int64_t(a.n_heads) * hd, base = t * row + int64_t(g) * group * hd;
  // Slice z's partial results: in the block that took it, at its place there.
  auto slice_part = [&](int z) { return cl.map_shared_rank(part + (z & ((1 << shift) - 1)) * part_stride, z >> shift); };
  for (int piece = rank; piece < n_pieces; piece += nb) {
    for (int el = int(threadIdx.x); el < kInt8Block; el += int(blockDim.x)) {
      const int e = piece * kInt8Block + el, hl = e / hd, at = hl * (hd + 2);
      // The slices' common maximum, then their weighted sums in slice order,
      // eight slices at a time (the kernel of 16 slices then holds no more
      // values than the kernel of 8: registers are what bound its blocks per SM).
      constexpr int kPer = kClusterShortSlices;
      float mx = -INFINITY;
#pragma unroll 1
      for (int z0 = 0; z0 < slices; z0 += kPer)
#pragma unroll
        for (int z = z0; z < z0 + kPer; ++z) mx = fmaxf(mx, slice_part(z)[at + hd]);
      float num = 0.f, den = 0.f;
#pragma unroll 1
      for (int z0 = 0; z0 < slices; z0 += kPer) {
        float mz[kPer], lz[kPer], az[kPer];
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          const float* other = slice_part(z0 + j);
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

// How many of a kernel's clusters are resident at once with `nb` blocks each
// of `threads` threads and `smem` bytes: asked once per kernel and size (the
// answer depends on the model's head layout only).
template <class K>
int resident_clusters(K kernel, int nb, unsigned threads, size_t smem) {
  struct Known {
    const void* kernel;
    int nb;
    unsigned threads;
    size_t smem;
    int clusters;
  };
  static std::mutex mu;
  static std::vector<Known> known;
  const std::lock_guard<std::mutex> lock(mu);
  const void* id = reinterpret_cast<const void*>(kernel);
  for (const Known& k : known)
    if (k.kernel == id && k.nb == nb && k.threads == threads && k.smem == smem) return k.clusters;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = unsigned(nb);
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(nb));
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  EMBER_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
  known.push_back({id, nb, threads, smem, clusters});
  return clusters;
}

template <class E, int NE, int S>
void launch_clusters(const AttnArgs& a, const StepIndex& ix, const KvLayer& kv, int64_t n_tok, cudaStream_t s) {
  const auto kernel = cluster_attention_kernel<E, NE, S>;
  // Above 48 KB of dynamic shared memory (several slices a block, float keys
  // of long heads) a kernel must opt in, and clusters of 16 blocks are beyond
  // the portable 8: once per process.
  static const int max_smem = [&] {
    int device = 0, optin = 0;
    cudaFuncAttributes fa{};
    EMBER_CUDA_CHECK(cudaGetDevice(&device));
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    EMBER_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    const int dynamic = optin - int(fa.sharedSizeBytes);  // what the static `merged` leaves
    EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic));
    if (S > 8) EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return dynamic;
  }();
  const int group = a.n_heads / a.n_kv_heads;
  const unsigned threads = unsigned(attention_warps(group) * 32);
  const auto smem = [&](int nb) { return cluster_smem_bytes<E>(slots_of<S>(), S / nb, group, a.head_dim); };
  // Blocks per cluster: a block per slice (the shortest chain of waits),
  // fewer (a block taking 2 or 4 slices in turn) only where that takes fewer
  // waves of clusters (16 sequences of dense-8b: 128 clusters of 8 blocks, 77
  // resident on an H100: two waves; of 4 blocks, one).
  int nb = a.cluster_blocks;
  if (nb == 0) {
    const int64_t clusters = n_tok * a.n_kv_heads;
    const auto waves = [&](int blocks) {
      const int64_t resident = std::max(1, resident_clusters(kernel, blocks, threads, smem(blocks)));
      return (clusters + resident - 1) / resident;
    };
    nb = S;
    int64_t least = waves(S);
    for (int fewer = S / 2; fewer >= S / kClusterMaxSlicesPerBlock && smem(fewer) <= size_t(max_smem); fewer /= 2)
      if (const int64_t w = waves(fewer); w < least) {
        nb = fewer;
        least = w;
      }
  }
  if (nb <= 0 || S % nb != 0 || (nb & (nb - 1)) != 0 || S / nb > kClusterMaxSlicesPerBlock || smem(nb) > size_t(max_smem))
    throw Error("CUDA backend: the cluster attention kernel cannot take " + std::to_string(nb) + " blocks a cluster here");
  constexpr int64_t kMaxGridZ = 65535;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxGridZ) {
    const dim3 grid(unsigned(nb), unsigned(a.n_kv_heads), unsigned(std::min(kMaxGridZ, n_tok - t0)));
    launch_clustered(kernel, grid, dim3(threads), smem(nb), unsigned(nb), s, a, ix, kv, t0);
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
  // The kernel of 8 slices where every context of the step is short, else of 16 (a short context's slices are the same).
  with_kv_type(kv.type, [&]<class E>() {
    with_lane_elems(a.head_dim, [&]<int NE>() {
      if (a.context_class <= kClusterShort) launch_clusters<E, NE, kClusterShortSlices>(a, ix, kv, n_tok, s);
      else launch_clusters<E, NE, kClusterSlices>(a, ix, kv, n_tok, s);
    });
  });
}

}  // namespace ember::cuda
