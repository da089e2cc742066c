// One warp's dot products of a few rows of a matrix in its file format with
// up to kMaxTile activation rows, in float: the float products (gemv.cu) and
// the one-token router of an MoE layer (moe.cu) sum in this one order.
#pragma once
#include <cstdint>

#include "backend/cuda/dequant.cuh"
#include "backend/cuda/warp_reduce.cuh"

namespace ember::cuda {

constexpr int kMaxTile = 8;  // activation rows one pass multiplies

// a + the j-th four weights of a decoded 32-element chunk times v, in the one
// order every float product sums them (rows_dot, and the MoE router that
// holds its weights through its wait).
__device__ __forceinline__ float chunk_fma(const float (&w)[32], int j, float4 v, float a) {
  a = fmaf(w[4 * j], v.x, a);
  a = fmaf(w[4 * j + 1], v.y, a);
  a = fmaf(w[4 * j + 2], v.z, a);
  return fmaf(w[4 * j + 3], v.w, a);
}

// Four activations as a product with weights of format T reads them: BF16
// weights meet activations rounded to bfloat16 (to nearest, ties to even), as
// the CPU backend's BF16 products (quant::quantize_activation_row) and the
// tensor-core GEMM's do; every other format meets them as they are.
template <GgmlType T>
__device__ __forceinline__ float4 act4(float4 v) {
  if constexpr (T == GgmlType::BF16) {
    auto r = [](float f) { return __bfloat162float(__float2bfloat16_rn(f)); };
    return make_float4(r(v.x), r(v.y), r(v.z), r(v.w));
  } else {
    return v;
  }
}

// The R rows a warp takes (rows past the matrix repeat its last row) and their zeroed sums.
template <int R, int NT>
__device__ __forceinline__ void start_rows(const uint8_t* W, size_t stride, int64_t row0, int64_t rows,
                                           const uint8_t* (&row)[R], float (&acc)[R][NT]) {
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = W + size_t(min(row0 + r, rows - 1)) * stride;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.f;
}

// R rows of W (row0, row0 + 1, ...; rows past the matrix repeat its last row,
// computed and never written) against NT activation rows; acc[r][t] ends in
// lane 0. Each lane decodes the same chunks of R rows, so one load of an
// activation chunk serves R rows: the activations, not the weights, are most
// of what a warp reads through L1. Every row's sums run in the same order
// whatever R and NT are.
template <GgmlType T, int NT, int R>
__device__ __forceinline__ void rows_dot(const uint8_t* W, size_t stride, int64_t row0, int64_t rows, int64_t n_chunks,
                                         const IqTables& tab, const float* const* x, float (&acc)[R][NT]) {
  const int lane = threadIdx.x & 31;
  const uint8_t* row[R];
  start_rows(W, stride, row0, rows, row, acc);
  for (int64_t c = lane; c < n_chunks; c += 32) {
    float w[R][32];
#pragma unroll
    for (int r = 0; r < R; ++r) dequant_chunk<T>(row[r], c, n_chunks, tab, w[r]);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float4* xv = reinterpret_cast<const float4*>(x[t] + 32 * c);
      float a[R];
#pragma unroll
      for (int r = 0; r < R; ++r) a[r] = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 v = act4<T>(xv[j]);
#pragma unroll
        for (int r = 0; r < R; ++r) a[r] = chunk_fma(w[r], j, v, a[r]);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][t] += a[r];
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = warp_sum(acc[r][t]);
}

}  // namespace ember::cuda
