// Decoding of weight blocks on the GPU: 32 consecutive elements (one "chunk")
// of a row at a time, for every format ember reads. Each function mirrors the
// CPU reference in quant/dequantize.cpp over the same block structs
// (quant/blocks.h), so the two can be read side by side.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/block32_layout.cuh"
#include "backend/cuda/device_matrix.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace ember::cuda {

using namespace ember::quant;

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf2f(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }
// Blocks are only 2-byte aligned: 32-bit fields are read as two halves.
__device__ __forceinline__ uint32_t ld_u32(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return uint32_t(h[0]) | (uint32_t(h[1]) << 16);
}
// Q4_K (and Q5_K) as the GPU keeps it (device_layout.h): the file's 12 packed scale
// bytes (words y, z and w of the block's first 16 bytes) are re-encoded at
// load so that sub-block s's scale and min are bits [12s, 12s + 6) and
// [12s + 6, 12s + 12) of those 96 bits. The low bits of the result are
// sub-block s's fields, then sub-block s + 1's (bits 12..23); higher bits are
// not its own. One funnel shift instead of ggml's byte juggling: in the
// one-token products that juggling was about a third of the instructions
// per weight.
__device__ __forceinline__ uint32_t q4k_scale_bits(const uint4& hdr, int s) {
  const int bit = 12 * s, word = bit >> 5;
  return __funnelshift_r(word == 0 ? hdr.y : word == 1 ? hdr.z : hdr.w, word == 0 ? hdr.z : hdr.w, bit);
}
__device__ __forceinline__ void q4k_scale_min(const uint4& hdr, int s, int& sc, int& m) {
  const uint32_t v = q4k_scale_bits(hdr, s);
  sc = int(v & 63);
  m = int((v >> 6) & 63);
}
// Q6_K: four codes of sub-block I (0..3) of a half, minus 32, as signed bytes:
// the low (I < 2) or high nibbles of A (I even) or B (I odd), the words of ql
// that hold them, under bits 2I, 2I + 1 of the qh word H.
template <int I>
__device__ __forceinline__ uint32_t q6k_codes(uint32_t A, uint32_t B, uint32_t H) {
  static_assert(I >= 0 && I < 4);
  const uint32_t v = I == 0   ? (A & 0x0F0F0F0Fu) | ((H << 4) & 0x30303030u)
                     : I == 1 ? (B & 0x0F0F0F0Fu) | ((H << 2) & 0x30303030u)
                     : I == 2 ? ((A >> 4) & 0x0F0F0F0Fu) | (H & 0x30303030u)
                              : ((B >> 4) & 0x0F0F0F0Fu) | ((H >> 2) & 0x30303030u);
  return __vsub4(v, 0x20202020u);
}
// Q3_K: scale i (0..15) of a block from its 12 scale bytes as three words:
// the low nibble of byte i % 8 (high nibble past 8), two bits of byte 8 + i % 4.
__device__ __forceinline__ int q3k_scale_of(const uint32_t (&s)[3], int i) {
  const int low = int((s[(i % 8) / 4] >> (8 * (i % 4) + 4 * (i / 8))) & 0xFu);
  const int high = int((s[2] >> (8 * (i % 4) + 2 * (i / 4))) & 3u);
  return (low | (high << 4)) - 32;
}
// Four codes of sub-block k of a half (0..3) as signed bytes: the qs word A's
// bits 2k, 2k + 1 of each byte under the hmask word H's bit `hbit`, minus 4.
__device__ __forceinline__ uint32_t q3k_codes(uint32_t A, uint32_t H, int k, int hbit) {
  return __vsub4(((A >> (2 * k)) & 0x03030303u) | (((H >> hbit) & 0x01010101u) << 2), 0x04040404u);
}
// Q4_0: the low nibbles of four code bytes, minus 8, as signed bytes (shift
// the word right by 4 first for the high nibbles).
__device__ __forceinline__ uint32_t q4_0_codes(uint32_t v) { return __vsub4(v & 0x0F0F0F0Fu, 0x08080808u); }
// IQ4_NL, IQ4_XS: the same four nibbles as indices into the non-linear table
// (quant::iq::kIQ4NLValues), as signed bytes: two byte permutes pick from the
// table's low and high eight entries, bit 3 of each index chooses between them.
__host__ __device__ constexpr uint32_t iq4nl_word(int i) {
  uint32_t w = 0;
  for (int j = 0; j < 4; ++j) w |= uint32_t(uint8_t(quant::iq::kIQ4NLValues[4 * i + j])) << (8 * j);
  return w;
}
__device__ __forceinline__ uint32_t iq4nl_codes(uint32_t v) {
  constexpr uint32_t t0 = iq4nl_word(0), t1 = iq4nl_word(1), t2 = iq4nl_word(2), t3 = iq4nl_word(3);
  v &= 0x0F0F0F0Fu;
  const uint32_t sel = (v & 0x7u) | ((v >> 4) & 0x70u) | ((v >> 8) & 0x700u) | ((v >> 12) & 0x7000u);
  const uint32_t lo = __byte_perm(t0, t1, sel), hi = __byte_perm(t2, t3, sel);
  const uint32_t high = ((v >> 3) & 0x01010101u) * 0xFFu;
  return (lo & ~high) | (hi & high);
}
// IQ4_XS: sub-block ib's scale (ls - 32, as iq4xs_scale) from the block's first
// 8 bytes as one load (hdr.x: d, scales_h; hdr.y: scales_l).
__device__ __forceinline__ int iq4xs_sub_scale(const uint2& hdr, int ib) {
  const int ls = int((hdr.y >> (4 * ib)) & 0xF) | int(((hdr.x >> (16 + 2 * ib)) & 3) << 4);
  return ls - 32;
}
// The codes of the formats of 4-bit indices: Q4_0's, or the IQ4 table's.
template <GgmlType T>
__device__ __forceinline__ uint32_t nibble_codes(uint32_t v) {
  static_assert(T == GgmlType::Q4_0 || T == GgmlType::IQ4_NL || T == GgmlType::IQ4_XS);
  if constexpr (T == GgmlType::Q4_0) return q4_0_codes(v);
  else return iq4nl_codes(v);
}
__device__ __forceinline__ float sign_of(uint32_t signs, int j) { return (signs >> j) & 1 ? -1.f : 1.f; }

