// What the tensor-core products (gemv_int8_mma.cu, gemv_float_mma.cu) share
// once their warps have multiplied: adding the eight class sums in class
// order, and where a lane's four sums of an m16n8 tile go.
//
// Both split a row into chunks by class (chunk % 8), sum each class in order
// and add the eight class sums in class order, so a token's result does not
// depend on how many tokens share the step or where it sits among them.
#pragma once

#include <cstdint>

namespace ember::cuda {

constexpr int kMmaClasses = 8;

// A block's per-class partial sums of J tiles: [class][tile][element][lane].
template <int J>
using MmaPartials = float[kMmaClasses][J][4][32];

// After the block's warps have written `partial` (this waits for them): warp
// j < J adds tile j's class sums in class order into `out` and returns true;
// the other warps return false.
template <int J>
__device__ __forceinline__ bool add_class_sums(const MmaPartials<J>& partial, float (&out)[4]) {
  __syncthreads();
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  if (warp >= J) return false;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    float sum = partial[0][warp][e][lane];
#pragma unroll
    for (int c = 1; c < kMmaClasses; ++c) sum = __fadd_rn(sum, partial[c][warp][e][lane]);
    out[e] = sum;
  }
  return true;
}

// Where a lane's four sums go: rows g, g + 8 (from the tile's first row r0)
// and tokens 2q, 2q + 1 of tile j (lane = 4g + q).
__device__ __forceinline__ int64_t out_row(int64_t r0, int e) { return r0 + ((threadIdx.x & 31) >> 2) + 8 * (e / 2); }
__device__ __forceinline__ int out_token(int j, int e) { return 8 * j + 2 * int(threadIdx.x & 3) + e % 2; }

}  // namespace ember::cuda
