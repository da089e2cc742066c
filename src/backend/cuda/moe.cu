#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kMaxExperts = 512;
constexpr int kMaxUsed = 32;

// Routing takes a group of kRouteThreads threads (warps 0-3 of its block), thread i holding
// experts i, i + 128, ... (P of them, E <= 128 P): scores, each chosen expert's place found
// at once by counting the scores above its own (ties to the lower index, as the CPU
// reference picks: the order of k rounds of argmax), then the weights' normalisation in
// the descriptor's order. The batched routing and the one-token router share it, so a
// token's choices are the same bits whichever routes it.
constexpr int kRouteThreads = 128;

struct RouteScratch {
  unsigned long long key[kMaxExperts];  // score order, then the lower index: every key distinct
  float part[kRouteThreads / 32];
  double dpart[kRouteThreads / 32];
  int32_t id[kMaxUsed];
  float w[kMaxUsed];
};

// A barrier for the routing threads alone (named barrier 1): the one-token router's other warps have left.
__device__ __forceinline__ void route_barrier() { asm volatile("bar.sync 1, %0;" ::"n"(kRouteThreads) : "memory"); }

// A key that orders scores as floats compare (-0 as +0), then lower indices first. A NaN
// score ranks lowest (only broken logits make one; the CPU's loop, where nothing compares
// above NaN, can pick it instead).
__device__ __forceinline__ unsigned long long route_key(float p, int e) {
  uint32_t u = __float_as_uint(p + 0.f);
  u = p != p ? 0u : (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xFFFFFFFFu - uint32_t(e));
}

template <int P>
__device__ void route_token(const float* x, int E, int K, Routing routing, bool norm_topk, int32_t* id, float* w,
                            RouteScratch& s) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  constexpr int kWarps = kRouteThreads / 32;
  float p[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = tid + kRouteThreads * i;
    p[i] = e < E ? x[e] : -INFINITY;
  }
  if (routing == Routing::SoftmaxTopK) {
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < P; ++i) mx = fmaxf(mx, p[i]);
    mx = warp_max(mx);
    if (lane == 0) s.part[warp] = mx;
    route_barrier();
    mx = s.part[0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) mx = fmaxf(mx, s.part[i]);
    double sum = 0;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      p[i] = tid + kRouteThreads * i < E ? expf(p[i] - mx) : 0.f;
      sum += p[i];
    }
    sum = warp_sum(sum);
    if (lane == 0) s.dpart[warp] = sum;
    route_barrier();
    sum = s.dpart[0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) sum += s.dpart[i];
#pragma unroll
    for (int i = 0; i < P; ++i) p[i] = float(p[i] / sum);
  } else if (routing == Routing::SigmoidTopK) {
#pragma unroll
    for (int i = 0; i < P; ++i) p[i] = 1.f / (1.f + expf(-p[i]));
  }
  unsigned long long key[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = tid + kRouteThreads * i;
    key[i] = route_key(p[i], e);
    if (e < E) s.key[e] = key[i];
  }
  route_barrier();
  // An expert's place is the number of keys above its own; the first K places are the choices.
  int above[P] = {};
  for (int j = 0; j < E; ++j) {
    const unsigned long long kj = s.key[j];
#pragma unroll
    for (int i = 0; i < P; ++i) above[i] += kj > key[i];
  }
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = tid + kRouteThreads * i;
    if (e < E && above[i] < K) {
      s.id[above[i]] = e;
      s.w[above[i]] = p[i];
    }
  }
  route_barrier();
  if (warp != 0) return;
  // Lane j holds the j-th choice's weight; sums in choice order, as the CPU reference adds them.
  float mine = lane < K ? s.w[lane] : 0.f;
  if (routing == Routing::TopKSoftmax) {
    const float mx = __shfl_sync(0xffffffffu, mine, 0);
    mine = expf(mine - mx);
  }
  if (routing == Routing::TopKSoftmax || norm_topk) {
    double sum = 0;
    for (int j = 0; j < K; ++j) sum += __shfl_sync(0xffffffffu, mine, j);
    mine = float(mine / sum);
  }
  if (lane < K) {
    id[lane] = s.id[lane];
    w[lane] = mine;
  }
}

template <int P>
__global__ void __launch_bounds__(kRouteThreads) route_kernel(const float* logits, int E, int K, Routing routing,
                                                              bool norm_topk, int32_t* ids, float* weights) {
  __shared__ RouteScratch s;
  begin_kernel();
  const int64_t t = blockIdx.x;
  route_token<P>(logits + t * E, E, K, routing, norm_topk, ids + t * K, weights + t * K, s);
}

// The router product of one token and its routing in one launch: one thread
// block cluster, a warp per expert row (its sums in gemv's order, so the logits
// are gemv's bits), each logit stored into the first block's shared memory,
// one cluster barrier, then the first block routes. With C > 0 a lane holds
// its C chunks of 32 weights of its first row (rows of at most 1,024 C) and
// loads them before waiting for the kernel before (the router's weights never
// change during a step, launch.cuh), so that only the activations' loads
// follow the wait; C = 0 (longer rows), and a warp's further rows (more than
// 16 Warps experts), load after it. Warps a block: 8, or 16 for more than 128
// experts of rows up to 2,048, so that each warp holds one row through the
// wait (flint-like's 176 experts decoded at the same rate with 8, run 15e).
constexpr int kRouterBlocks = 16;  // beyond the portable 8: the cluster spreads the weights' loads over 16 SMs

