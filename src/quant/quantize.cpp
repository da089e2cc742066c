// Quantisers: float rows -> the standard block layouts of blocks.h.
//
// They fit each block's scale (and min) by a short search followed by a least
// squares refit, which gets most of the accuracy of exhaustive searches at a
// fraction of the cost (files of many gigabytes go through here).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

// Round to nearest (ties to even) for |v| < 2^22 without a libm call: adding
// 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
inline int nearest(float v) {
  const float r = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &r, 4);
  return (i & 0x007fffff) - 0x00400000;
}
inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
inline uint16_t f2h(float f) { return f32_to_fp16(f); }

// Value of largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float m = 0, am = 0;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > am) { am = a; m = x[i]; }
  }
  return m;
}

void q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  b.d = f2h(d);
  const float dh = fp16_to_f32(b.d);
  const float id = dh != 0 ? 1.f / dh : 0.f;
  // nearbyint, not nearest(), as in quantize_row_q8_k: this rounds the activations of every Q8_0
  // product, and a build that fuses the product into nearest()'s addition would move some codes
  // across a tie (2 in 4.2M at -march=x86-64-v3). The GPU repeats this rounding bit for bit.
  for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(clampi(int(std::nearbyint(x[j] * id)), -127, 127));
}

// Symmetric 4/5-bit blocks: the largest-magnitude value maps to the most negative level.
template <int Levels>
void sym_block(const float* x, uint16_t& dfield, int* L) {
  const float m = signed_absmax(x, 32);
  const float d = m / -float(Levels / 2);
  dfield = f2h(d);
  const float dh = fp16_to_f32(dfield);
  const float id = dh != 0 ? 1.f / dh : 0.f;
  for (int j = 0; j < 32; ++j) L[j] = clampi(nearest(x[j] * id) + Levels / 2, 0, Levels - 1);
}
// Asymmetric blocks: x = d * q + m with q in [0, Levels).
template <int Levels>
void asym_block(const float* x, uint16_t& dfield, uint16_t& mfield, int* L) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < 32; ++j) { lo = std::min(lo, x[j]); hi = std::max(hi, x[j]); }
  dfield = f2h((hi - lo) / float(Levels - 1));
  mfield = f2h(lo);
  const float dh = fp16_to_f32(dfield), mh = fp16_to_f32(mfield);
  const float id = dh != 0 ? 1.f / dh : 0.f;
  for (int j = 0; j < 32; ++j) L[j] = clampi(nearest((x[j] - mh) * id), 0, Levels - 1);
}
void pack_nibbles(const int* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
}
void pack_q5_high(const int* L, uint8_t* qh4) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t((L[j] >> 4) & 1) << j;
  std::memcpy(qh4, &qh, 4);
}
void pack_nibbles_low(const int* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4));
}

void q4_0(const float* x, BlockQ4_0& b) { int L[32]; sym_block<16>(x, b.d, L); pack_nibbles(L, b.qs); }
void q4_1(const float* x, BlockQ4_1& b) { int L[32]; asym_block<16>(x, b.d, b.m, L); pack_nibbles(L, b.qs); }
void q5_0(const float* x, BlockQ5_0& b) {
  int L[32];
  sym_block<32>(x, b.d, L);
  pack_nibbles_low(L, b.qs);
  pack_q5_high(L, b.qh);
}
void q5_1(const float* x, BlockQ5_1& b) {
  int L[32];
  asym_block<32>(x, b.d, b.m, L);
  pack_nibbles_low(L, b.qs);
  pack_q5_high(L, b.qh);
}

