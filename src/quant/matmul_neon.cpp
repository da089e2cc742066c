// NEON kernels for matmul_rows (AArch64). Same contract and shapes as the AVX2
// kernels: one weight row against a tile of up to 4 activation rows, so each
// weight block is unpacked once per tile. Integer products use the SDOT
// instruction where the target has it (Armv8.2 dot product; -march=native on
// such a core) and widening multiplies with pairwise accumulation otherwise.
#include "quant/kernels.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "util/fp16.h"

namespace ember::quant::detail {
namespace {

// acc + the dot products of each group of four int8 lanes of a and b.
inline int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, a, b);
#else
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

inline float h2f(uint16_t h) { return fp16_to_f32(h); }

constexpr int kTile = 4;

// Activation block i of token t in a tile of Q8_K rows `xs` bytes apart.
inline const BlockQ8_K* q8k(const uint8_t* x, size_t xs, int t, int64_t i) {
  return reinterpret_cast<const BlockQ8_K*>(x + size_t(t) * xs) + i;
}

template <class K>
void run(const uint8_t* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k, const uint8_t* xq, size_t xs,
         int64_t ntok, float* Y, int64_t ldy) {
  float out[kTile];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = W + size_t(r) * w_stride;
    for (int64_t t = 0; t < ntok; t += kTile) {
      const int nt = int(std::min<int64_t>(kTile, ntok - t));
      const uint8_t* x = xq + size_t(t) * xs;
      switch (nt) {
        case 1: K::template dot<1>(row, x, xs, k, out); break;
        case 2: K::template dot<2>(row, x, xs, k, out); break;
        case 3: K::template dot<3>(row, x, xs, k, out); break;
        default: K::template dot<4>(row, x, xs, k, out); break;
      }
      for (int i = 0; i < nt; ++i) Y[(t + i) * ldy + r] = out[i];
    }
  }
}

// 32-element blocks against Q8_0 activations: Unpack gives the block's 32
// signed weights (codes, before the block scale).
struct UnpackQ8_0 {
  static void get(const BlockQ8_0& b, int8x16_t& w0, int8x16_t& w1) {
    w0 = vld1q_s8(b.qs);
    w1 = vld1q_s8(b.qs + 16);
  }
};
struct UnpackQ4_0 {  // element j in the low nibble of qs[j], element 16 + j in its high nibble; q - 8
  static void get(const BlockQ4_0& b, int8x16_t& w0, int8x16_t& w1) {
    const uint8x16_t q = vld1q_u8(b.qs);
    w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), vdupq_n_s8(8));
    w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
  }
};
struct UnpackIQ4NL {  // the same nibbles, looked up in the 16-entry value table
  static void get(const BlockIQ4_NL& b, int8x16_t& w0, int8x16_t& w1) {
    const int8x16_t table = vld1q_s8(iq::kIQ4NLValues);
    const uint8x16_t q = vld1q_u8(b.qs);
    w0 = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F)));
    w1 = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
  }
};

template <class Block, class Unpack>
struct Small {
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out) {
    float32x4_t acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.f);
    const auto* blocks = reinterpret_cast<const Block*>(w);
    for (int64_t i = 0; i < k / 32; ++i) {
      int8x16_t w0, w1;
      Unpack::get(blocks[i], w0, w1);
      const float dw = h2f(blocks[i].d);
      for (int t = 0; t < NT; ++t) {
        const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + size_t(t) * xs) + i;
        const int32x4_t s = dot4(dot4(vdupq_n_s32(0), w0, vld1q_s8(xb->qs)), w1, vld1q_s8(xb->qs + 16));
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(s), dw * h2f(xb->d));
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
  }
};

