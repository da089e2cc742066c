// The rounding of one 256-element block of activations to int8 (Q8_K, as the
// CPU rounds it), by one warp: shared by the kernels of int8_acts.cu and the
// attention kernel that rounds its own output for wo.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/int8_acts.h"
#include "backend/cuda/warp_reduce.cuh"

namespace ember::cuda {

// Eight consecutive floats at p (32-byte aligned) in two 16-byte loads: a lane's share of a block.
__device__ __forceinline__ void load_eight(const float* p, float (&v)[8]) {
  const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

// Rounds one 256-element block, 8 elements per lane (lane l holds elements
// 8l .. 8l + 7), into its codes (also in the `pairs` order, int8_acts.h), scale
// and group sums.
__device__ __forceinline__ void round_block(const float (&v)[8], int8_t* q, float* d, int32_t* sums, int8_t* pairs) {
  const int lane = threadIdx.x & 31;
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  amax = warp_max(amax);
  // The CPU's expressions exactly: IEEE division, one float multiply, ties to even.
  const float scale = __fdiv_rn(amax, 127.f), inv = amax > 0.f ? __fdiv_rn(127.f, amax) : 0.f;
  int sum = 0;
  uint32_t packed[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int c = max(-127, min(127, __float2int_rn(__fmul_rn(v[i], inv))));
    sum += c;
    packed[i / 4] |= uint32_t(uint8_t(int8_t(c))) << (8 * (i % 4));
  }
  reinterpret_cast<uint2*>(q)[lane] = make_uint2(packed[0], packed[1]);
  *reinterpret_cast<uint2*>(pairs + pairs_position(8 * lane)) = make_uint2(packed[0], packed[1]);
  // Lanes 2g and 2g + 1 hold group g's 16 codes.
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  if ((lane & 1) == 0) sums[lane / 2] = sum;
  if (lane == 0) *d = scale;
}

// Where block j of row t goes.
struct BlockOut {
  int8_t* q;
  float* d;
  int32_t* sums;
  int8_t* pairs;
};
__device__ __forceinline__ BlockOut block_out(const Int8Acts& a, int64_t t, int64_t j) {
  return {const_cast<int8_t*>(a.q) + t * a.k + j * kInt8Block, const_cast<float*>(a.d) + t * (a.k / kInt8Block) + j,
          const_cast<int32_t*>(a.sums) + t * (a.k / kInt8Group) + j * (kInt8Block / kInt8Group),
          const_cast<int8_t*>(a.pairs) + t * a.k + j * kInt8Block};
}

// Rounds one 256-element block in the Q8_0 style (int8_acts.h): eight scales
// of 32 elements, lanes 4b .. 4b + 3 holding scale b's elements; the codes at
// q, the scales at d.
__device__ __forceinline__ void round_block_q8_0(const float (&v)[8], int8_t* q, float* d) {
  const int lane = threadIdx.x & 31;
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  // The CPU's expressions exactly: IEEE division, the scale rounded to half
  // precision (ties to even), the reciprocal of that, one float multiply, ties to even.
  const float dh = __half2float(__float2half_rn(__fdiv_rn(amax, 127.f)));
  const float inv = dh != 0.f ? __fdiv_rn(1.f, dh) : 0.f;
  uint32_t packed[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int c = max(-127, min(127, __float2int_rn(__fmul_rn(v[i], inv))));
    packed[i / 4] |= uint32_t(uint8_t(int8_t(c))) << (8 * (i % 4));
  }
  reinterpret_cast<uint2*>(q)[lane] = make_uint2(packed[0], packed[1]);
  if ((lane & 3) == 0) d[lane >> 2] = dh;
}

// Block j of row t of a, rounded in a's style S by one warp (lane l holding elements 8l .. 8l + 7).
template <Int8Style S>
__device__ __forceinline__ void round_block_to(const float (&v)[8], const Int8Acts& a, int64_t t, int64_t j) {
  if constexpr (S == Int8Style::K) {
    const BlockOut o = block_out(a, t, j);
    round_block(v, o.q, o.d, o.sums, o.pairs);
  } else {
    round_block_q8_0(v, const_cast<int8_t*>(a.q) + t * a.k + j * kInt8Block,
                     const_cast<float*>(a.d) + t * (a.k / scale_elems(S)) + j * (kInt8Block / scale_elems(S)));
  }
}

// Block j of row t rounded from 256 floats in shared memory, by one warp:
// lane l takes elements 8l .. 8l + 7 in two 16-byte loads (eight 4-byte ones
// would be 8-way bank conflicts). The attention kernels round their merged
// output this way.
__device__ __forceinline__ void round_shared_block(const float* row, const Int8Acts& a, int64_t t, int64_t j) {
  float x[8];
  load_eight(row + 8 * (threadIdx.x & 31), x);
  const BlockOut o = block_out(a, t, j);
  round_block(x, o.q, o.d, o.sums, o.pairs);
}

}  // namespace ember::cuda