// Fits x ~ scale * q - min over q in [0, nmax], min >= 0 (the format stores
// a non-negative min that is subtracted). Tries a few scales around
// range/nmax and refits scale and min by least squares for each.
void fit_scale_min(const float* x, int n, int nmax, float& scale, float& min) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) { lo = std::min(lo, x[i]); hi = std::max(hi, x[i]); }
  lo = std::min(lo, 0.f);
  if (hi <= lo) { scale = 0; min = -lo; return; }
  float best_err = INFINITY;
  scale = (hi - lo) / float(nmax);
  min = -lo;
  float sum_x = 0;
  for (int i = 0; i < n; ++i) sum_x += x[i];
  for (int step = -2; step <= 5; ++step) {
    const float iscale = (float(nmax) + 0.25f * float(step)) / (hi - lo);
    float sl = 0, sl2 = 0, slx = 0;
    int L[32];
    for (int i = 0; i < n; ++i) {
      L[i] = clampi(nearest(iscale * (x[i] - lo)), 0, nmax);
      sl += float(L[i]);
      sl2 += float(L[i] * L[i]);
      slx += float(L[i]) * x[i];
    }
    // least squares for x = a * L + b
    const float det = float(n) * sl2 - sl * sl;
    float a = (hi - lo) / float(nmax), b = lo;
    if (det > 0) {
      a = (float(n) * slx - sl * sum_x) / det;
      b = (sl2 * sum_x - sl * slx) / det;
    }
    if (b > 0) {  // min must stay <= 0: refit the scale alone with b = 0
      b = 0;
      a = sl2 > 0 ? slx / sl2 : 0;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = a * float(L[i]) + b - x[i];
      err += e * e;
    }
    if (err < best_err) { best_err = err; scale = a; min = -b; }
  }
}

// Packs the 8 six-bit scales and mins of Q4_K / Q5_K into 12 bytes.
void pack_k4_scales(const int* ls, const int* lm, uint8_t* s) {
  std::memset(s, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = uint8_t(ls[j]);
      s[j + 4] = uint8_t(lm[j]);
    } else {
      s[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      s[j - 4] |= uint8_t((ls[j] >> 4) << 6);
      s[j] |= uint8_t((lm[j] >> 4) << 6);
    }
  }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fills L[256] and the header fields.
void k4_superblock(const float* x, int nmax, uint16_t& dfield, uint16_t& dminfield, uint8_t* scales, int* L) {
  float sc[8], mn[8], max_sc = 0, max_mn = 0;
  for (int g = 0; g < 8; ++g) {
    fit_scale_min(x + 32 * g, 32, nmax, sc[g], mn[g]);
    max_sc = std::max(max_sc, sc[g]);
    max_mn = std::max(max_mn, mn[g]);
  }
  dfield = f2h(max_sc / 63.f);
  dminfield = f2h(max_mn / 63.f);
  const float d = fp16_to_f32(dfield), dmin = fp16_to_f32(dminfield);
  int ls[8], lm[8];
  for (int g = 0; g < 8; ++g) {
    ls[g] = d > 0 ? clampi(nearest(sc[g] / d), 0, 63) : 0;
    lm[g] = dmin > 0 ? clampi(nearest(mn[g] / dmin), 0, 63) : 0;
  }
  pack_k4_scales(ls, lm, scales);
  for (int g = 0; g < 8; ++g) {
    const float s = d * float(ls[g]), m = dmin * float(lm[g]);
    const float is = s > 0 ? 1.f / s : 0.f;
    for (int l = 0; l < 32; ++l) L[32 * g + l] = clampi(nearest((x[32 * g + l] + m) * is), 0, nmax);
  }
}

void q4_k(const float* x, BlockQ4_K& b) {
  int L[256];
  k4_superblock(x, 15, b.d, b.dmin, b.scales, L);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
}
void q5_k(const float* x, BlockQ5_K& b) {
  int L[256];
  k4_superblock(x, 31, b.d, b.dmin, b.scales, L);
  std::memset(b.qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * c + l] = uint8_t((L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4));
  for (int g = 0; g < 8; ++g)
    for (int l = 0; l < 32; ++l) b.qh[l] |= uint8_t(((L[32 * g + l] >> 4) & 1) << g);
}

// Symmetric fit x ~ scale * q, q in [-nneg, npos]: tries scales near the
// extreme value and refits by least squares.
float fit_scale_sym(const float* x, int n, int nneg, int npos) {
  const float m = signed_absmax(x, n);
  if (m == 0) return 0;
  float best_err = INFINITY, best = m / -float(nneg);
  for (int step = -3; step <= 3; ++step) {
    const float iscale = -(float(nneg) + 0.3f * float(step)) / m;
    float sqx = 0, sq2 = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clampi(nearest(x[i] * iscale), -nneg, npos);
      sqx += float(q) * x[i];
      sq2 += float(q * q);
    }
    if (sq2 <= 0) continue;
    const float s = sqx / sq2;
    const float err = -sqx * sqx / sq2;  // sum (x - s q)^2 minus the constant sum x^2
    if (err < best_err) { best_err = err; best = s; }
  }
  return best;
}

