// Rounding activations to int8: one warp per 256-element block, each lane 8 elements.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/int8_acts.h"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kWarps = 4;

size_t align16(size_t b) { return (b + 15) / 16 * 16; }

struct Layout {
  size_t q, d, sums;  // byte offsets of the three arrays
};
Layout layout(int64_t rows, int64_t k) {
  Layout l{};
  l.q = 0;
  l.d = align16(size_t(rows * k));
  l.sums = l.d + align16(size_t(rows * (k / kInt8Block)) * sizeof(float));
  return l;
}

__global__ void __launch_bounds__(kWarps * 32) quantize_kernel(const float* X, int64_t ldx, int64_t k, int64_t blocks,
                                                              int8_t* q, float* d, int32_t* sums) {
  const int64_t b = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t per_row = k / kInt8Block;
  if (b >= blocks) return;
  const int64_t t = b / per_row, j = b % per_row;
  const int lane = threadIdx.x & 31;
  const float4* x = reinterpret_cast<const float4*>(X + t * ldx + j * kInt8Block + 8 * lane);
  const float4 v0 = x[0], v1 = x[1];
  const float v[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
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
  reinterpret_cast<uint2*>(q + t * k + j * kInt8Block)[lane] = make_uint2(packed[0], packed[1]);
  // Lanes 2g and 2g + 1 hold group g's 16 codes.
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  if ((lane & 1) == 0) sums[t * (k / kInt8Group) + j * (kInt8Block / kInt8Group) + lane / 2] = sum;
  if (lane == 0) d[t * per_row + j] = scale;
}

}  // namespace

size_t int8_acts_bytes(int64_t max_rows, int64_t max_k) {
  const int64_t k = (max_k + kInt8Block - 1) / kInt8Block * kInt8Block;
  return layout(max_rows, k).sums + align16(size_t(max_rows * (k / kInt8Group)) * sizeof(int32_t));
}

Int8Acts quantize_int8_acts(const float* X, int64_t ldx, int64_t n, int64_t k, void* dst, cudaStream_t s) {
  if (k % kInt8Block != 0)
    throw Error("CUDA backend: int8 activations need rows of whole 256-element blocks, not " + std::to_string(k));
  const Layout l = layout(n, k);
  auto* base = static_cast<uint8_t*>(dst);
  Int8Acts a;
  a.q = reinterpret_cast<int8_t*>(base + l.q);
  a.d = reinterpret_cast<float*>(base + l.d);
  a.sums = reinterpret_cast<int32_t*>(base + l.sums);
  a.k = k;
  a.n = n;
  if (n <= 0) return a;
  const int64_t blocks = n * (k / kInt8Block);
  quantize_kernel<<<unsigned((blocks + kWarps - 1) / kWarps), kWarps * 32, 0, s>>>(
      X, ldx, k, blocks, const_cast<int8_t*>(a.q), const_cast<float*>(a.d), const_cast<int32_t*>(a.sums));
  EMBER_CUDA_LAUNCHED("quantize_int8_acts");
  return a;
}

}  // namespace ember::cuda