// Q4_K / Q5_K against Q8_K: unsigned codes times signed activations per group
// of 32, times the group's 6-bit scale; the mins go through the activation's
// group sums (bsums).
template <class Block, bool kFifthBit>
struct K4Bit {
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out) {
    float sum[NT] = {};
    const auto* blocks = reinterpret_cast<const Block*>(w);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int64_t i = 0; i < k / 256; ++i) {
      const Block& b = blocks[i];
      uint8_t sc[8], mn[8];
      for (int g = 0; g < 8; ++g) k4_scale_min(g, b.scales, sc[g], mn[g]);
      int32x4_t isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = vdupq_n_s32(0);
      for (int c = 0; c < 4; ++c) {  // bytes qs[32c..32c+31]: group 2c in the low nibbles, 2c + 1 in the high
        const uint8x16_t q0 = vld1q_u8(b.qs + 32 * c), q1 = vld1q_u8(b.qs + 32 * c + 16);
        uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4), hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
        if constexpr (kFifthBit) {  // bit g of qh[l] is bit 4 of element l of group g
          const uint8x16_t h0 = vld1q_u8(b.qh), h1 = vld1q_u8(b.qh + 16), bit4 = vdupq_n_u8(0x10);
          const int8x16_t sl = vdupq_n_s8(int8_t(4 - 2 * c)), sh = vdupq_n_s8(int8_t(3 - 2 * c));
          lo0 = vorrq_u8(lo0, vandq_u8(vshlq_u8(h0, sl), bit4));
          lo1 = vorrq_u8(lo1, vandq_u8(vshlq_u8(h1, sl), bit4));
          hi0 = vorrq_u8(hi0, vandq_u8(vshlq_u8(h0, sh), bit4));
          hi1 = vorrq_u8(hi1, vandq_u8(vshlq_u8(h1, sh), bit4));
        }
        for (int t = 0; t < NT; ++t) {
          const int8_t* a = q8k(x, xs, t, i)->qs + 64 * c;
          const int32x4_t plo = dot4(dot4(vdupq_n_s32(0), vreinterpretq_s8_u8(lo0), vld1q_s8(a)),
                                     vreinterpretq_s8_u8(lo1), vld1q_s8(a + 16));
          const int32x4_t phi = dot4(dot4(vdupq_n_s32(0), vreinterpretq_s8_u8(hi0), vld1q_s8(a + 32)),
                                     vreinterpretq_s8_u8(hi1), vld1q_s8(a + 48));
          isum[t] = vmlaq_n_s32(vmlaq_n_s32(isum[t], plo, sc[2 * c]), phi, sc[2 * c + 1]);
        }
      }
      const float d = h2f(b.d), dmin = h2f(b.dmin);
      for (int t = 0; t < NT; ++t) {
        const auto* xb = q8k(x, xs, t, i);
        int32_t msum = 0;
        for (int g = 0; g < 8; ++g) msum += int32_t(mn[g]) * (xb->bsums[2 * g] + xb->bsums[2 * g + 1]);
        sum[t] += xb->d * (d * float(vaddvq_s32(isum[t])) - dmin * float(msum));
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = sum[t];
  }
};

// Q6_K against Q8_K: per 128-element half h, element 32k + l takes its low
// four bits from ql[64h + l + 32(k & 1)] (the high nibble when k >= 2) and its
// top two bits from qh[32h + l] at shift 2k; codes stand for q - 32; one
// signed 8-bit scale per 16 elements.
struct Q6K {
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out) {
    float sum[NT] = {};
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w);
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x03);
    const int8x16_t m32 = vdupq_n_s8(32);
    for (int64_t i = 0; i < k / 256; ++i) {
      const BlockQ6_K& b = blocks[i];
      int32x4_t isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = vdupq_n_s32(0);
      for (int h = 0; h < 2; ++h) {
        for (int half = 0; half < 2; ++half) {  // l in [16 half, 16 half + 16)
          const int l0 = 16 * half;
          const uint8x16_t ql0 = vld1q_u8(b.ql + 64 * h + l0), ql1 = vld1q_u8(b.ql + 64 * h + 32 + l0);
          const uint8x16_t qh = vld1q_u8(b.qh + 32 * h + l0);
          int8x16_t v[4];
          v[0] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(ql0, m4), vshlq_n_u8(vandq_u8(qh, m2), 4))), m32);
          v[1] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(ql1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m2), 4))), m32);
          v[2] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(ql0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m2), 4))), m32);
          v[3] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(ql1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4))), m32);
          for (int kk = 0; kk < 4; ++kk) {
            const int e0 = 128 * h + 32 * kk + l0;  // first element of these 16, one scale group
            const int scale = b.scales[e0 / 16];
            for (int t = 0; t < NT; ++t) {
              const int8_t* a = q8k(x, xs, t, i)->qs + e0;
              isum[t] = vmlaq_n_s32(isum[t], dot4(vdupq_n_s32(0), v[kk], vld1q_s8(a)), scale);
            }
          }
        }
      }
      const float d = h2f(b.d);
      for (int t = 0; t < NT; ++t)
        sum[t] += d * q8k(x, xs, t, i)->d * float(vaddvq_s32(isum[t]));
    }
    for (int t = 0; t < NT; ++t) out[t] = sum[t];
  }
};