// The code bytes of block b of a row of nb blocks of format T in the device
// layout, as words. A row's start is 16-byte aligned where its groups are
// whole (nb % 8 == 0: rows of 272 or 144 bytes a group), so its blocks' codes
// are too and come in 16-byte loads; a row whose last group is short starts
// only 2-byte aligned (34 or 18 bytes a block), and its codes come as 2-byte loads.
template <GgmlType T, int N>
__device__ __forceinline__ void block32_codes(const uint8_t* row, int64_t b, int64_t nb, uint32_t (&w)[N]) {
  static_assert(4 * N == Block32Layout<T>::kCodeBytes);
  const uint8_t* p = row + Block32Layout<T>::codes_at(b);
  if (nb % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[i];
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = ld_u32(p + 4 * i);
  }
}
// The scale of block b of a row of nb blocks in the device layout.
template <GgmlType T>
__device__ __forceinline__ float block32_scale(const uint8_t* row, int64_t b, int64_t nb) {
  return h2f(*reinterpret_cast<const uint16_t*>(row + Block32Layout<T>::scale_at(b, nb)));
}

// Elements [32c, 32c + 32) of a row of `chunks` such chunks in format T into
// y, as the device keeps it (device_layout.h).
template <GgmlType T>
__device__ __forceinline__ void dequant_chunk(const uint8_t* row, int64_t c, int64_t chunks, const IqTables& tab,
                                              float* y) {
  if constexpr (T == GgmlType::F32) {
    const float4* p = reinterpret_cast<const float4*>(row) + 8 * c;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float4 v = p[j];
      y[4 * j] = v.x; y[4 * j + 1] = v.y; y[4 * j + 2] = v.z; y[4 * j + 3] = v.w;
    }
  } else if constexpr (T == GgmlType::F16 || T == GgmlType::BF16) {
    const uint4* p = reinterpret_cast<const uint4*>(row) + 4 * c;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint4 v = p[j];
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint16_t lo = uint16_t(w[i]), hi = uint16_t(w[i] >> 16);
        y[8 * j + 2 * i] = T == GgmlType::F16 ? h2f(lo) : bf2f(lo);
        y[8 * j + 2 * i + 1] = T == GgmlType::F16 ? h2f(hi) : bf2f(hi);
      }
    }
  } else if constexpr (T == GgmlType::Q4_0 || T == GgmlType::IQ4_NL) {
    // 16 code bytes (block32_layout.cuh); the same signed codes the integer products multiply.
    uint32_t words[4];
    block32_codes<T>(row, c, chunks, words);
    const float d = block32_scale<T>(row, c, chunks);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = nibble_codes<T>(words[i]), hi = nibble_codes<T>(words[i] >> 4);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        y[4 * i + j] = d * float(int8_t(lo >> (8 * j)));
        y[16 + 4 * i + j] = d * float(int8_t(hi >> (8 * j)));
      }
    }
  } else if constexpr (T == GgmlType::Q4_1) {
    const BlockQ4_1& b = reinterpret_cast<const BlockQ4_1*>(row)[c];
    const float d = h2f(b.d), m = h2f(b.m);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      y[j] = d * float(b.qs[j] & 0xF) + m;
      y[j + 16] = d * float(b.qs[j] >> 4) + m;
    }
  } else if constexpr (T == GgmlType::Q5_0) {
    const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[c];
    const float d = h2f(b.d);
    const uint32_t qh = ld_u32(b.qh);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * float(((b.qs[j] & 0xF) | h0) - 16);
      y[j + 16] = d * float(((b.qs[j] >> 4) | h1) - 16);
    }
  } else if constexpr (T == GgmlType::Q5_1) {
    const BlockQ5_1& b = reinterpret_cast<const BlockQ5_1*>(row)[c];
    const float d = h2f(b.d), m = h2f(b.m);
    const uint32_t qh = ld_u32(b.qh);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * float((b.qs[j] & 0xF) | h0) + m;
      y[j + 16] = d * float((b.qs[j] >> 4) | h1) + m;
    }
  } else if constexpr (T == GgmlType::Q8_0) {
    // 32 code bytes (block32_layout.cuh).
    uint32_t words[8];
    block32_codes<T>(row, c, chunks, words);
    const float d = block32_scale<T>(row, c, chunks);
#pragma unroll
    for (int j = 0; j < 32; ++j) y[j] = d * float(int8_t(words[j / 4] >> (8 * (j % 4))));
  } else if constexpr (T == GgmlType::Q8_1) {
    // As in the file: blocks are 4-byte aligned, the codes arrive as 8 four-byte loads.
    const BlockQ8_1& b = reinterpret_cast<const BlockQ8_1*>(row)[c];
    const float d = h2f(b.d);
    const uint32_t* q = reinterpret_cast<const uint32_t*>(b.qs);
#pragma unroll
    for (int j = 0; j < 32; ++j) y[j] = d * float(int8_t(q[j / 4] >> (8 * (j % 4))));
  } else {
    // The 256-element super-block formats: chunk c is sub-block ib of block c / 8.
    const int ib = int(c & 7);
    if constexpr (T == GgmlType::Q2_K) {
      const BlockQ2_K& b = reinterpret_cast<const BlockQ2_K*>(row)[c >> 3];
      const float d = h2f(b.d), dmin = h2f(b.dmin);
      const int half = ib / 4, shift = 2 * (ib % 4);
#pragma unroll
      for (int l = 0; l < 32; ++l) {
        const int g = 2 * ib + l / 16;
        const int q = (b.qs[32 * half + l] >> shift) & 3;
        y[l] = d * float(b.scales[g] & 0xF) * float(q) - dmin * float(b.scales[g] >> 4);
      }
    } else if constexpr (T == GgmlType::Q3_K) {
      const BlockQ3_K& b = reinterpret_cast<const BlockQ3_K*>(row)[c >> 3];
      const float d = h2f(b.d);
      const int half = ib / 4, shift = 2 * (ib % 4);
      const float s0 = d * float(q3k_scale(2 * ib, b.scales)), s1 = d * float(q3k_scale(2 * ib + 1, b.scales));
#pragma unroll
      for (int l = 0; l < 32; ++l) {
        const int q = (b.qs[32 * half + l] >> shift) & 3;
        const int hbit = (b.hmask[l] >> (4 * half + ib % 4)) & 1;
        y[l] = (l < 16 ? s0 : s1) * float(q - (hbit ? 0 : 4));
      }
    } else if constexpr (T == GgmlType::Q4_K) {
      // 144-byte blocks stay 16-byte aligned: the header (d, dmin, 12 scale
      // bytes) and this chunk's 32 code bytes arrive in three 16-byte loads.
      const uint8_t* blk = row + size_t(c >> 3) * sizeof(BlockQ4_K);
      const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
      const uint4* qv = reinterpret_cast<const uint4*>(blk + 16 + 32 * (ib / 2));
      const uint4 q0 = qv[0], q1 = qv[1];
      int sc, m;
      q4k_scale_min(hdr, int(ib), sc, m);
      const float ds = h2f(uint16_t(hdr.x)) * float(sc), dm = h2f(uint16_t(hdr.x >> 16)) * float(m);
      const uint32_t words[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
      const int shift = (ib & 1) * 4;
#pragma unroll
      for (int l = 0; l < 32; ++l) y[l] = ds * float((words[l / 4] >> (8 * (l % 4) + shift)) & 0xF) - dm;
    } else if constexpr (T == GgmlType::Q5_K) {
      // In the device layout, as Q4_K (176-byte blocks stay 16-byte aligned).
      const BlockQ5_K& b = reinterpret_cast<const BlockQ5_K*>(row)[c >> 3];
      int sc, m;
      q4k_scale_min(*reinterpret_cast<const uint4*>(&b), int(ib), sc, m);
      const float ds = h2f(b.d) * float(sc), dm = h2f(b.dmin) * float(m);
      const uint8_t* q = b.qs + 32 * (ib / 2);
#pragma unroll
      for (int l = 0; l < 32; ++l) {
        const int v = ((ib & 1) ? (q[l] >> 4) : (q[l] & 0xF)) | (((b.qh[l] >> ib) & 1) << 4);
        y[l] = ds * float(v) - dm;
      }
    } else if constexpr (T == GgmlType::Q6_K) {
      const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c >> 3];
      const float d = h2f(b.d);
      const int h = ib / 4, k = ib % 4;
      const float s0 = d * float(b.scales[2 * ib]), s1 = d * float(b.scales[2 * ib + 1]);
#pragma unroll
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = b.ql[64 * h + l + 32 * (k & 1)];
        const int low4 = k >= 2 ? (lo >> 4) : (lo & 0xF);
        const int hi2 = (b.qh[32 * h + l] >> (2 * k)) & 3;
        y[l] = (l < 16 ? s0 : s1) * float((low4 | (hi2 << 4)) - 32);
      }
    } else if constexpr (T == GgmlType::Q8_K) {
      const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(row)[c >> 3];
#pragma unroll
      for (int l = 0; l < 32; ++l) y[l] = b.d * float(b.qs[32 * ib + l]);
    } else if constexpr (T == GgmlType::IQ2_XXS) {
      const BlockIQ2_XXS& b = reinterpret_cast<const BlockIQ2_XXS*>(row)[c >> 3];
      const uint8_t* qs = reinterpret_cast<const uint8_t*>(b.qs);
      const uint32_t idx = ld_u32(qs + 8 * ib), sgn = ld_u32(qs + 8 * ib + 4);
      const float db = h2f(b.d) * (0.5f + float(sgn >> 28)) * 0.25f;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = tab.iq2xxs[(idx >> (8 * l)) & 0xFF];
        const uint32_t s = tab.ksigns[(sgn >> (7 * l)) & 127];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[8 * l + j] = db * float(uint8_t(g >> (8 * j))) * sign_of(s, j);
      }
    } else if constexpr (T == GgmlType::IQ2_XS) {
      const BlockIQ2_XS& b = reinterpret_cast<const BlockIQ2_XS*>(row)[c >> 3];
      const float d = h2f(b.d);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const int sc = (b.scales[ib] >> (4 * (l / 2))) & 0xF;
        const float db = d * (0.5f + float(sc)) * 0.25f;
        const uint16_t q = b.qs[4 * ib + l];
        const uint64_t g = tab.iq2xs[q & 511];
        const uint32_t s = tab.ksigns[q >> 9];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[8 * l + j] = db * float(uint8_t(g >> (8 * j))) * sign_of(s, j);
      }
    } else if constexpr (T == GgmlType::IQ2_S) {
      const BlockIQ2_S& b = reinterpret_cast<const BlockIQ2_S*>(row)[c >> 3];
      const float d = h2f(b.d);
      const uint8_t* signs = b.qs + 32;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const int sc = (b.scales[ib] >> (4 * (l / 2))) & 0xF;
        const float db = d * (0.5f + float(sc)) * 0.25f;
        const int index = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
        const uint64_t g = tab.iq2s[index];
        const uint32_t s = signs[4 * ib + l];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[8 * l + j] = db * float(uint8_t(g >> (8 * j))) * sign_of(s, j);
      }
    } else if constexpr (T == GgmlType::IQ3_XXS) {
      const BlockIQ3_XXS& b = reinterpret_cast<const BlockIQ3_XXS*>(row)[c >> 3];
      const uint32_t aux = ld_u32(b.qs + 64 + 4 * ib);
      const float db = h2f(b.d) * (0.5f + float(aux >> 28)) * 0.5f;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const uint32_t s = tab.ksigns[(aux >> (7 * l)) & 127];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t g = tab.iq3xxs[b.qs[8 * ib + 2 * l + half]];
#pragma unroll
          for (int j = 0; j < 4; ++j) y[8 * l + 4 * half + j] = db * float((g >> (8 * j)) & 0xFF) * sign_of(s, 4 * half + j);
        }
      }
    } else if constexpr (T == GgmlType::IQ3_S) {
      const BlockIQ3_S& b = reinterpret_cast<const BlockIQ3_S*>(row)[c >> 3];
      const float db = h2f(b.d) * float(1 + 2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const uint32_t s = b.signs[4 * ib + l];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int k = 2 * l + half;
          const int index = b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8);
          const uint32_t g = tab.iq3s[index];
#pragma unroll
          for (int j = 0; j < 4; ++j) y[4 * k + j] = db * float((g >> (8 * j)) & 0xFF) * sign_of(s, 4 * half + j);
        }
      }
    } else if constexpr (T == GgmlType::IQ1_S) {
      const BlockIQ1_S& b = reinterpret_cast<const BlockIQ1_S*>(row)[c >> 3];
      const uint32_t qh = b.qh[ib];
      const float dl = h2f(b.d) * float(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -iq::kIQ1Delta : iq::kIQ1Delta;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = tab.iq1s[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[8 * l + j] = dl * (float(int8_t(uint8_t(g >> (8 * j)))) + delta);
      }
    } else if constexpr (T == GgmlType::IQ1_M) {
      const BlockIQ1_M& b = reinterpret_cast<const BlockIQ1_M*>(row)[c >> 3];
      const uint16_t* sc = reinterpret_cast<const uint16_t*>(b.scales);
      const uint16_t bits =
          uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
      const float d = h2f(bits);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const int s3 = (sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7;
        const float dl = d * float(2 * s3 + 1);
        const uint8_t qh = b.qh[2 * ib + l / 2];
        const int shift = (l % 2) ? 4 : 0;
        const int index = b.qs[4 * ib + l] | (((qh >> shift) & 7) << 8);
        const float delta = ((qh >> shift) & 8) ? -iq::kIQ1Delta : iq::kIQ1Delta;
        const uint64_t g = tab.iq1s[index];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[8 * l + j] = dl * (float(int8_t(uint8_t(g >> (8 * j)))) + delta);
      }
    } else if constexpr (T == GgmlType::IQ4_XS) {
      const BlockIQ4_XS& b = reinterpret_cast<const BlockIQ4_XS*>(row)[c >> 3];
      const float dl = h2f(b.d) * float(iq4xs_scale(b, ib));
      const uint8_t* q = b.qs + 16 * ib;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(tab.iq4nl[q[j] & 0xF]);
        y[j + 16] = dl * float(tab.iq4nl[q[j] >> 4]);
      }
    } else {
      static_assert(T == GgmlType::F32, "dequant_chunk: format without a GPU decoder");
    }
  }
}