void q6_k(const float* x, BlockQ6_K& b) {
  float sc[16], amax = 0, mscale = 0;
  for (int g = 0; g < 16; ++g) {
    sc[g] = fit_scale_sym(x + 16 * g, 16, 32, 31);
    if (std::fabs(sc[g]) > amax) { amax = std::fabs(sc[g]); mscale = sc[g]; }
  }
  int L[256];
  if (amax == 0) {
    std::memset(&b, 0, sizeof b);
    for (int i = 0; i < 256; ++i) L[i] = 32;
  } else {
    b.d = f2h(mscale / -128.f);
    const float d = fp16_to_f32(b.d);
    for (int g = 0; g < 16; ++g) {
      const int ls = clampi(nearest(sc[g] / d), -128, 127);
      b.scales[g] = int8_t(ls);
      const float s = d * float(ls);
      const float is = s != 0 ? 1.f / s : 0.f;
      for (int l = 0; l < 16; ++l) L[16 * g + l] = clampi(nearest(x[16 * g + l] * is), -32, 31) + 32;
    }
  }
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const int* q = L + 128 * h + l;
      b.ql[64 * h + l] = uint8_t((q[0] & 0xF) | ((q[64] & 0xF) << 4));
      b.ql[64 * h + l + 32] = uint8_t((q[32] & 0xF) | ((q[96] & 0xF) << 4));
      b.qh[32 * h + l] = uint8_t((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
    }
}

// Q3_K: 16 groups of 16, levels -4..3, 6-bit signed group scales.
void q3_k(const float* x, BlockQ3_K& b) {
  float sc[16], amax = 0, mscale = 0;
  for (int g = 0; g < 16; ++g) {
    sc[g] = fit_scale_sym(x + 16 * g, 16, 4, 3);
    if (std::fabs(sc[g]) > amax) { amax = std::fabs(sc[g]); mscale = sc[g]; }
  }
  std::memset(&b, 0, sizeof b);
  int L[256], ls[16];
  for (int i = 0; i < 256; ++i) L[i] = 4;
  if (amax != 0) {
    b.d = f2h(mscale / -32.f);
    const float d = fp16_to_f32(b.d);
    for (int g = 0; g < 16; ++g) {
      ls[g] = clampi(nearest(sc[g] / d), -32, 31);
      const float s = d * float(ls[g]);
      const float is = s != 0 ? 1.f / s : 0.f;
      for (int l = 0; l < 16; ++l) L[16 * g + l] = clampi(nearest(x[16 * g + l] * is), -4, 3) + 4;
    }
  } else {
    for (int g = 0; g < 16; ++g) ls[g] = 0;
  }
  for (int g = 0; g < 16; ++g) {
    const int v = ls[g] + 32;
    if (g < 8) b.scales[g] |= uint8_t(v & 0xF); else b.scales[g - 8] |= uint8_t((v & 0xF) << 4);
    b.scales[8 + g % 4] |= uint8_t(((v >> 4) & 3) << (2 * (g / 4)));
  }
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, within = i % 128, j = within / 32, l = within % 32;
    b.qs[32 * half + l] |= uint8_t((L[i] & 3) << (2 * j));
    if (L[i] & 4) b.hmask[l] |= uint8_t(1 << (4 * half + j));
  }
}

// Q2_K: 16 groups of 16, x = d*s*q - dmin*m with q in 0..3, 4-bit s and m.
void q2_k(const float* x, BlockQ2_K& b) {
  float sc[16], mn[16], max_sc = 0, max_mn = 0;
  for (int g = 0; g < 16; ++g) {
    fit_scale_min(x + 16 * g, 16, 3, sc[g], mn[g]);
    max_sc = std::max(max_sc, sc[g]);
    max_mn = std::max(max_mn, mn[g]);
  }
  b.d = f2h(max_sc / 15.f);
  b.dmin = f2h(max_mn / 15.f);
  const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
  std::memset(b.qs, 0, 64);
  for (int g = 0; g < 16; ++g) {
    const int ls = d > 0 ? clampi(nearest(sc[g] / d), 0, 15) : 0;
    const int lm = dmin > 0 ? clampi(nearest(mn[g] / dmin), 0, 15) : 0;
    b.scales[g] = uint8_t(ls | (lm << 4));
    const float s = d * float(ls), m = dmin * float(lm);
    const float is = s > 0 ? 1.f / s : 0.f;
    for (int l = 0; l < 16; ++l) {
      const int i = 16 * g + l;
      const int q = clampi(nearest((x[i] + m) * is), 0, 3);
      const int half = i / 128, within = i % 128;
      b.qs[32 * half + within % 32] |= uint8_t(q << (2 * (within / 32)));
    }
  }
}

