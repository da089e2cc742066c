// Activation rows rounded to int8 for the integer products (gemv_int8.cu):
// per 256 elements one float scale d (amax / 127) and int8 codes, plus the
// sums of each 16 codes. The rounding is the CPU backend's Q8_K rounding
// (quant/quantize.cpp), element for element, so both backends multiply the
// same integers and differ only in the order of their float sums.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "model/descriptor.h"

namespace ember::cuda {

constexpr int kInt8Block = 256;  // elements per scale
constexpr int kInt8Group = 16;   // elements per stored sum

// n rows of k elements (k a multiple of 256): row t's codes at q + t * k, its
// scales at d + t * (k / 256), its group sums at sums + t * (k / 16).
// `pairs` holds the same codes again (row t at pairs + t * k), each 64-element
// group of a block (sub-blocks 2u, 2u + 1 of 32) reordered for the Q4_K and
// Q5_K tensor-core products (gemv_int8_mma.cu): element 32 s + 8 q + i of a block at
// 64 (s / 2) + 16 q + 8 (s % 2) + i, so that the 8 codes its lane q takes from
// each of the two sub-blocks are one 16-byte load, and the four lanes of a
// token read 64 consecutive bytes.
//
// Q8_0, Q4_0 and IQ4_NL weights meet another rounding (Int8Style::Q8_0), as
// the CPU rounds their activations (quant/quantize.cpp q8_0): one scale per 32 elements,
// amax / 127 rounded to half precision, the codes x / that half; d then holds
// k / 32 scales per row (as floats), and there are no sums and no `pairs`.
enum class Int8Style : uint8_t { K, Q8_0 };
constexpr int scale_elems(Int8Style s) { return s == Int8Style::K ? kInt8Block : 32; }

struct Int8Acts {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* sums = nullptr;
  const int8_t* pairs = nullptr;
  int64_t k = 0, n = 0;
  Int8Style style = Int8Style::K;
};

// Where element e (0..255) of a block lies in its `pairs` order.
__host__ __device__ constexpr int pairs_position(int e) {
  return 64 * (e / 64) + 16 * ((e % 32) / 8) + 8 * ((e / 32) % 2) + e % 8;
}

// Device memory for up to max_rows rows of up to max_k elements, laid out as above (either style).
size_t int8_acts_bytes(int64_t max_rows, int64_t max_k);

// The view of dst (int8_acts_bytes(n, k) bytes) for n rows of k elements, k a multiple of 256.
Int8Acts int8_acts_view(int64_t n, int64_t k, void* dst, Int8Style style = Int8Style::K);

// Rounds n rows of X (k floats each, ldx apart) into the memory at dst
// (int8_acts_bytes(n, k) bytes, 16-byte aligned) and returns the view.
Int8Acts quantize_int8_acts(const float* X, int64_t ldx, int64_t n, int64_t k, void* dst, cudaStream_t s,
                            Int8Style style = Int8Style::K);

// One kernel instead of two where the rounded rows are made:
// y row i = rmsnorm(x row (rows ? rows[i] : i)) * w, exactly as rmsnorm_rows
// computes it (rows of k, x rows k apart), and its rounding into dst;
Int8Acts rmsnorm_int8_acts(const float* x, const int32_t* rows, int64_t n, const float* w, float eps, int64_t k,
                           float* y, void* dst, cudaStream_t s, Int8Style style = Int8Style::K);
// h = act(gate) * up exactly as gated_activation computes it (n rows of k), and its rounding into dst.
Int8Acts gated_int8_acts(Activation act, const float* gate, const float* up, float* h, int64_t n, int64_t k, void* dst,
                         cudaStream_t s, Int8Style style = Int8Style::K);

}  // namespace ember::cuda