// IQ4_XS against Q8_K: nibbles index the 16-entry value table, one 6-bit
// signed scale per 32 elements (element j of a sub-block in the low nibble of
// its byte j, element 16 + j in the high nibble).
struct IQ4XS {
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out) {
    float sum[NT] = {};
    const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(w);
    const int8x16_t table = vld1q_s8(iq::kIQ4NLValues);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int64_t i = 0; i < k / 256; ++i) {
      const BlockIQ4_XS& b = blocks[i];
      int32x4_t isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = vdupq_n_s32(0);
      for (int g = 0; g < 8; ++g) {
        const uint8x16_t q = vld1q_u8(b.qs + 16 * g);
        const int8x16_t w0 = vqtbl1q_s8(table, vandq_u8(q, m4)), w1 = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
        const int scale = iq4xs_scale(b, g);
        for (int t = 0; t < NT; ++t) {
          const int8_t* a = q8k(x, xs, t, i)->qs + 32 * g;
          isum[t] = vmlaq_n_s32(isum[t], dot4(dot4(vdupq_n_s32(0), w0, vld1q_s8(a)), w1, vld1q_s8(a + 16)), scale);
        }
      }
      const float d = h2f(b.d);
      for (int t = 0; t < NT; ++t)
        sum[t] += d * q8k(x, xs, t, i)->d * float(vaddvq_s32(isum[t]));
    }
    for (int t = 0; t < NT; ++t) out[t] = sum[t];
  }
};

// Float weights against float activations.
struct F32W {
  using T = float;
  static float32x4_t load(const float* p) { return vld1q_f32(p); }
  static float one(float v) { return v; }
};
struct F16W {
  using T = uint16_t;
  static float32x4_t load(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static float one(uint16_t v) { return fp16_to_f32(v); }
};
struct BF16W {
  using T = uint16_t;
  static float32x4_t load(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
  static float one(uint16_t v) { return bf16_to_f32(v); }
};
template <class F>
struct Float {
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out) {
    const auto* wp = reinterpret_cast<const typename F::T*>(w);
    const float* xp[NT];
    for (int t = 0; t < NT; ++t) xp[t] = reinterpret_cast<const float*>(x + size_t(t) * xs);
    float32x4_t acc0[NT], acc1[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = vdupq_n_f32(0.f);
    int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
      const float32x4_t w0 = F::load(wp + j), w1 = F::load(wp + j + 4);
      for (int t = 0; t < NT; ++t) {
        acc0[t] = vfmaq_f32(acc0[t], w0, vld1q_f32(xp[t] + j));
        acc1[t] = vfmaq_f32(acc1[t], w1, vld1q_f32(xp[t] + j + 4));
      }
    }
    for (int t = 0; t < NT; ++t) {
      float s = vaddvq_f32(vaddq_f32(acc0[t], acc1[t]));
      for (int64_t e = j; e < k; ++e) s += F::one(wp[e]) * xp[t][e];
      out[t] = s;
    }
  }
};

}  // namespace

MatmulKernel neon_kernel(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return run<Float<F32W>>;
    case GgmlType::F16: return run<Float<F16W>>;
    case GgmlType::BF16: return run<Float<BF16W>>;
    case GgmlType::Q8_0: return run<Small<BlockQ8_0, UnpackQ8_0>>;
    case GgmlType::Q4_0: return run<Small<BlockQ4_0, UnpackQ4_0>>;
    case GgmlType::IQ4_NL: return run<Small<BlockIQ4_NL, UnpackIQ4NL>>;
    case GgmlType::Q4_K: return run<K4Bit<BlockQ4_K, false>>;
    case GgmlType::Q5_K: return run<K4Bit<BlockQ5_K, true>>;
    case GgmlType::Q6_K: return run<Q6K>;
    case GgmlType::IQ4_XS: return run<IQ4XS>;
    default: return nullptr;
  }
}

}  // namespace ember::quant::detail

#else  // not AArch64 with NEON

namespace ember::quant::detail {
MatmulKernel neon_kernel(GgmlType) { return nullptr; }
}  // namespace ember::quant::detail

#endif