// Nearest entry of the IQ4 value table to v, through a lookup over
// [-128, 128) at quarter steps (the table's gaps are >= 10, so the rounding
// of v to a quarter can only change the choice at an exact tie).
struct IQ4Lookup {
  uint8_t idx[1024];
  IQ4Lookup() {
    for (int i = 0; i < 1024; ++i) {
      const float v = -128.f + 0.25f * float(i);
      int best = 0;
      for (int j = 1; j < 16; ++j)
        if (std::fabs(v - iq::kIQ4NLValues[j]) < std::fabs(v - iq::kIQ4NLValues[best])) best = j;
      idx[i] = uint8_t(best);
    }
  }
};
int iq4_index(float v) {
  static const IQ4Lookup lut;
  if (!(v > -128.f)) return 0;  // also NaN
  if (v >= 127.75f) return 15;
  return lut.idx[nearest(v * 4.f) + 512];
}
// Best scale for 32 values over the IQ4 table; fills L with the indices for it.
float fit_iq4(const float* x, int* L) {
  const float m = signed_absmax(x, 32);
  if (m == 0) {
    for (int j = 0; j < 32; ++j) L[j] = iq4_index(0);
    return 0;
  }
  float best_err = INFINITY, best = 0;
  int cand[32];
  for (int step = -6; step <= 6; ++step) {
    const float id = (-127.f + 1.0f * float(step)) / m;  // extreme value near the -127 end
    float sqx = 0, sq2 = 0;
    for (int j = 0; j < 32; ++j) {
      cand[j] = iq4_index(x[j] * id);
      const float q = iq::kIQ4NLValues[cand[j]];
      sqx += q * x[j];
      sq2 += q * q;
    }
    if (sq2 <= 0) continue;
    const float err = -sqx * sqx / sq2;
    if (err < best_err) {
      best_err = err;
      best = sqx / sq2;
      std::memcpy(L, cand, sizeof cand);
    }
  }
  return best;
}
void iq4_nl(const float* x, BlockIQ4_NL& b) {
  int L[32];
  const float s = fit_iq4(x, L);
  b.d = f2h(s);
  const float d = fp16_to_f32(b.d);
  if (d != 0)
    for (int j = 0; j < 32; ++j) L[j] = iq4_index(x[j] / d);
  pack_nibbles(L, b.qs);
}
void iq4_xs(const float* x, BlockIQ4_XS& b) {
  float sc[8], amax = 0, mscale = 0;
  int L[32];
  for (int ib = 0; ib < 8; ++ib) {
    sc[ib] = fit_iq4(x + 32 * ib, L);
    if (std::fabs(sc[ib]) > amax) { amax = std::fabs(sc[ib]); mscale = sc[ib]; }
  }
  b.d = f2h(mscale / -32.f);
  const float d = fp16_to_f32(b.d);
  b.scales_h = 0;
  std::memset(b.scales_l, 0, 4);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = d != 0 ? clampi(nearest(sc[ib] / d), -32, 31) : 0;
    const int v = ls + 32;
    b.scales_l[ib / 2] |= uint8_t((v & 0xF) << (4 * (ib % 2)));
    b.scales_h |= uint16_t((v >> 4) << (2 * ib));
    const float dl = d * float(ls);
    for (int j = 0; j < 32; ++j) L[j] = dl != 0 ? iq4_index(x[32 * ib + j] / dl) : iq4_index(0);
    pack_nibbles(L, b.qs + 16 * ib);
  }
}

template <typename Block, void (*F)(const float*, Block&), int N>
void blocks(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < n / N; ++i) F(src + i * N, b[i]);
}

}  // namespace

