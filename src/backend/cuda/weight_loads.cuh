// Loads of weight bytes that skip L1. A step reads each weight once, but
// every block of 16 rows of the tensor-core products reads all of the step's
// activations again (from L1 where they still are, else from L2): weights
// loaded without allocating in L1 stream past it and leave it to the
// activations. Measured on an H100 (bench/RESULTS.md, session 23): BF16's
// product +8% at 8 tokens and +12% at 16, F16's +10% at 16 and +38% at 64,
// Q8_0's integer product +6% at 8 tokens; the integer products of Q4_K, Q4_0
// and IQ4_XS lost 3-16% with them, Q6_K's was unchanged, so those keep plain
// loads. The weights do not change while a kernel runs, so the non-coherent
// path is safe.
#pragma once

#include <cstdint>

namespace ember::cuda {

template <class V>
__device__ __forceinline__ V load_weights(const uint8_t* p);

template <>
__device__ __forceinline__ uint4 load_weights<uint4>(const uint8_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
template <>
__device__ __forceinline__ uint2 load_weights<uint2>(const uint8_t* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

}  // namespace ember::cuda
