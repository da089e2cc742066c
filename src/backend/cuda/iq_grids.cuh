// The grids of IQ3_XXS, IQ3_S and IQ2_S as the integer products read them
// (int8_dot.cuh, gemv_int8_mma.cu): the compile-time tables of
// quant/iq_grids.h placed in each kernel file's device memory (1, 2 and 8 KB),
// read through the read-only cache. No upload and no pointer to pass: the
// kernels that use them take the same arguments as every other format's.
#pragma once
#include <cstdint>

#include "backend/cuda/dequant.cuh"
#include "quant/iq_grids.h"

namespace ember::cuda {

__device__ constexpr auto kIQ3XXSGridDevice = quant::iq::kIQ3XXSGrid;  // 4 values 4..62 an entry
__device__ constexpr auto kIQ3SGridDevice = quant::iq::kIQ3SGrid;      // 4 values 1..15 an entry
__device__ constexpr auto kIQ2SGridDevice = quant::iq::kIQ2SGrid;      // 8 values 8, 25, 43 an entry

// Four grid values (bytes of g, all below 128) as signed codes: byte j negated
// where bit j of s is set (bits above 3 ignored). The bits are spread to one
// per byte by a multiply whose four shifted copies of s do not overlap.
__device__ __forceinline__ uint32_t signed_codes(uint32_t g, uint32_t s) {
  const uint32_t m = (((s & 0xFu) * 0x00204081u) & 0x01010101u) * 0xFFu;
  return __vsub4(g ^ m, m);  // (g ^ 0xFF) - 0xFF = -g in each negated byte
}

// The sign byte of a 7-bit sign index (quant::iq::ksigns): bit 7 makes the
// number of minus signs even.
__device__ __forceinline__ uint32_t iq_sign_byte(uint32_t i7) { return i7 | ((__popc(i7) & 1u) << 7); }

// A sub-block's integer scale from its 4-bit field ls (higher bits ignored):
// 2 ls + 1, and the block scale d with the format's power of two (grid_d),
// so that d' s equals the dequantisers' d (0.5 + ls) / 2 (IQ3_XXS), d (1 + 2 ls)
// (IQ3_S) and d (0.5 + ls) / 4 (IQ2_S).
__device__ __forceinline__ int grid_scale(uint32_t ls) { return 2 * int(ls & 0xFu) + 1; }
template <GgmlType T>
__device__ __forceinline__ float grid_d(uint16_t d) {
  static_assert(T == GgmlType::IQ3_XXS || T == GgmlType::IQ3_S || T == GgmlType::IQ2_S);
  if constexpr (T == GgmlType::IQ3_XXS) return 0.25f * h2f(d);
  else if constexpr (T == GgmlType::IQ2_S) return 0.125f * h2f(d);
  else return h2f(d);
}

}  // namespace ember::cuda
