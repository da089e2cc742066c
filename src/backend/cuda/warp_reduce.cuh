// Butterfly reductions across the 32 lanes of a warp: every lane gets the result.
#pragma once

namespace ember::cuda {

// The sum within each aligned group of LG lanes (LG a power of two up to 32).
template <int LG, class T>
__device__ __forceinline__ T group_sum(T v) {
#pragma unroll
  for (int o = LG / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  return group_sum<32>(v);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace ember::cuda
