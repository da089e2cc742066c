// Internal: the signature shared by the SIMD matmul kernels, and their lookup.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ember::quant::detail {

using MatmulKernel = void (*)(const uint8_t* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k,
                              const uint8_t* xq, size_t xq_stride, int64_t ntok, float* Y, int64_t ldy);

// Longest row the SIMD kernels take (their per-tile scratch lives on the stack);
// longer rows use the portable path.
constexpr int64_t kMaxSimdRow = 65536;

// The AVX2 kernel for a weight type, or nullptr (also on builds without AVX2).
MatmulKernel avx2_kernel(GgmlType weight_type);
// The NEON kernel for a weight type, or nullptr (also on builds for other CPUs).
MatmulKernel neon_kernel(GgmlType weight_type);

// This build's SIMD kernel for a weight type, or nullptr: the portable path.
inline MatmulKernel simd_kernel(GgmlType weight_type) {
  if (MatmulKernel k = avx2_kernel(weight_type)) return k;
  return neon_kernel(weight_type);
}

}  // namespace ember::quant::detail
