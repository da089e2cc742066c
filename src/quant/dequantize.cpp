// Reference dequantisers: one plain loop per format, written to mirror the
// format's definition (blocks.h) so they can be read against it.
#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

float h2f(uint16_t h) { return fp16_to_f32(h); }

void deq_q4_0(const BlockQ4_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float((b.qs[j] & 0xF) - 8);
    y[j + 16] = d * float((b.qs[j] >> 4) - 8);
  }
}
void deq_q4_1(const BlockQ4_1& b, float* y) {
  const float d = h2f(b.d), m = h2f(b.m);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(b.qs[j] & 0xF) + m;
    y[j + 16] = d * float(b.qs[j] >> 4) + m;
  }
}
uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void deq_q5_0(const BlockQ5_0& b, float* y) {
  const float d = h2f(b.d);
  const uint32_t qh = load_u32(b.qh);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
    y[j] = d * float(((b.qs[j] & 0xF) | h0) - 16);
    y[j + 16] = d * float(((b.qs[j] >> 4) | h1) - 16);
  }
}
void deq_q5_1(const BlockQ5_1& b, float* y) {
  const float d = h2f(b.d), m = h2f(b.m);
  const uint32_t qh = load_u32(b.qh);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
    y[j] = d * float((b.qs[j] & 0xF) | h0) + m;
    y[j + 16] = d * float((b.qs[j] >> 4) | h1) + m;
  }
}
void deq_q8_0(const BlockQ8_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 32; ++j) y[j] = d * float(b.qs[j]);
}
void deq_q8_1(const BlockQ8_1& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 32; ++j) y[j] = d * float(b.qs[j]);
}

// Q2_K: 2-bit codes; group g of 16 has scale (scales[g] & 15) * d and min (scales[g] >> 4) * dmin.
// Bytes qs[32h .. 32h+31] hold groups 8h..8h+7, two bits per group shift.
void deq_q2_k(const BlockQ2_K& b, float* y) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, within = i % 128, shift = 2 * (within / 32), l = within % 32;
    const int g = i / 16;
    const int q = (b.qs[32 * half + l] >> shift) & 3;
    y[i] = d * float(b.scales[g] & 0xF) * float(q) - dmin * float(b.scales[g] >> 4);
  }
}
// Q3_K: 2 low bits as in Q2_K, plus a high bit in hmask (bit set = no offset, clear = minus 4).
void deq_q3_k(const BlockQ3_K& b, float* y) {
  const float d = h2f(b.d);
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, within = i % 128, shift = 2 * (within / 32), l = within % 32;
    const int q = (b.qs[32 * half + l] >> shift) & 3;
    const int hbit = (b.hmask[l] >> (4 * half + within / 32)) & 1;
    y[i] = d * float(q3k_scale(i / 16, b.scales)) * float(q - (hbit ? 0 : 4));
  }
}
// Q4_K: group g (32 elements) = d*sc_g*q - dmin*m_g; bytes qs[32c..] low nibbles are group 2c, high 2c+1.
// Q5_K: the same, plus bit g of qh[l] as bit 4 of element l of group g.
template <class Block, bool kHighBit>
void deq_k4_family(const Block& b, float* y) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  for (int g = 0; g < 8; ++g) {
    uint8_t sc, m;
    k4_scale_min(g, b.scales, sc, m);
    const uint8_t* q = b.qs + 32 * (g / 2);
    for (int l = 0; l < 32; ++l) {
      int v = (g & 1) ? (q[l] >> 4) : (q[l] & 0xF);
      if constexpr (kHighBit) v |= ((b.qh[l] >> g) & 1) << 4;
      y[32 * g + l] = d * float(sc) * float(v) - dmin * float(m);
    }
  }
}
void deq_q4_k(const BlockQ4_K& b, float* y) { deq_k4_family<BlockQ4_K, false>(b, y); }
void deq_q5_k(const BlockQ5_K& b, float* y) { deq_k4_family<BlockQ5_K, true>(b, y); }
// Q6_K: per 128-element half h: element 32k+l (k = 0..3) takes low nibble from
// ql[64h + l + 32*(k&1)] (high nibble when k >= 2) and 2 bits from qh[32h + l] at shift 2k.
void deq_q6_k(const BlockQ6_K& b, float* y) {
  const float d = h2f(b.d);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    const uint8_t lo = b.ql[64 * h + l + 32 * (k & 1)];
    const int low4 = k >= 2 ? (lo >> 4) : (lo & 0xF);
    const int hi2 = (b.qh[32 * h + l] >> (2 * k)) & 3;
    y[i] = d * float(b.scales[i / 16]) * float((low4 | (hi2 << 4)) - 32);
  }
}
void deq_q8_k(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < 256; ++j) y[j] = b.d * float(b.qs[j]);
}

