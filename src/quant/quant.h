// Quantised tensor formats: reference dequantisers, quantisers, and the dot
// products / matrix products the forward pass runs on quantised weights.
//
// Weights stay in their file format in memory (mmapped); every product
// dequantises inside its inner loop. A weight matrix of GGUF shape [k, rows]
// is `rows` rows of `k` elements, each row row_bytes(type, k) bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ember::quant {

// --- Reference conversions -------------------------------------------------
bool can_dequantize(GgmlType t);  // every float and quantised type in types.h except Q8_1/Q8_K-only uses
bool can_quantize(GgmlType t);    // types with a quantiser in quantize_row
// n must be a multiple of type_info(t).block_elems. Throws ember::Error for unsupported types.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

// --- Products on quantised weights -----------------------------------------
// The fast path first converts each activation row once into the format that
// the weight type's dot product consumes (e.g. 8-bit blocks for integer dot
// products), then every weight row is dotted with it.
GgmlType activation_type(GgmlType weight_type);                  // F32 when activations stay float
size_t activation_row_bytes(GgmlType weight_type, int64_t k);   // bytes of one converted activation row
void quantize_activation_row(GgmlType weight_type, const float* x, void* xq, int64_t k);
// False when quantize_activation_row would copy the row unchanged (F32/F16
// weights): callers then pass the float rows straight to matmul_rows.
bool activation_needs_conversion(GgmlType weight_type);

// Y[t * ldy + r] = dot(W row r, activation row t) for r in [r0, r1), t in [0, ntok).
// W: rows of w_stride bytes; xq: ntok converted rows of xq_stride bytes.
// Callers split [0, rows) across threads; this function is single-threaded.
void matmul_rows(GgmlType weight_type, const void* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k,
                 const void* xq, size_t xq_stride, int64_t ntok, float* Y, int64_t ldy);

// Accuracy reference: dot of one weight row with float activations, computed as
// dequantise-then-multiply in float (no activation quantisation).
float vec_dot_f32(GgmlType weight_type, const void* w_row, const float* x, int64_t k);

// The portable path of matmul_rows (same contract): dequantises each weight
// block to float and dots it with the converted activations. matmul_rows uses
// it for types without a SIMD kernel; tests compare the two.
void matmul_rows_scalar(GgmlType weight_type, const void* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k,
                        const void* xq, size_t xq_stride, int64_t ntok, float* Y, int64_t ldy);
// True when matmul_rows has a SIMD kernel for this weight type on this build.
bool has_simd_matmul(GgmlType weight_type);
// Process-wide: matmul_rows takes the portable path for every type while on.
// Tests use it to measure how far two correct summation orders of one model
// drift apart: with 8-bit activations a last-bit difference can move a value
// across a rounding boundary, so whole-model comparisons between backends are
// bounded by that drift, not by float precision.
void use_portable_products(bool on);

}  // namespace ember::quant
