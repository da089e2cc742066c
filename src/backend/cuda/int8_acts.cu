// Rounding activations to int8: one warp per 256-element block, each lane 8 elements.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/int8_acts.h"
#include "backend/cuda/int8_round.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/row_ops.cuh"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kWarps = 4;

size_t align16(size_t b) { return (b + 15) / 16 * 16; }

struct Layout {
  size_t q, d, sums, pairs, end;  // byte offsets of the four arrays, and the bytes they take
};
Layout layout(int64_t rows, int64_t k) {
  Layout l{};
  l.q = 0;
  l.d = align16(size_t(rows * k));
  // Room for either style's scales (int8_acts.h): one per 32 elements.
  l.sums = l.d + align16(size_t(rows * (k / scale_elems(Int8Style::Q8_0))) * sizeof(float));
  l.pairs = l.sums + align16(size_t(rows * (k / kInt8Group)) * sizeof(int32_t));
  l.end = l.pairs + align16(size_t(rows * k));
  return l;
}

// One warp per block of 256 elements.
template <Int8Style S>
__global__ void __launch_bounds__(kWarps * 32) round_kernel(const float* X, int64_t ldx, Int8Acts a) {
  begin_kernel();
  const int64_t b = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t per_row = a.k / kInt8Block;
  if (b >= a.n * per_row) return;
  const int64_t t = b / per_row, j = b % per_row;
  float v[8];
  load_eight(X + t * ldx + j * kInt8Block + 8 * (threadIdx.x & 31), v);
  round_block_to<S>(v, a, t, j);
}

// RMSNorm of a row as rmsnorm_rows computes it, written as floats and rounded:
// block (i, y) takes row i's 256-element blocks [8 y, 8 y + 8), one per warp.
// Each block sums the whole row's squares itself (16 KB from L2 at a width of
// 4,096) rather than one block rounding all of them: a step of one token
// would otherwise round its row on one block, two blocks a warp in turn.
constexpr int kNormWarps = 8;
template <Int8Style S>
__global__ void __launch_bounds__(kNormWarps * 32) rmsnorm_round_kernel(const float* x, const int32_t* rows,
                                                                       const float* w, float eps, float* y, Int8Acts a) {
  // The norm weights never change during a step: the warp's block of them is
  // loaded before waiting for the kernel before (launch.cuh), so that latency
  // overlaps that kernel's tail instead of following it.
  const int lane = threadIdx.x & 31;
  const int64_t j = int64_t(blockIdx.y) * kNormWarps + (threadIdx.x >> 5), blocks = a.k / kInt8Block;
  const int64_t e = j * kInt8Block + 8 * lane;
  float wj[8];
  if (j < blocks)
#pragma unroll
    for (int m = 0; m < 8; ++m) wj[m] = w[e + m];
  begin_kernel();
  const int64_t i = blockIdx.x;
  const float* xr = x + (rows ? int64_t(rows[i]) : i) * a.k;
  const float inv = row_inv_rms<kNormWarps * 32>(xr, a.k, eps);
  if (j >= blocks) return;
  float xs[8];
  load_eight(xr + e, xs);
  float v[8];
#pragma unroll
  for (int m = 0; m < 8; ++m) v[m] = normed(xs[m], inv, wj[m]);
  float4* yo = reinterpret_cast<float4*>(y + i * a.k + e);
  yo[0] = make_float4(v[0], v[1], v[2], v[3]);
  yo[1] = make_float4(v[4], v[5], v[6], v[7]);
  round_block_to<S>(v, a, i, j);
}

// h = act(gate) * up as gated_activation computes it, written and rounded; one warp per block.
template <Int8Style S>
__global__ void __launch_bounds__(kWarps * 32) gated_round_kernel(Activation act, const float* g, const float* u,
                                                                 float* h, Int8Acts a) {
  begin_kernel();
  const int64_t b = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t per_row = a.k / kInt8Block;
  if (b >= a.n * per_row) return;
  const int64_t t = b / per_row, j = b % per_row;
  const int64_t e = t * a.k + j * kInt8Block + 8 * (threadIdx.x & 31);
  float v[8];
#pragma unroll
  for (int m = 0; m < 8; ++m) v[m] = gated(act, g[e + m], u[e + m]);
  float4* ho = reinterpret_cast<float4*>(h + e);
  ho[0] = make_float4(v[0], v[1], v[2], v[3]);
  ho[1] = make_float4(v[4], v[5], v[6], v[7]);
  round_block_to<S>(v, a, t, j);
}

unsigned warp_blocks(const Int8Acts& a) { return unsigned((a.n * (a.k / kInt8Block) + kWarps - 1) / kWarps); }

// Calls f.template operator()<S>() with S the style s names.
template <class F>
void with_style(Int8Style s, F&& f) {
  if (s == Int8Style::K) f.template operator()<Int8Style::K>();
  else f.template operator()<Int8Style::Q8_0>();
}

}  // namespace

Int8Acts int8_acts_view(int64_t n, int64_t k, void* dst, Int8Style style) {
  if (k % kInt8Block != 0)
    throw Error("CUDA backend: int8 activations need rows of whole 256-element blocks, not " + std::to_string(k));
  const Layout l = layout(n, k);
  auto* base = static_cast<uint8_t*>(dst);
  Int8Acts a;
  a.q = reinterpret_cast<int8_t*>(base + l.q);
  a.d = reinterpret_cast<float*>(base + l.d);
  a.sums = reinterpret_cast<int32_t*>(base + l.sums);
  a.pairs = reinterpret_cast<int8_t*>(base + l.pairs);
  a.k = k;
  a.n = n;
  a.style = style;
  if (style == Int8Style::Q8_0) a.sums = nullptr, a.pairs = nullptr;  // this style has neither
  return a;
}

size_t int8_acts_bytes(int64_t max_rows, int64_t max_k) {
  const int64_t k = (max_k + kInt8Block - 1) / kInt8Block * kInt8Block;
  return layout(max_rows, k).end;
}

Int8Acts quantize_int8_acts(const float* X, int64_t ldx, int64_t n, int64_t k, void* dst, cudaStream_t s,
                            Int8Style style) {
  const Int8Acts a = int8_acts_view(n, k, dst, style);
  if (n <= 0) return a;
  with_style(style, [&]<Int8Style S>() { launch(round_kernel<S>, warp_blocks(a), kWarps * 32, 0, s, X, ldx, a); });
  return a;
}

Int8Acts rmsnorm_int8_acts(const float* x, const int32_t* rows, int64_t n, const float* w, float eps, int64_t k,
                           float* y, void* dst, cudaStream_t s, Int8Style style) {
  const Int8Acts a = int8_acts_view(n, k, dst, style);
  if (n <= 0) return a;
  const unsigned groups = unsigned((k / kInt8Block + kNormWarps - 1) / kNormWarps);
  with_style(style, [&]<Int8Style S>() {
    launch(rmsnorm_round_kernel<S>, dim3(unsigned(n), groups), kNormWarps * 32, 0, s, x, rows, w, eps, y, a);
  });
  return a;
}

Int8Acts gated_int8_acts(Activation act, const float* gate, const float* up, float* h, int64_t n, int64_t k, void* dst,
                         cudaStream_t s, Int8Style style) {
  const Int8Acts a = int8_acts_view(n, k, dst, style);
  if (n <= 0) return a;
  with_style(style, [&]<Int8Style S>() { launch(gated_round_kernel<S>, warp_blocks(a), kWarps * 32, 0, s, act, gate, up, h, a); });
  return a;
}

}  // namespace ember::cuda