float sign_of(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.f : 1.f; }
uint8_t grid_byte(uint64_t g, int j) { return uint8_t(g >> (8 * j)); }

void deq_iq2_xxs(const BlockIQ2_XXS& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t idx, sgn;  // 4 grid indices, then 4 x 7-bit sign indices and a 4-bit scale
    std::memcpy(&idx, &b.qs[4 * ib], 4);
    std::memcpy(&sgn, &b.qs[4 * ib + 2], 4);
    const float db = d * (0.5f + float(sgn >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l) {
      const uint64_t g = iq::iq2xxs_grid()[(idx >> (8 * l)) & 0xFF];
      const uint8_t s = iq::ksigns((sgn >> (7 * l)) & 127);
      for (int j = 0; j < 8; ++j) y[32 * ib + 8 * l + j] = db * float(grid_byte(g, j)) * sign_of(s, j);
    }
  }
}
void deq_iq2_xs(const BlockIQ2_XS& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      const int sc = (b.scales[ib] >> (4 * (l / 2))) & 0xF;
      const float db = d * (0.5f + float(sc)) * 0.25f;
      const uint16_t q = b.qs[4 * ib + l];
      const uint64_t g = iq::iq2xs_grid()[q & 511];
      const uint8_t s = iq::ksigns(q >> 9);
      for (int j = 0; j < 8; ++j) y[32 * ib + 8 * l + j] = db * float(grid_byte(g, j)) * sign_of(s, j);
    }
  }
}
void deq_iq2_s(const BlockIQ2_S& b, float* y) {
  const float d = h2f(b.d);
  const uint8_t* signs = b.qs + 32;
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      const int sc = (b.scales[ib] >> (4 * (l / 2))) & 0xF;
      const float db = d * (0.5f + float(sc)) * 0.25f;
      const int index = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
      const uint64_t g = iq::iq2s_grid()[index];
      const uint8_t s = signs[4 * ib + l];
      for (int j = 0; j < 8; ++j) y[32 * ib + 8 * l + j] = db * float(grid_byte(g, j)) * sign_of(s, j);
    }
  }
}
void deq_iq3_xxs(const BlockIQ3_XXS& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t aux = load_u32(b.qs + 64 + 4 * ib);
    const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const uint8_t s = iq::ksigns((aux >> (7 * l)) & 127);
      for (int half = 0; half < 2; ++half) {
        const uint32_t g = iq::iq3xxs_grid()[b.qs[8 * ib + 2 * l + half]];
        for (int j = 0; j < 4; ++j)
          y[32 * ib + 8 * l + 4 * half + j] = db * float((g >> (8 * j)) & 0xFF) * sign_of(s, 4 * half + j);
      }
    }
  }
}
void deq_iq3_s(const BlockIQ3_S& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = d * float(1 + 2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
    for (int l = 0; l < 4; ++l) {
      const uint8_t s = b.signs[4 * ib + l];
      for (int half = 0; half < 2; ++half) {
        const int k = 2 * l + half;  // index 0..7 within the 32 elements
        const int index = b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8);
        const uint32_t g = iq::iq3s_grid()[index];
        for (int j = 0; j < 4; ++j)
          y[32 * ib + 4 * k + j] = db * float((g >> (8 * j)) & 0xFF) * sign_of(s, 4 * half + j);
      }
    }
  }
}
void deq_iq1_s(const BlockIQ1_S& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const uint16_t qh = b.qh[ib];
    const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
    const float delta = (qh & 0x8000) ? -iq::kIQ1Delta : iq::kIQ1Delta;
    for (int l = 0; l < 4; ++l) {
      const uint64_t g = iq::iq1s_grid()[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[32 * ib + 8 * l + j] = dl * (float(int8_t(grid_byte(g, j))) + delta);
    }
  }
}
// IQ1_M: the fp16 super-block scale is spread over the top nibbles of the four
// 16-bit scale words; each 16-element half of a 32 block has a 3-bit scale.
float iq1m_scale(const BlockIQ1_M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  const uint16_t bits = uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  return h2f(bits);
}
void deq_iq1_m(const BlockIQ1_M& b, float* y) {
  const float d = iq1m_scale(b);
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      const int s3 = (sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7;
      const float dl = d * float(2 * s3 + 1);
      const uint8_t qh = b.qh[2 * ib + l / 2];
      const int shift = (l % 2) ? 4 : 0;  // low nibble for the first group of 8, high for the second
      const int index = b.qs[4 * ib + l] | (((qh >> shift) & 7) << 8);
      const float delta = ((qh >> shift) & 8) ? -iq::kIQ1Delta : iq::kIQ1Delta;
      const uint64_t g = iq::iq1s_grid()[index];
      for (int j = 0; j < 8; ++j) y[32 * ib + 8 * l + j] = dl * (float(int8_t(grid_byte(g, j))) + delta);
    }
  }
}
void deq_iq4_nl(const BlockIQ4_NL& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(iq::kIQ4NLValues[b.qs[j] & 0xF]);
    y[j + 16] = d * float(iq::kIQ4NLValues[b.qs[j] >> 4]);
  }
}
void deq_iq4_xs(const BlockIQ4_XS& b, float* y) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = d * float(iq4xs_scale(b, ib));
    const uint8_t* q = b.qs + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      y[32 * ib + j] = dl * float(iq::kIQ4NLValues[q[j] & 0xF]);
      y[32 * ib + j + 16] = dl * float(iq::kIQ4NLValues[q[j] >> 4]);
    }
  }
}

