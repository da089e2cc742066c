#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kMaxExperts = 512;
constexpr int kMaxUsed = 32;

// One warp per token, lane l holding experts l, l + 32, ... (P of them, E <=
// 32 P): scores, then k rounds of a warp-wide argmax (ties to the lower index,
// as the CPU reference picks), then the weights' normalisation in the
// descriptor's order.
constexpr int kRouteWarps = 4;

// One full warp routes the token whose router logits are at x (read past L1:
// in the one-launch router, other blocks have just written them).
template <int kPerLane>
__device__ void route_token(const float* x, int E, int K, Routing routing, bool norm_topk, int32_t* id, float* w) {
  const int lane = threadIdx.x & 31;
  float p[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    p[i] = e < E ? __ldcg(x + e) : -INFINITY;
  }
  if (routing == Routing::SoftmaxTopK) {
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) mx = fmaxf(mx, p[i]);
    mx = warp_max(mx);
    double sum = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      p[i] = lane + 32 * i < E ? expf(p[i] - mx) : 0.f;
      sum += p[i];
    }
    sum = warp_sum(sum);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p[i] = lane + 32 * i < E ? float(p[i] / sum) : -INFINITY;
  } else if (routing == Routing::SigmoidTopK) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p[i] = lane + 32 * i < E ? 1.f / (1.f + expf(-p[i])) : -INFINITY;
  }
  // Lane j keeps the j-th choice's weight: the normalisation below reads
  // registers, not the global stores it just made (a chain of reloads).
  float mine = 0.f;
  uint32_t taken = 0;  // bit i: this lane's expert lane + 32 i is chosen
  for (int j = 0; j < K; ++j) {
    float best = 0.f;
    int best_e = -1;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      if (e < E && !((taken >> i) & 1) && (best_e < 0 || p[i] > best)) {
        best = p[i];
        best_e = e;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (oe >= 0 && (best_e < 0 || ob > best || (ob == best && oe < best_e))) {
        best = ob;
        best_e = oe;
      }
    }
    if ((best_e & 31) == lane) taken |= 1u << (best_e >> 5);
    if (lane == j) {
      id[j] = best_e;
      mine = best;
    }
  }
  // Sums in choice order, as the CPU reference adds them; every lane forms the same sum.
  if (routing == Routing::TopKSoftmax) {
    const float mx = __shfl_sync(0xffffffffu, mine, 0);
    mine = expf(mine - mx);
  }
  if (routing == Routing::TopKSoftmax || norm_topk) {
    double sum = 0;
    for (int j = 0; j < K; ++j) sum += __shfl_sync(0xffffffffu, mine, j);
    mine = float(mine / sum);
  }
  if (lane < K) w[lane] = mine;
}

template <int P>
__global__ void route_kernel(const float* logits, int64_t n_tok, int E, int K, Routing routing, bool norm_topk,
                             int32_t* ids, float* weights) {
  begin_kernel();
  const int64_t t = int64_t(blockIdx.x) * kRouteWarps + (threadIdx.x >> 5);
  if (t >= n_tok) return;
  route_token<P>(logits + t * E, E, K, routing, norm_topk, ids + t * K, weights + t * K);
}

// The router product of one token, a warp per expert (its sums in gemv's
// order, so the logits are gemv's bits), then the routing in the block that
// finishes last: one launch and no wait between the two. With C > 0 a lane
// holds its C chunks of 32 weights (rows of at most 1,024 C) and loads them
// before waiting for the kernel before (the router's weights never change
// during a step, launch.cuh), so that only the activations' loads follow the
// wait; C = 0 (longer rows) loads them after it.
constexpr int kRouterWarps = 4;

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

template <GgmlType T, int P, int C>
__global__ void __launch_bounds__(kRouterWarps * 32) router_route_kernel(const uint8_t* W, size_t stride, int64_t k,
                                                                         IqTables tab, const float* x, float* logits,
                                                                         int E, int K, Routing routing, bool norm_topk,
                                                                         int32_t* ids, float* weights, int32_t* done) {
  __shared__ bool last;
  const int64_t r = int64_t(blockIdx.x) * kRouterWarps + (threadIdx.x >> 5);
  const float logit = router_dot<T, C>(W, stride, r, E, k, tab, x);
  if (r < E && (threadIdx.x & 31) == 0) logits[r] = logit;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // the block's logits (ordered before by the barrier) visible before it counts itself done
    last = atomicAdd(done, 1) == int(gridDim.x) - 1;
    if (last) __threadfence();  // and the last block sees every block's logits before its warp reads them
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;
  route_token<P>(logits, E, K, routing, norm_topk, ids, weights);
  if (threadIdx.x == 0) *done = 0;  // ready for the next layer's launch
}

// One thread per column of a token's row, the experts summed in choice order.
constexpr int kCombineThreads = 256;

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const float* y, const float* w, int K,
                                                                  int64_t n_cols, float* out, bool add) {
  begin_kernel();
  const int64_t t = blockIdx.y, i = int64_t(blockIdx.x) * kCombineThreads + threadIdx.x;
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

// Calls f.template operator()<P>() with the experts each lane holds.
template <class F>
void with_experts_per_lane(int E, F&& f) {
  if (E <= 128) f.template operator()<4>();
  else if (E <= 256) f.template operator()<8>();
  else f.template operator()<kMaxExperts / 32>();
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
  with_experts_per_lane(d.n_experts, [&]<int P>() {
    launch(route_kernel<P>, unsigned((n_tok + kRouteWarps - 1) / kRouteWarps), kRouteWarps * 32, 0, s, logits, n_tok,
           d.n_experts, d.n_experts_used, d.routing, d.norm_topk, ids, weights);
  });
}

bool routes_in_one_launch(const DeviceMatrix& router) {
  return router.type == GgmlType::F32 || router.type == GgmlType::F16 || router.type == GgmlType::BF16;
}

void route_one_token(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x, float* logits,
                     int32_t* ids, float* weights, int32_t* done, cudaStream_t s) {
  check_routing(d);
  if (!routes_in_one_launch(router) || router.rows != d.n_experts || router.k % 32 != 0)
    throw Error("CUDA backend: the one-launch router takes a float router of n_experts rows");
  const unsigned blocks = unsigned((d.n_experts + kRouterWarps - 1) / kRouterWarps);
  auto go = [&]<GgmlType T>() {
    with_experts_per_lane(d.n_experts, [&]<int P>() {
      auto with_chunks = [&]<int C>() {
        launch(router_route_kernel<T, P, C>, blocks, kRouterWarps * 32, 0, s, router.data, router.row_stride, router.k,
               tab, x, logits, d.n_experts, d.n_experts_used, d.routing, d.norm_topk, ids, weights, done);
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
  if (n_tok > 65535) throw Error("CUDA backend: the experts' weighted sum takes at most 65,535 tokens a step");
  launch(combine_kernel, dim3(unsigned((n_cols + kCombineThreads - 1) / kCombineThreads), unsigned(n_tok)),
         kCombineThreads, 0, s, expert_out, weights, k, n_cols, out, add);
}

}  // namespace ember::cuda