template <int P, int C>
constexpr int router_warps() {
  return C == 2 && P > 1 ? 16 : 8;
}

template <GgmlType T, int C>
__device__ __forceinline__ float router_dot(const uint8_t* W, size_t stride, int64_t r, int E, int64_t k, const IqTables& tab,
                                            const float* x) {
  if constexpr (C == 0) {
    begin_kernel();
    if (r >= E) return 0.f;
    const float* xs[1] = {x};
    float acc[1][1];
    rows_dot<T, 1, 1>(W, stride, r, E, k / 32, tab, xs, acc);
    return acc[0][0];
  } else {
    // rows_dot's sums for one row and one activation row, with the weights loaded first.
    const int lane = threadIdx.x & 31;
    const int64_t n_chunks = k / 32;
    const uint8_t* row = W + size_t(min(r, int64_t(E) - 1)) * stride;
    float w[C][32];
#pragma unroll
    for (int i = 0; i < C; ++i)
      if (lane + 32 * i < n_chunks) dequant_chunk<T>(row, lane + 32 * i, tab, w[i]);
    begin_kernel();
    if (r >= E) return 0.f;
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const int64_t c = lane + 32 * i;
      if (c < n_chunks) {
        const float4* xv = reinterpret_cast<const float4*>(x + 32 * c);
        float a = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) a = chunk_fma(w[i], j, xv[j], a);
        acc += a;
      }
    }
    return warp_sum(acc);
  }
}

template <GgmlType T, int P, int C, int Warps>
__global__ void __launch_bounds__(Warps * 32) router_route_kernel(const uint8_t* W, size_t stride, int64_t k,
                                                                  IqTables tab, const float* x, float* logits, int E,
                                                                  int K, Routing routing, bool norm_topk, int32_t* ids,
                                                                  float* weights) {
  __shared__ float gathered[kMaxExperts];
  __shared__ RouteScratch s;
  const cg::cluster_group cl = cg::this_cluster();
  // A block may write into another's shared memory only once that block runs: this
  // barrier's arrival now and its wait before the first write cost nothing in between.
  auto started = cl.barrier_arrive();
  float* into = cl.map_shared_rank(gathered, 0);
  const int lane = threadIdx.x & 31;
  static_assert(Warps * 32 >= kRouteThreads, "the first block's threads route");
  constexpr int kRowsAtOnce = kRouterBlocks * Warps;
  int64_t r = int64_t(blockIdx.x) * Warps + (threadIdx.x >> 5);
  auto put = [&](int64_t row, float logit) {
    into[row] = logit;
    logits[row] = logit;
  };
  const float first = router_dot<T, C>(W, stride, r, E, k, tab, x);
  cl.barrier_wait(std::move(started));
  if (r < E && lane == 0) put(r, first);
  for (r += kRowsAtOnce; r < E; r += kRowsAtOnce) {
    const float* xs[1] = {x};
    float acc[1][1];
    rows_dot<T, 1, 1>(W, stride, r, E, k / 32, tab, xs, acc);
    if (lane == 0) put(r, acc[0][0]);
  }
  cl.sync();  // every logit is in the first block's shared memory
  if (blockIdx.x != 0 || threadIdx.x >= kRouteThreads) return;
  route_token<P>(gathered, E, K, routing, norm_topk, ids, weights, s);
}

// One thread per column of a token's row, the experts summed in choice order.
constexpr int kCombineThreads = 256;

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const float* y, const float* w, int K,
                                                                  int64_t n_cols, float* out, bool add, int64_t t0) {
  begin_kernel();
  const int64_t t = t0 + blockIdx.y, i = int64_t(blockIdx.x) * kCombineThreads + threadIdx.x;
  if (i >= n_cols) return;
  float s = 0.f;
  for (int j = 0; j < K; ++j) s = fmaf(w[t * K + j], y[(t * K + j) * n_cols + i], s);
  float& o = out[t * n_cols + i];
  o = add ? o + s : s;
}

constexpr int kGroupThreads = 1024;

