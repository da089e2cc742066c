// Per-row arithmetic shared by the kernels that compute it (elementwise.cu)
// and those that fuse it with the int8 rounding (int8_acts.cu), so both give
// the same bits.
#pragma once
#include <cstdint>

#include "backend/cuda/warp_reduce.cuh"
#include "model/descriptor.h"

namespace ember::cuda {

// Sum over a block of Threads threads, returned to every thread.
template <int Threads>
__device__ float block_sum(float v) {
  __shared__ float part[Threads / 32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < Threads / 32; ++i) s += part[i];
  __syncthreads();  // part may be reused by the next call
  return s;
}

// 1 / rms(x) over n floats, every thread of the block taking its share. The
// row was just written by the kernel before, so its loads go to L2: a thread
// issues four 16-byte loads before the sums that wait for them (one round trip
// for a row of 4,096 at 256 threads, where a float at a time took four).
template <int Threads>
__device__ float row_inv_rms(const float* x, int64_t n, float eps) {
  float ss = 0.f;
  if (n % 4 == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int64_t n4 = n / 4;
    for (int64_t i = threadIdx.x; i < n4; i += 4 * Threads) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = i + u * Threads < n4 ? x4[i + u * Threads] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        ss = fmaf(v[u].x, v[u].x, ss);
        ss = fmaf(v[u].y, v[u].y, ss);
        ss = fmaf(v[u].z, v[u].z, ss);
        ss = fmaf(v[u].w, v[u].w, ss);
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += Threads) ss = fmaf(x[i], x[i], ss);
  }
  return rsqrtf(block_sum<Threads>(ss) / float(n) + eps);
}

__device__ __forceinline__ float normed(float x, float inv, float w) { return x * inv * w; }

__device__ __forceinline__ float gated(Activation a, float g, float u) {
  if (a == Activation::SiLU) return g / (1.f + expf(-g)) * u;
  return 0.5f * g * (1.f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
}

}  // namespace ember::cuda