// Q8_K rows are the activation format of the K-quant and IQ products.
void quantize_row_q8_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
    b[i].d = d;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) {
        // nearbyint, not nearest(): nearest adds a constant, and a compiler that fuses the product
        // into that addition (an FMA, e.g. with -march=x86-64-v3) skips the product's own rounding,
        // which moves about one code in 600,000 across a tie. This is the rounding the GPU repeats
        // bit for bit (backend/cuda/int8_acts.cu), whatever the build.
        const int q = clampi(int(std::nearbyint(x[16 * g + l] * id)), -127, 127);
        b[i].qs[16 * g + l] = int8_t(q);
        sum += q;
      }
      b[i].bsums[g] = int16_t(sum);
    }
  }
}

// The IQ codebook formats (quantize_iq.cpp).
void quantize_row_iq3_xxs(const float* x, void* dst, int64_t n);
void quantize_row_iq3_s(const float* x, void* dst, int64_t n);
void quantize_row_iq2_xxs(const float* x, void* dst, int64_t n);
void quantize_row_iq2_xs(const float* x, void* dst, int64_t n);
void quantize_row_iq2_s(const float* x, void* dst, int64_t n);
void quantize_row_iq1_s(const float* x, void* dst, int64_t n);
void quantize_row_iq1_m(const float* x, void* dst, int64_t n);

bool can_quantize(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q8_K: case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K:
    case GgmlType::Q6_K: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
    case GgmlType::IQ3_XXS: case GgmlType::IQ3_S: case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S: case GgmlType::IQ1_S: case GgmlType::IQ1_M:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  const TypeInfo ti = type_info(t);
  if (!ti.known || !can_quantize(t))
    throw Error(std::string("quantize_row: no quantiser for tensor type ") + type_name(t));
  if (n < 0 || n % ti.block_elems != 0)
    throw Error("quantize_row: " + std::to_string(n) + " elements is not a multiple of the " + ti.name +
                " block size " + std::to_string(ti.block_elems));
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case GgmlType::F16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
      return;
    }
    case GgmlType::BF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case GgmlType::Q4_0: return blocks<BlockQ4_0, q4_0, 32>(src, dst, n);
    case GgmlType::Q4_1: return blocks<BlockQ4_1, q4_1, 32>(src, dst, n);
    case GgmlType::Q5_0: return blocks<BlockQ5_0, q5_0, 32>(src, dst, n);
    case GgmlType::Q5_1: return blocks<BlockQ5_1, q5_1, 32>(src, dst, n);
    case GgmlType::Q8_0: return blocks<BlockQ8_0, q8_0, 32>(src, dst, n);
    case GgmlType::Q8_K: return quantize_row_q8_k(src, dst, n);
    case GgmlType::Q2_K: return blocks<BlockQ2_K, q2_k, 256>(src, dst, n);
    case GgmlType::Q3_K: return blocks<BlockQ3_K, q3_k, 256>(src, dst, n);
    case GgmlType::Q4_K: return blocks<BlockQ4_K, q4_k, 256>(src, dst, n);
    case GgmlType::Q5_K: return blocks<BlockQ5_K, q5_k, 256>(src, dst, n);
    case GgmlType::Q6_K: return blocks<BlockQ6_K, q6_k, 256>(src, dst, n);
    case GgmlType::IQ4_NL: return blocks<BlockIQ4_NL, iq4_nl, 32>(src, dst, n);
    case GgmlType::IQ4_XS: return blocks<BlockIQ4_XS, iq4_xs, 256>(src, dst, n);
    case GgmlType::IQ3_XXS: return quantize_row_iq3_xxs(src, dst, n);
    case GgmlType::IQ3_S: return quantize_row_iq3_s(src, dst, n);
    case GgmlType::IQ2_XXS: return quantize_row_iq2_xxs(src, dst, n);
    case GgmlType::IQ2_XS: return quantize_row_iq2_xs(src, dst, n);
    case GgmlType::IQ2_S: return quantize_row_iq2_s(src, dst, n);
    case GgmlType::IQ1_S: return quantize_row_iq1_s(src, dst, n);
    case GgmlType::IQ1_M: return quantize_row_iq1_m(src, dst, n);
    default: break;
  }
  throw Error(std::string("quantize_row: no quantiser for tensor type ") + type_name(t));
}

}  // namespace ember::quant
