#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/int8_round.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/row_ops.cuh"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

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

// The router product of one token and its routing in one launch, spread over
// ceil(E / 8) blocks of 8 warps, a warp per expert row (its sums in gemv's
// order, so the logits are gemv's bits). Each block stages the input row in
// its shared memory; with a RouterNorm it first computes that row itself, the
// RMSNorm of the residual stream as rmsnorm_round_kernel does (the same block
// size, so the same sums), and blocks take turns writing it out and rounding
// it to int8 for the experts' products: the norm costs no launch of its own.
// A lane holds its first C chunks of 32 weights (C = 2 for rows up to 2,048, 4
// beyond; further chunks load after the wait), and the norm weights, from
// before waiting for the kernel before (they never change during a step,
// launch.cuh). Each block then writes its logits and counts itself done; the
// block that finishes last reads every logit back and routes (argmax.cu's way
// of finishing: no cluster, whose blocks are placed only where a group of SMs
// is free as a whole, run 17c).
constexpr int kRouterWarps = 8;
constexpr int kRouterThreads = kRouterWarps * 32;  // also the norm's block: rmsnorm_round_kernel's sums
constexpr int64_t kMaxRouterK = 8192;              // the staged row: 32 KB of shared memory
constexpr int64_t kMaxNormedK = 2 * 8 * kRouterThreads;  // the norm weights a thread holds: two passes of 8

// Chunk c's eight float4s sit rotated by c & 7 in the staged row, so that a
// warp's 32 lanes reading float4 j of chunks lane, lane + 32, ... meet every
// bank (4 wavefronts a load where the plain layout takes 32).
__device__ __forceinline__ int64_t staged_slot(int64_t q) { return (q & ~int64_t(7)) | ((q ^ (q >> 3)) & 7); }

template <GgmlType T>
__device__ __forceinline__ float staged_chunk_dot(const float (&w)[32], const float4* xs, int64_t c) {
  float a = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) a = chunk_fma(w, j, act4<T>(xs[staged_slot(8 * c + j)]), a);
  return a;
}

template <GgmlType T, int P, int C>
__global__ void __launch_bounds__(kRouterThreads) router_route_kernel(const uint8_t* W, size_t stride, int64_t k,
                                                                      IqTables tab, const float* x, RouterNorm norm,
                                                                      float* logits, int E, int K, Routing routing,
                                                                      bool norm_topk, int32_t* ids, float* weights,
                                                                      unsigned* arrivals) {
  extern __shared__ float4 staged[];
  __shared__ float gathered[kMaxExperts];
  __shared__ RouteScratch s;
  __shared__ bool last;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kRouterWarps + (threadIdx.x >> 5), n_chunks = k / 32;
  const uint8_t* row = W + size_t(min(r, int64_t(E) - 1)) * stride;
  float w[C][32];
#pragma unroll
  for (int i = 0; i < C; ++i)
    if (lane + 32 * i < n_chunks) dequant_chunk<T>(row, lane + 32 * i, n_chunks, tab, w[i]);
  // Pass p of the norm: thread t takes elements 8t .. 8t + 7 of [2,048 p, 2,048 (p + 1)), as
  // rmsnorm_round_kernel's warp j takes 256-element block j.
  const bool normed_here = norm.x != nullptr;
  float g[2][8];
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const int64_t e = p * 8 * kRouterThreads + 8 * threadIdx.x;
    if (normed_here && e < k) load_eight(norm.w + e, g[p]);
  }
  begin_kernel();
  if (normed_here) {
    const float inv = row_inv_rms<kRouterThreads>(norm.x, k, norm.eps);
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int64_t e = p * 8 * kRouterThreads + 8 * threadIdx.x;
      if (e >= k) break;
      float v[8];
      load_eight(norm.x + e, v);
#pragma unroll
      for (int m = 0; m < 8; ++m) v[m] = normed(v[m], inv, g[p][m]);
      const float4 lo = make_float4(v[0], v[1], v[2], v[3]), hi = make_float4(v[4], v[5], v[6], v[7]);
      staged[staged_slot(e / 4)] = lo;
      staged[staged_slot(e / 4 + 1)] = hi;
      if (p % int(gridDim.x) == int(blockIdx.x)) {  // this block writes pass p out
        reinterpret_cast<float4*>(norm.y + e)[0] = lo;
        reinterpret_cast<float4*>(norm.y + e)[1] = hi;
        if (norm.acts.q) {
          const BlockOut o = block_out(norm.acts, 0, e / kInt8Block);
          round_block(v, o.q, o.d, o.sums, o.pairs);
        }
      }
    }
  } else {
    for (int64_t q = threadIdx.x; q < k / 4; q += kRouterThreads) staged[staged_slot(q)] = reinterpret_cast<const float4*>(x)[q];
  }
  __syncthreads();
  if (r < E) {
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < C; ++i)
      if (lane + 32 * i < n_chunks) acc += staged_chunk_dot<T>(w[i], staged, lane + 32 * i);
    for (int64_t c = lane + 32 * C; c < n_chunks; c += 32) {
      float wc[32];
      dequant_chunk<T>(row, c, n_chunks, tab, wc);
      acc += staged_chunk_dot<T>(wc, staged, c);
    }
    acc = warp_sum(acc);
    if (lane == 0) {
      logits[r] = acc;
      __threadfence();  // the logit visible before the block counts itself done
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(arrivals, 1) == gridDim.x - 1;
    if (last) {
      *arrivals = 0;  // ready for the next launch
      __threadfence();  // and the last block sees every logit before its threads read them
    }
  }
  __syncthreads();
  if (!last) return;
  for (int e = threadIdx.x; e < E; e += kRouterThreads) gathered[e] = __ldcg(logits + e);
  __syncthreads();
  if (threadIdx.x >= kRouteThreads) return;
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