// Calls f.template operator()<T>() with the format as a compile-time value;
// returns false for a format the GPU cannot decode.
template <class F>
bool dispatch_format(GgmlType t, F&& f) {
  switch (t) {
#define EMBER_FORMAT_CASE(X) \
  case GgmlType::X: f.template operator()<GgmlType::X>(); return true;
    EMBER_FORMAT_CASE(F32) EMBER_FORMAT_CASE(F16) EMBER_FORMAT_CASE(BF16)
    EMBER_FORMAT_CASE(Q4_0) EMBER_FORMAT_CASE(Q4_1) EMBER_FORMAT_CASE(Q5_0) EMBER_FORMAT_CASE(Q5_1)
    EMBER_FORMAT_CASE(Q8_0) EMBER_FORMAT_CASE(Q8_1) EMBER_FORMAT_CASE(Q2_K) EMBER_FORMAT_CASE(Q3_K)
    EMBER_FORMAT_CASE(Q4_K) EMBER_FORMAT_CASE(Q5_K) EMBER_FORMAT_CASE(Q6_K) EMBER_FORMAT_CASE(Q8_K)
    EMBER_FORMAT_CASE(IQ2_XXS) EMBER_FORMAT_CASE(IQ2_XS) EMBER_FORMAT_CASE(IQ2_S) EMBER_FORMAT_CASE(IQ3_XXS)
    EMBER_FORMAT_CASE(IQ3_S) EMBER_FORMAT_CASE(IQ1_S) EMBER_FORMAT_CASE(IQ1_M) EMBER_FORMAT_CASE(IQ4_NL)
    EMBER_FORMAT_CASE(IQ4_XS)
#undef EMBER_FORMAT_CASE
    default: return false;
  }
}

}  // namespace ember::cuda
