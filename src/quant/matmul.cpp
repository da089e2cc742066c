// Products on quantised weights: activation conversion, the portable matmul,
// the float reference dot, and dispatch to the SIMD kernels.
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::quant {

void quantize_row_q8_k(const float* x, void* dst, int64_t n);  // quantize.cpp

namespace {

bool is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

void check_k(GgmlType w, int64_t k, const char* where) {
  const TypeInfo ti = type_info(w);
  if (!ti.known || !can_dequantize(w))
    throw Error(std::string(where) + ": no product for weight type " + type_name(w));
  const int64_t act_block = type_info(activation_type(w)).block_elems;
  if (k <= 0 || k % ti.block_elems != 0 || k % act_block != 0)
    throw Error(std::string(where) + ": row length " + std::to_string(k) + " is not a multiple of the " + ti.name +
                " block size " + std::to_string(ti.block_elems));
}

}  // namespace

GgmlType activation_type(GgmlType w) {
  switch (w) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
      return GgmlType::F32;
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q8_0: case GgmlType::Q8_1: case GgmlType::IQ4_NL:
      return GgmlType::Q8_0;
    default:
      return GgmlType::Q8_K;  // K-quants, IQ types with 256-element blocks
  }
}

size_t activation_row_bytes(GgmlType w, int64_t k) { return row_bytes(activation_type(w), k); }

bool activation_needs_conversion(GgmlType w) { return w != GgmlType::F32 && w != GgmlType::F16; }

void quantize_activation_row(GgmlType w, const float* x, void* xq, int64_t k) {
  check_k(w, k, "quantize_activation_row");
  switch (activation_type(w)) {
    case GgmlType::F32:
      if (w == GgmlType::BF16) {
        // BF16 weights meet activations rounded to bfloat16, as the common CPU
        // engines compute them (their BF16 dot products take BF16 on both sides).
        float* out = static_cast<float*>(xq);
        for (int64_t i = 0; i < k; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
      } else {
        std::memcpy(xq, x, size_t(k) * 4);
      }
      return;
    case GgmlType::Q8_0: quantize_row(GgmlType::Q8_0, x, xq, k); return;
    default: quantize_row_q8_k(x, xq, k); return;
  }
}

float vec_dot_f32(GgmlType w, const void* w_row, const float* x, int64_t k) {
  check_k(w, k, "vec_dot_f32");
  const TypeInfo ti = type_info(w);
  const int64_t chunk = is_float_type(w) ? 256 : ti.block_elems;
  float buf[256];
  double sum = 0;
  const auto* p = static_cast<const uint8_t*>(w_row);
  for (int64_t i = 0; i < k; i += chunk) {
    const int64_t n = std::min<int64_t>(chunk, k - i);
    dequantize_row(w, p + row_bytes(w, i), buf, n);
    for (int64_t j = 0; j < n; ++j) sum += double(buf[j]) * double(x[i + j]);
  }
  return float(sum);
}

// One weight block (block_elems floats in wf) against `ntok` activation rows
// at element offset `off`; adds into acc[t].
static void dot_block_scalar(GgmlType act, const float* wf, int64_t n, int64_t off, const uint8_t* xq,
                             size_t xq_stride, int64_t ntok, double* acc) {
  for (int64_t t = 0; t < ntok; ++t) {
    const uint8_t* xr = xq + size_t(t) * xq_stride;
    if (act == GgmlType::F32) {
      const float* x = reinterpret_cast<const float*>(xr) + off;
      float s = 0;
      for (int64_t j = 0; j < n; ++j) s += wf[j] * x[j];
      acc[t] += s;
    } else if (act == GgmlType::Q8_0) {
      for (int64_t b = 0; b < n; b += 32) {
        BlockQ8_0 xb;
        std::memcpy(&xb, xr + size_t((off + b) / 32) * sizeof(BlockQ8_0), sizeof xb);
        float s = 0;
        for (int j = 0; j < 32; ++j) s += wf[b + j] * float(xb.qs[j]);
        acc[t] += double(s) * double(fp16_to_f32(xb.d));
      }
    } else {
      const auto* xb = reinterpret_cast<const BlockQ8_K*>(xr) + off / 256;
      float s = 0;
      for (int j = 0; j < 256; ++j) s += wf[j] * float(xb->qs[j]);
      acc[t] += double(s) * double(xb->d);
    }
  }
}

void matmul_rows_scalar(GgmlType w, const void* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k,
                        const void* xq, size_t xq_stride, int64_t ntok, float* Y, int64_t ldy) {
  check_k(w, k, "matmul_rows");
  const GgmlType act = activation_type(w);
  const TypeInfo ti = type_info(w);
  // Float weights go in chunks of 256; block types one block at a time (the
  // Q8_K activation block is 256 elements, the same as those weight blocks).
  const int64_t chunk = is_float_type(w) ? std::min<int64_t>(256, k) : ti.block_elems;
  constexpr int kTile = 8;  // tokens sharing one dequantised weight block
  float wf[256];
  double acc[kTile];
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = static_cast<const uint8_t*>(W) + size_t(r) * w_stride;
    for (int64_t t0 = 0; t0 < ntok; t0 += kTile) {
      const int64_t nt = std::min<int64_t>(kTile, ntok - t0);
      for (int64_t t = 0; t < nt; ++t) acc[t] = 0;
      const auto* xt = static_cast<const uint8_t*>(xq) + size_t(t0) * xq_stride;
      for (int64_t i = 0; i < k; i += chunk) {
        const int64_t n = std::min<int64_t>(chunk, k - i);
        dequantize_row(w, row + row_bytes(w, i), wf, n);
        dot_block_scalar(act, wf, n, i, xt, xq_stride, nt, acc);
      }
      for (int64_t t = 0; t < nt; ++t) Y[(t0 + t) * ldy + r] = float(acc[t]);
    }
  }
}

bool has_simd_matmul(GgmlType w) { return detail::simd_kernel(w) != nullptr; }

namespace {
std::atomic<bool> portable_products{false};
}  // namespace

void use_portable_products(bool on) { portable_products.store(on, std::memory_order_relaxed); }

void matmul_rows(GgmlType w, const void* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k, const void* xq,
                 size_t xq_stride, int64_t ntok, float* Y, int64_t ldy) {
  const bool portable = portable_products.load(std::memory_order_relaxed);
  if (auto kernel = detail::simd_kernel(w); kernel && k <= detail::kMaxSimdRow && !portable) {
    check_k(w, k, "matmul_rows");
    kernel(static_cast<const uint8_t*>(W), w_stride, r0, r1, k, static_cast<const uint8_t*>(xq), xq_stride, ntok,
           Y, ldy);
    return;
  }
  matmul_rows_scalar(w, W, w_stride, r0, r1, k, xq, xq_stride, ntok, Y, ldy);
}

}  // namespace ember::quant