template <typename Block, void (*F)(const Block&, float*), int N>
void blocks(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / N; ++i) F(b[i], dst + i * N);
}

}  // namespace

bool can_dequantize(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q8_0: case GgmlType::Q8_1: case GgmlType::Q8_K:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS: case GgmlType::IQ2_S: case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S: case GgmlType::IQ1_S: case GgmlType::IQ1_M: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
      return true;
    default:
      return false;
  }
}

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  const TypeInfo ti = type_info(t);
  if (!ti.known || !can_dequantize(t))
    throw Error(std::string("dequantize_row: no dequantiser for tensor type ") + type_name(t));
  if (n < 0 || n % ti.block_elems != 0)
    throw Error("dequantize_row: " + std::to_string(n) + " elements is not a multiple of the " + ti.name +
                " block size " + std::to_string(ti.block_elems));
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case GgmlType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
      return;
    }
    case GgmlType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case GgmlType::Q4_0: return blocks<BlockQ4_0, deq_q4_0, 32>(src, dst, n);
    case GgmlType::Q4_1: return blocks<BlockQ4_1, deq_q4_1, 32>(src, dst, n);
    case GgmlType::Q5_0: return blocks<BlockQ5_0, deq_q5_0, 32>(src, dst, n);
    case GgmlType::Q5_1: return blocks<BlockQ5_1, deq_q5_1, 32>(src, dst, n);
    case GgmlType::Q8_0: return blocks<BlockQ8_0, deq_q8_0, 32>(src, dst, n);
    case GgmlType::Q8_1: return blocks<BlockQ8_1, deq_q8_1, 32>(src, dst, n);
    case GgmlType::Q2_K: return blocks<BlockQ2_K, deq_q2_k, 256>(src, dst, n);
    case GgmlType::Q3_K: return blocks<BlockQ3_K, deq_q3_k, 256>(src, dst, n);
    case GgmlType::Q4_K: return blocks<BlockQ4_K, deq_q4_k, 256>(src, dst, n);
    case GgmlType::Q5_K: return blocks<BlockQ5_K, deq_q5_k, 256>(src, dst, n);
    case GgmlType::Q6_K: return blocks<BlockQ6_K, deq_q6_k, 256>(src, dst, n);
    case GgmlType::Q8_K: return blocks<BlockQ8_K, deq_q8_k, 256>(src, dst, n);
    case GgmlType::IQ2_XXS: return blocks<BlockIQ2_XXS, deq_iq2_xxs, 256>(src, dst, n);
    case GgmlType::IQ2_XS: return blocks<BlockIQ2_XS, deq_iq2_xs, 256>(src, dst, n);
    case GgmlType::IQ2_S: return blocks<BlockIQ2_S, deq_iq2_s, 256>(src, dst, n);
    case GgmlType::IQ3_XXS: return blocks<BlockIQ3_XXS, deq_iq3_xxs, 256>(src, dst, n);
    case GgmlType::IQ3_S: return blocks<BlockIQ3_S, deq_iq3_s, 256>(src, dst, n);
    case GgmlType::IQ1_S: return blocks<BlockIQ1_S, deq_iq1_s, 256>(src, dst, n);
    case GgmlType::IQ1_M: return blocks<BlockIQ1_M, deq_iq1_m, 256>(src, dst, n);
    case GgmlType::IQ4_NL: return blocks<BlockIQ4_NL, deq_iq4_nl, 32>(src, dst, n);
    case GgmlType::IQ4_XS: return blocks<BlockIQ4_XS, deq_iq4_xs, 256>(src, dst, n);
    default: break;
  }
  throw Error(std::string("dequantize_row: no dequantiser for tensor type ") + type_name(t));
}

}  // namespace ember::quant