int64_t max_expert_tiles(int64_t n_items, int n_experts, int tile_items) {
  if (tile_items < 1) throw Error("CUDA backend: expert tiles of at least one item");
  // Each expert's last tile may be partial: at most one more tile per expert than the items fill.
  return (n_items + tile_items - 1) / tile_items + std::min<int64_t>(n_items, n_experts);
}

void group_by_expert(const int32_t* ids, int64_t n_items, int n_experts, int32_t* order, int32_t* tiles, cudaStream_t s,
                     int tile_items) {
  if (n_experts > kMaxExperts) throw Error("CUDA backend: at most 512 experts");
  if (n_items <= 0) return;
  launch(group_kernel, 1, kGroupThreads, 0, s, ids, n_items, n_experts, tile_items,
         max_expert_tiles(n_items, n_experts, tile_items), order, tiles);
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
  return (router.type == GgmlType::F32 || router.type == GgmlType::F16 || router.type == GgmlType::BF16) &&
         router.k % 32 == 0 && router.k <= kMaxRouterK;
}

bool norms_in_router(const DeviceMatrix& router) {
  return routes_in_one_launch(router) && router.k % kInt8Block == 0 && router.k <= kMaxNormedK;
}

namespace {

void launch_router(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x,
                   const RouterNorm& norm, float* logits, int32_t* ids, float* weights, unsigned* arrivals, cudaStream_t s) {
  check_routing(d);
  if (!routes_in_one_launch(router) || router.rows != d.n_experts)
    throw Error("CUDA backend: the one-launch router takes a float router of n_experts rows, rows of at most 8,192");
  const unsigned blocks = unsigned((d.n_experts + kRouterWarps - 1) / kRouterWarps);
  const size_t smem = size_t(router.k) * sizeof(float);
  auto go = [&]<GgmlType T>() {
    with_experts_per_thread(d.n_experts, [&]<int P>() {
      auto with_chunks = [&]<int C>() {
        launch(router_route_kernel<T, P, C>, blocks, kRouterThreads, smem, s, router.data, router.row_stride, router.k, tab,
               x, norm, logits, d.n_experts, d.n_experts_used, d.routing, d.norm_topk, ids, weights, arrivals);
      };
      // Chunks of 32 weights a lane holds through the wait: all of rows up to 2,048 or 4,096.
      if (router.k <= 2048) with_chunks.template operator()<2>();
      else with_chunks.template operator()<4>();
    });
  };
  if (router.type == GgmlType::F32) go.template operator()<GgmlType::F32>();
  else if (router.type == GgmlType::F16) go.template operator()<GgmlType::F16>();
  else go.template operator()<GgmlType::BF16>();
}

}  // namespace

void route_one_token(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x, float* logits,
                     int32_t* ids, float* weights, unsigned* arrivals, cudaStream_t s) {
  launch_router(d, router, tab, x, RouterNorm{}, logits, ids, weights, arrivals, s);
}

void norm_and_route_one_token(const ModelDesc& d, const RouterNorm& norm, const DeviceMatrix& router, const IqTables& tab,
                              float* logits, int32_t* ids, float* weights, unsigned* arrivals, cudaStream_t s) {
  if (!norms_in_router(router) || !norm.x || !norm.w || !norm.y)
    throw Error("CUDA backend: the router's norm takes rows of whole 256-element blocks, at most 4,096");
  if (norm.acts.q && (norm.acts.k != router.k || norm.acts.n < 1))
    throw Error("CUDA backend: the router's norm rounds into int8 activations of its row's width");
  launch_router(d, router, tab, nullptr, norm, logits, ids, weights, arrivals, s);
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
