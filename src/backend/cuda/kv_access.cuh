// Reading and writing the paged KV blocks from kernels: element conversions
// for the three KV element types, the address of one position's row, and
// the dispatch of a launch on the element type.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/attention.h"
#include "util/error.h"

namespace ember::cuda {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class E> __device__ __forceinline__ E from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Element 0 of position p's keys (kvsel = 0) or values (kvsel = 1) in this
// sequence's blocks; the table lookup in 32-bit arithmetic.
template <class E>
__device__ __forceinline__ E* kv_at(const KvLayer& kv, const int32_t* table, int p, int kvsel) {
  const int block = table[p / kv.block_size];
  return static_cast<E*>(kv.base) + (int64_t(block) * 2 + kvsel) * kv.half_elems + int64_t(p % kv.block_size) * kv.kv_dim;
}

// Calls f.template operator()<E>() with E the element type of t.
template <class F>
void with_kv_type(KvType t, F&& f) {
  switch (t) {
    case KvType::F32: f.template operator()<float>(); return;
    case KvType::F16: f.template operator()<__half>(); return;
    case KvType::BF16: f.template operator()<__nv_bfloat16>(); return;
  }
  throw Error("CUDA backend: unknown KV element type");
}

}  // namespace ember::cuda