__global__ void __launch_bounds__(kGroupThreads) group_kernel(const int32_t* ids, int64_t n_items, int E, int tile,
                                                              int64_t max_tiles, int32_t* order, int32_t* tiles) {
  __shared__ int count[kMaxExperts], start[kMaxExperts], first_tile[kMaxExperts];
  begin_kernel();
  for (int e = threadIdx.x; e < E; e += kGroupThreads) count[e] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n_items; i += kGroupThreads) atomicAdd(&count[ids[i]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {  // at most 512 experts: a serial scan is short
    int s = 0, t = 0;
    for (int e = 0; e < E; ++e) {
      start[e] = s;
      first_tile[e] = t;
      s += count[e];
      t += (count[e] + tile - 1) / tile;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += kGroupThreads)
    for (int j = 0; j * tile < count[e]; ++j) {
      int32_t* tr = tiles + 3 * int64_t(first_tile[e] + j);
      tr[0] = start[e] + j * tile;
      tr[1] = min(tile, count[e] - j * tile);
      tr[2] = e;
    }
  // The unused tiles: count 0.
  const int used = first_tile[E - 1] + (count[E - 1] + tile - 1) / tile;
  for (int64_t t = used + threadIdx.x; t < max_tiles; t += kGroupThreads) tiles[3 * t + 1] = 0;
  __syncthreads();
  // Scatter: a slot per item within its expert's range (count is reused as the cursor).
  for (int e = threadIdx.x; e < E; e += kGroupThreads) count[e] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n_items; i += kGroupThreads) {
    const int e = ids[i];
    order[start[e] + atomicAdd(&count[e], 1)] = int32_t(i);
  }
}

void check_routing(const ModelDesc& d) {
  if (d.n_experts > kMaxExperts || d.n_experts_used > kMaxUsed || d.n_experts_used > d.n_experts)
    throw Error("CUDA backend: at most 512 experts and 32 used per token");
}

// Calls f.template operator()<P>() with the experts each routing thread holds.
template <class F>
void with_experts_per_thread(int E, F&& f) {
  static_assert(kMaxExperts == 4 * kRouteThreads);
  if (E <= kRouteThreads) f.template operator()<1>();
  else if (E <= 2 * kRouteThreads) f.template operator()<2>();
  else f.template operator()<4>();
}

}  // namespace

int64_t max_expert_tiles(int64_t n_items, int n_experts) {
  // Each expert's last tile may be partial: at most one more tile per expert than the items fill.
  return (n_items + kExpertTile - 1) / kExpertTile + std::min<int64_t>(n_items, n_experts);
}

void group_by_expert(const int32_t* ids, int64_t n_items, int n_experts, int32_t* order, int32_t* tiles, cudaStream_t s) {
  if (n_experts > kMaxExperts) throw Error("CUDA backend: at most 512 experts");
  if (n_items <= 0) return;
  launch(group_kernel, 1, kGroupThreads, 0, s, ids, n_items, n_experts, kExpertTile, max_expert_tiles(n_items, n_experts),
         order, tiles);
}

void route(const ModelDesc& d, const float* logits, int64_t n_tok, int32_t* ids, float* weights, cudaStream_t s) {
  check_routing(d);
  if (n_tok <= 0) return;
  if (n_tok > 0x7FFFFFFF) throw Error("CUDA backend: too many tokens to route in one step");
  with_experts_per_thread(d.n_experts, [&]<int P>() {
    launch(route_kernel<P>, unsigned(n_tok), kRouteThreads, 0, s, logits, d.n_experts, d.n_experts_used, d.routing,
           d.norm_topk, ids, weights);
  });
}

bool routes_in_one_launch(const DeviceMatrix& router) {
  return router.type == GgmlType::F32 || router.type == GgmlType::F16 || router.type == GgmlType::BF16;
}

void route_one_token(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x, float* logits,
                     int32_t* ids, float* weights, cudaStream_t s) {
  check_routing(d);
  if (!routes_in_one_launch(router) || router.rows != d.n_experts || router.k % 32 != 0)
    throw Error("CUDA backend: the one-launch router takes a float router of n_experts rows");
  auto go = [&]<GgmlType T>() {
    with_experts_per_thread(d.n_experts, [&]<int P>() {
      auto with_chunks = [&]<int C>() {
        // Clusters beyond the portable 8 blocks are opted into once per kernel.
        constexpr int W = router_warps<P, C>();
        static const cudaError_t opted =
            cudaFuncSetAttribute(router_route_kernel<T, P, C, W>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        EMBER_CUDA_CHECK(opted);
        launch_clustered(router_route_kernel<T, P, C, W>, kRouterBlocks, W * 32, 0, kRouterBlocks, s, router.data,
                         router.row_stride, router.k, tab, x, logits, d.n_experts, d.n_experts_used, d.routing,
                         d.norm_topk, ids, weights);
      };
      // Chunks of 32 weights per lane held through the wait: rows of up to 2,048 or 4,096.
      if (router.k <= 2048) with_chunks.template operator()<2>();
      else if (router.k <= 4096) with_chunks.template operator()<4>();
      else with_chunks.template operator()<0>();
    });
  };
  if (router.type == GgmlType::F32) go.template operator()<GgmlType::F32>();
  else if (router.type == GgmlType::F16) go.template operator()<GgmlType::F16>();
  else go.template operator()<GgmlType::BF16>();
}

void combine_experts(const float* expert_out, const float* weights, int k, int64_t n_tok, int64_t n_cols, float* out,
                     cudaStream_t s, bool add) {
  if (n_tok <= 0) return;
  by_grid_rows(n_tok, [&](int64_t first, unsigned count) {
    launch(combine_kernel, dim3(unsigned((n_cols + kCombineThreads - 1) / kCombineThreads), count), kCombineThreads, 0, s,
           expert_out, weights, k, n_cols, out, add, first);
  });
}

}  // namespace ember::cuda
