// The integer dot products of the CUDA cores (gemv_int8.cu, and the one-token
// MoE down product, moe_down.cu): how each int8-product format's weight codes
// are fetched, decoded and met with int8 activation codes in __dp4a, and one
// warp's sums of a few rows, in the order both keep.
//
// A warp takes R rows; its lanes walk each row's super-blocks one "piece" at a
// time (Q4_K, Q5_K: 64 elements, two sub-blocks; Q6_K, Q3_K: 8 elements of each
// of four sub-blocks; Q8_0, Q4_0, IQ4_NL: one 32-element block; IQ4_XS and the
// grid formats IQ3_XXS, IQ3_S, IQ2_S: one 32-element sub-block). A piece's
// weights are decoded once and multiplied with every token of the pass.
#pragma once
#include <cstdint>
#include <utility>

#include "backend/cuda/dequant.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/int8_acts.h"
#include "backend/cuda/iq_grids.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/warp_reduce.cuh"

namespace ember::cuda {

// One token's activation row, as the products read it (no sums in the Q8_0 style).
struct ActRow {
  const int8_t* q;
  const float* d;
  const int32_t* sums;
};

__device__ __forceinline__ ActRow act_row(const Int8Acts& a, int64_t t) {
  return {a.q + t * a.k, a.d + t * (a.k / scale_elems(a.style)), a.sums ? a.sums + t * (a.k / kInt8Group) : nullptr};
}

template <GgmlType T>
struct Int8Format;

// Q4_K: piece pp (0..3) of a block is qs[32pp, 32pp + 32): low nibbles are
// sub-block 2pp, high nibbles sub-block 2pp + 1.
template <>
struct Int8Format<GgmlType::Q4_K> {
  static constexpr int kPieces = 4;
  // The bytes as loaded (12 registers), decoded only when multiplied, so
  // that several pieces can be in flight per lane for few registers.
  struct Raw {
    uint4 hdr, q0, q1;
  };
  struct Piece {
    uint32_t lo[8], hi[8];
    float d, dmin;
    int sc0, sc1, m0, m1;
  };
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockQ4_K);
    r.hdr = *reinterpret_cast<const uint4*>(blk);
    const uint4* qv = reinterpret_cast<const uint4*>(blk + 16 + 32 * pp);
    r.q0 = qv[0];
    r.q1 = qv[1];
  }
  __device__ __forceinline__ static void decode(const Raw& r, int pp, Piece& w) {
    const uint4 hdr = r.hdr, q0 = r.q0, q1 = r.q1;
    const uint32_t words[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      w.lo[i] = words[i] & 0x0F0F0F0Fu;
      w.hi[i] = (words[i] >> 4) & 0x0F0F0F0Fu;
    }
    scales(hdr, pp, w);
  }
  // Sub-blocks 2pp and 2pp + 1: their scales and mins are 24 consecutive bits (Q5_K's too).
  __device__ __forceinline__ static void scales(const uint4& hdr, int pp, Piece& w) {
    const uint32_t v = q4k_scale_bits(hdr, 2 * pp);
    w.sc0 = int(v & 63);
    w.m0 = int((v >> 6) & 63);
    w.sc1 = int((v >> 12) & 63);
    w.m1 = int((v >> 18) & 63);
    w.d = h2f(uint16_t(hdr.x));
    w.dmin = h2f(uint16_t(hdr.x >> 16));
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    const uint4* a = reinterpret_cast<const uint4*>(x.q + sb * 256 + 64 * pp);
    const uint4 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const int av[16] = {int(a0.x), int(a0.y), int(a0.z), int(a0.w), int(a1.x), int(a1.y), int(a1.z), int(a1.w),
                        int(a2.x), int(a2.y), int(a2.z), int(a2.w), int(a3.x), int(a3.y), int(a3.z), int(a3.w)};
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      s0 = __dp4a(int(w.lo[i]), av[i], s0);
      s1 = __dp4a(int(w.hi[i]), av[8 + i], s1);
    }
    const int4 g = *reinterpret_cast<const int4*>(x.sums + sb * 16 + 4 * pp);
    const int mins = w.m0 * (g.x + g.y) + w.m1 * (g.z + g.w);
    return x.d[sb] * (w.d * float(w.sc0 * s0 + w.sc1 * s1) - w.dmin * float(mins));
  }
};

// Q5_K (176-byte blocks, 16-byte aligned; scales in the device layout, as
// Q4_K's): piece pp (0..3) is qs[32pp, 32pp + 32) as Q4_K's, each code's fifth
// bit from qh: bit 2pp (low nibbles) or 2pp + 1 (high) of qh[l] for element l
// of the sub-block. Codes 0..31 and the same arithmetic as Q4_K's.
template <>
struct Int8Format<GgmlType::Q5_K> {
  static constexpr int kPieces = 4;
  struct Raw {
    uint4 hdr, q0, q1, h0, h1;
  };
  using Piece = Int8Format<GgmlType::Q4_K>::Piece;
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockQ5_K);
    r.hdr = *reinterpret_cast<const uint4*>(blk);
    const uint4* hv = reinterpret_cast<const uint4*>(blk + 16);
    r.h0 = hv[0];
    r.h1 = hv[1];
    const uint4* qv = reinterpret_cast<const uint4*>(blk + 48 + 32 * pp);
    r.q0 = qv[0];
    r.q1 = qv[1];
  }
  __device__ __forceinline__ static void decode(const Raw& r, int pp, Piece& w) {
    const uint4 hdr = r.hdr, q0 = r.q0, q1 = r.q1, h0 = r.h0, h1 = r.h1;
    const uint32_t words[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const uint32_t high[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      w.lo[i] = (words[i] & 0x0F0F0F0Fu) | (((high[i] >> (2 * pp)) & 0x01010101u) << 4);
      w.hi[i] = ((words[i] >> 4) & 0x0F0F0F0Fu) | (((high[i] >> (2 * pp + 1)) & 0x01010101u) << 4);
    }
    Int8Format<GgmlType::Q4_K>::scales(hdr, pp, w);
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return Int8Format<GgmlType::Q4_K>::dot(w, x, sb, pp);
  }
};

// Q6_K: piece p (0..7) is half h = p / 4 of the block and l in [8g, 8g + 8),
// g = p % 4: 8 elements of each of the half's four 32-element sub-blocks.
template <>
struct Int8Format<GgmlType::Q6_K> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t A[2], B[2], H[2];  // low bits of two sub-block pairs, high bits
    int sc[4];
    float d;
  };
  struct Piece {
    uint32_t c[4][2];  // codes minus 32 as signed bytes: sub-block k, two words
    int sc[4];
    float d;
  };
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int p, Raw& r) {
    // 210-byte blocks are only 2-byte aligned.
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockQ6_K);
    const int h = p / 4, l0 = 8 * (p % 4);
    const uint8_t* ql = blk + 64 * h + l0;
    const uint8_t* qh = blk + 128 + 32 * h + l0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      r.A[i] = ld_u32(ql + 4 * i);
      r.B[i] = ld_u32(ql + 32 + 4 * i);
      r.H[i] = ld_u32(qh + 4 * i);
    }
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
#pragma unroll
    for (int k = 0; k < 4; ++k) r.sc[k] = scales[8 * h + 2 * k + (l0 >= 16)];
    r.d = h2f(*reinterpret_cast<const uint16_t*>(blk + 208));
  }
  __device__ __forceinline__ static void decode(const Raw& r, int, Piece& w) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      w.c[0][i] = q6k_codes<0>(r.A[i], r.B[i], r.H[i]);
      w.c[1][i] = q6k_codes<1>(r.A[i], r.B[i], r.H[i]);
      w.c[2][i] = q6k_codes<2>(r.A[i], r.B[i], r.H[i]);
      w.c[3][i] = q6k_codes<3>(r.A[i], r.B[i], r.H[i]);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) w.sc[k] = r.sc[k];
    w.d = r.d;
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int p) {
    const int h = p / 4, l0 = 8 * (p % 4);
    const int8_t* q = x.q + sb * 256 + 128 * h + l0;
    int s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint2 a = *reinterpret_cast<const uint2*>(q + 32 * k);
      s += w.sc[k] * __dp4a(int(w.c[k][1]), int(a.y), __dp4a(int(w.c[k][0]), int(a.x), 0));
    }
    return x.d[sb] * w.d * float(s);
  }
};

// Q3_K (110-byte blocks, only 2-byte aligned: hmask[32], qs[64], 12 scale
// bytes, d): element 128h + 32k + l is bits 2k, 2k + 1 of qs[32h + l] with bit
// 4h + k of hmask[l] above them, minus 4, its scale number 2(4h + k) + l / 16
// (6 bits, minus 32). Piece p (0..7) is half h = p / 4 and l in [8g, 8g + 8),
// g = p % 4, of its four sub-blocks, as Q6_K's pieces.
template <>
struct Int8Format<GgmlType::Q3_K> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t A[2], H[2], S[3];
    uint16_t d;
  };
  using Piece = Int8Format<GgmlType::Q6_K>::Piece;  // codes minus 4, the same arithmetic
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int p, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockQ3_K);
    const int h = p / 4, l0 = 8 * (p % 4);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      r.A[i] = ld_u32(blk + 32 + 32 * h + l0 + 4 * i);
      r.H[i] = ld_u32(blk + l0 + 4 * i);
    }
#pragma unroll
    for (int i = 0; i < 3; ++i) r.S[i] = ld_u32(blk + 96 + 4 * i);
    r.d = *reinterpret_cast<const uint16_t*>(blk + 108);
  }
  __device__ __forceinline__ static void decode(const Raw& r, int p, Piece& w) {
    const int h = p / 4, upper = (p % 4) >= 2;  // elements l >= 16: the sub-block's second scale
#pragma unroll
    for (int k = 0; k < 4; ++k) {
#pragma unroll
      for (int i = 0; i < 2; ++i) w.c[k][i] = q3k_codes(r.A[i], r.H[i], k, 4 * h + k);
      w.sc[k] = q3k_scale_of(r.S, 2 * (4 * h + k) + upper);
    }
    w.d = h2f(r.d);
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int p) {
    return Int8Format<GgmlType::Q6_K>::dot(w, x, sb, p);
  }
};

// The 32 activation codes at a (16-byte aligned) as eight words.
__device__ __forceinline__ void act_words32(const int8_t* a, int (&av)[8]) {
  const uint4 a0 = reinterpret_cast<const uint4*>(a)[0], a1 = reinterpret_cast<const uint4*>(a)[1];
  av[0] = int(a0.x), av[1] = int(a0.y), av[2] = int(a0.z), av[3] = int(a0.w);
  av[4] = int(a1.x), av[5] = int(a1.y), av[6] = int(a1.z), av[7] = int(a1.w);
}
// The exact sum of 32 weight codes (eight words: elements 0..31 in order) times
// the 32 activation codes at a: the integer sum of a 32-element block or sub-block.
__device__ __forceinline__ int codes_dot32(const uint32_t (&c)[8], const int8_t* a) {
  int av[8];
  act_words32(a, av);
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = __dp4a(int(c[i]), av[i], s);
  return s;
}
// The same over elements 0..15 (x) and 16..31 (y) apart, for a scale per half (IQ2_S).
__device__ __forceinline__ int2 codes_dot16x2(const uint32_t (&c)[8], const int8_t* a) {
  int av[8];
  act_words32(a, av);
  int2 s = make_int2(0, 0);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s.x = __dp4a(int(c[i]), av[i], s.x);
    s.y = __dp4a(int(c[4 + i]), av[4 + i], s.y);
  }
  return s;
}

// Q8_0 (blocks of 32 codes and a half-precision scale, in the device layout:
// a super-block's eight blocks' codes, 16-byte aligned, then their scales,
// block32_layout.cuh): piece pp (0..7) of a 256-element block is its Q8_0
// block pp, met with activations in the Q8_0 style (one scale per 32,
// int8_acts.h), as the CPU multiplies them.
template <>
struct Int8Format<GgmlType::Q8_0> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t q[8];
    float d;
  };
  using Piece = Raw;
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    using L = Block32Layout<GgmlType::Q8_0>;
    const uint4* q = reinterpret_cast<const uint4*>(row + L::codes_at(8 * sb + pp));
    const uint4 q0 = q[0], q1 = q[1];
    r.q[0] = q0.x, r.q[1] = q0.y, r.q[2] = q0.z, r.q[3] = q0.w;
    r.q[4] = q1.x, r.q[5] = q1.y, r.q[6] = q1.z, r.q[7] = q1.w;
    r.d = h2f(*reinterpret_cast<const uint16_t*>(row + L::group_scales_at(sb) + 2 * pp));
  }
  __device__ __forceinline__ static void decode(const Raw& r, int, Piece& w) { w = r; }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return x.d[8 * sb + pp] * w.d * float(codes_dot32(w.q, x.q + sb * 256 + 32 * pp));
  }
};

// Q4_0 and IQ4_NL (blocks of a half-precision scale and 16 bytes, low nibbles
// elements 0..15, high nibbles 16..31; codes minus 8, or from the IQ4 table;
// in the device layout as Q8_0's): piece pp (0..7) of a 256-element block is
// its block pp, met with activations in the Q8_0 style, as the CPU multiplies
// them.
template <GgmlType T>
struct Nibble32Format {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t q[4];
    float d;
  };
  using Piece = Int8Format<GgmlType::Q8_0>::Piece;  // the block's 32 codes, as Q8_0 keeps them
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    // Rows of whole super-blocks: whole groups, 16-byte aligned codes.
    const uint4 q = *reinterpret_cast<const uint4*>(row + Block32Layout<T>::codes_at(8 * sb + pp));
    r.q[0] = q.x, r.q[1] = q.y, r.q[2] = q.z, r.q[3] = q.w;
    r.d = h2f(*reinterpret_cast<const uint16_t*>(row + Block32Layout<T>::group_scales_at(sb) + 2 * pp));
  }
  __device__ __forceinline__ static void decode(const Raw& r, int, Piece& w) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w.q[i] = nibble_codes<T>(r.q[i]);
      w.q[4 + i] = nibble_codes<T>(r.q[i] >> 4);
    }
    w.d = r.d;
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return Int8Format<GgmlType::Q8_0>::dot(w, x, sb, pp);
  }
};
template <>
struct Int8Format<GgmlType::Q4_0> : Nibble32Format<GgmlType::Q4_0> {};
template <>
struct Int8Format<GgmlType::IQ4_NL> : Nibble32Format<GgmlType::IQ4_NL> {};

// IQ4_XS (136-byte blocks, 8-byte aligned: d, the scales' high bits, their
// low nibbles, then 128 bytes of table indices): piece pp (0..7) is sub-block
// pp, its 16 bytes laid out as Q4_0's block (low nibbles elements 0..15, high
// 16..31), its scale ls - 32 in -32..31; K-style activations, as the CPU's.
template <>
struct Int8Format<GgmlType::IQ4_XS> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint2 hdr;  // d, scales_h; scales_l
    uint2 q0, q1;
  };
  struct Piece {
    uint32_t c[8];  // the codes of elements 0..15, then 16..31
    int ls;
    float d;
  };
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockIQ4_XS);
    r.hdr = *reinterpret_cast<const uint2*>(blk);
    const uint2* qv = reinterpret_cast<const uint2*>(blk + 8 + 16 * pp);
    r.q0 = qv[0];
    r.q1 = qv[1];
  }
  __device__ __forceinline__ static void decode(const Raw& r, int pp, Piece& w) {
    const uint32_t q[4] = {r.q0.x, r.q0.y, r.q1.x, r.q1.y};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w.c[i] = iq4nl_codes(q[i]);
      w.c[4 + i] = iq4nl_codes(q[i] >> 4);
    }
    w.ls = iq4xs_sub_scale(r.hdr, pp);
    w.d = h2f(uint16_t(r.hdr.x));
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return x.d[sb] * w.d * float(w.ls * codes_dot32(w.c, x.q + sb * 256 + 32 * pp));
  }
};

// The grid formats (IQ3_XXS, IQ3_S, IQ2_S; 98-, 110- and 82-byte blocks, only
// 2-byte aligned): each grid index names 4 (IQ3) or 8 (IQ2) unsigned values,
// each value's sign comes from a sign bit, and the sub-block's weights are
// grid_d(d) times its integer scale (iq_grids.cuh; IQ2_S one per 16 elements).
// Piece pp is sub-block pp; its 32 codes are words c[0..7] in element order.
// K-style activations, as the CPU's products of these formats round them.
struct GridPiece {
  uint32_t c[8];
  int s[2];  // the integer scales of elements 0..15 and 16..31 (equal but for IQ2_S)
  float d;   // grid_d of the block scale
};
__device__ __forceinline__ float grid_piece_dot(const GridPiece& w, const ActRow& x, int64_t sb, int pp) {
  const int2 h = codes_dot16x2(w.c, x.q + sb * 256 + 32 * pp);
  return x.d[sb] * w.d * float(w.s[0] * h.x + w.s[1] * h.y);
}

// IQ3_XXS: sub-block pp's 8 grid indices are qs[8pp, 8pp + 8) (index k: elements
// 4k..4k + 3); its word at 66 + 4pp holds four 7-bit sign indices (one per 8
// elements) and the scale ls in its top 4 bits.
template <>
struct Int8Format<GgmlType::IQ3_XXS> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t idx[2], aux;
    uint16_t d;
  };
  using Piece = GridPiece;
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockIQ3_XXS);
    r.d = *reinterpret_cast<const uint16_t*>(blk);
    r.idx[0] = ld_u32(blk + 2 + 8 * pp);
    r.idx[1] = ld_u32(blk + 6 + 8 * pp);
    r.aux = ld_u32(blk + 66 + 4 * pp);
  }
  __device__ __forceinline__ static void decode(const Raw& r, int, Piece& w) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t signs = iq_sign_byte((r.aux >> (7 * l)) & 127u);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int k = 2 * l + half;
        w.c[k] = signed_codes(kIQ3XXSGridDevice.v[(r.idx[k / 4] >> (8 * (k % 4))) & 0xFFu], signs >> (4 * half));
      }
    }
    w.s[0] = w.s[1] = grid_scale(r.aux >> 28);
    w.d = grid_d<GgmlType::IQ3_XXS>(r.d);
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return grid_piece_dot(w, x, sb, pp);
  }
};

// IQ3_S: index k of sub-block pp is qs[8pp + k] with bit k of qh[pp] as its
// ninth bit; signs[4pp, 4pp + 4) hold one sign bit per element; the scale is
// nibble pp % 2 of scales[pp / 2].
template <>
struct Int8Format<GgmlType::IQ3_S> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t idx[2], signs;
    uint16_t d;
    uint8_t qh, scale;
  };
  using Piece = GridPiece;
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockIQ3_S);
    r.d = *reinterpret_cast<const uint16_t*>(blk);
    r.idx[0] = ld_u32(blk + 2 + 8 * pp);
    r.idx[1] = ld_u32(blk + 6 + 8 * pp);
    r.qh = blk[66 + pp];
    r.signs = ld_u32(blk + 74 + 4 * pp);
    r.scale = blk[106 + pp / 2];
  }
  __device__ __forceinline__ static void decode(const Raw& r, int pp, Piece& w) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t index = ((r.idx[k / 4] >> (8 * (k % 4))) & 0xFFu) | ((uint32_t(r.qh) >> k & 1u) << 8);
      w.c[k] = signed_codes(kIQ3SGridDevice.v[index], r.signs >> (4 * k));
    }
    w.s[0] = w.s[1] = grid_scale(r.scale >> (4 * (pp % 2)));
    w.d = grid_d<GgmlType::IQ3_S>(r.d);
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return grid_piece_dot(w, x, sb, pp);
  }
};

// IQ2_S: index l (elements 8l..8l + 7) of sub-block pp is qs[4pp + l] with bits
// 2l, 2l + 1 of qh[pp] above it, its 8 sign bits qs[32 + 4pp + l]; scales[pp]
// holds the scale of elements 0..15 in its low nibble, of 16..31 in its high one.
template <>
struct Int8Format<GgmlType::IQ2_S> {
  static constexpr int kPieces = 8;
  struct Raw {
    uint32_t idx, signs;
    uint16_t d;
    uint8_t qh, scales;
  };
  using Piece = GridPiece;
  __device__ __forceinline__ static void fetch(const uint8_t* row, int64_t sb, int pp, Raw& r) {
    const uint8_t* blk = row + size_t(sb) * sizeof(BlockIQ2_S);
    r.d = *reinterpret_cast<const uint16_t*>(blk);
    r.idx = ld_u32(blk + 2 + 4 * pp);
    r.signs = ld_u32(blk + 34 + 4 * pp);
    r.qh = blk[66 + pp];
    r.scales = blk[74 + pp];
  }
  __device__ __forceinline__ static void decode(const Raw& r, int, Piece& w) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t index = ((r.idx >> (8 * l)) & 0xFFu) | ((uint32_t(r.qh) >> (2 * l) & 3u) << 8);
      const uint64_t g = kIQ2SGridDevice.v[index];
      const uint32_t signs = r.signs >> (8 * l);
      w.c[2 * l] = signed_codes(uint32_t(g), signs);
      w.c[2 * l + 1] = signed_codes(uint32_t(g >> 32), signs >> 4);
    }
    w.s[0] = grid_scale(r.scales);
    w.s[1] = grid_scale(r.scales >> 4);
    w.d = grid_d<GgmlType::IQ2_S>(r.d);
  }
  __device__ __forceinline__ static float dot(const Piece& w, const ActRow& x, int64_t sb, int pp) {
    return grid_piece_dot(w, x, sb, pp);
  }
};

// R rows (row0.. ; rows past the matrix repeat its last row, computed and never
// written) against NT activation rows; acc[r][t] ends in every lane. Each lane
// loads U pieces of every row before multiplying any, so that many loads are in
// flight per lane; the sums still run piece after piece in index order.
// With await_inputs the activations are not ready yet (launch.cuh): the first
// weights are loaded, then the lane waits for the kernel before this one.
template <GgmlType T, int NT, int R, int U>
__device__ __forceinline__ void rows_dot(const uint8_t* W, size_t stride, int64_t row0, int64_t rows, int64_t blocks,
                                         const ActRow (&x)[NT], float (&acc)[R][NT], bool await_inputs) {
  using F = Int8Format<T>;
  const int lane = threadIdx.x & 31;
  const uint8_t* row[R];
  start_rows(W, stride, row0, rows, row, acc);
  const int64_t pieces = blocks * F::kPieces;
  for (int64_t p0 = lane; p0 < pieces; p0 += 32 * U) {
    typename F::Raw raw[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t p = p0 + 32 * u;
      if (p < pieces)
#pragma unroll
        for (int r = 0; r < R; ++r) F::fetch(row[r], p / F::kPieces, int(p % F::kPieces), raw[u][r]);
    }
    if (await_inputs) {
      begin_kernel();
      await_inputs = false;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t p = p0 + 32 * u;
      if (p < pieces) {
        typename F::Piece w[R];
#pragma unroll
        for (int r = 0; r < R; ++r) F::decode(raw[u][r], int(p % F::kPieces), w[r]);
#pragma unroll
        for (int t = 0; t < NT; ++t)
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r][t] += F::dot(w[r], x[t], p / F::kPieces, int(p % F::kPieces));
      }
    }
  }
  if (await_inputs) begin_kernel();  // a lane without pieces
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = warp_sum(acc[r][t]);
}

// Calls f.template operator()<T>() for a format whose integer product meets
// activations in the K style (Q8_K, int8_acts.h); false for the others. The
// kernels that round their own input in that style (the one-token MoE down
// kernel) serve these.
template <class F>
bool dispatch_int8(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::Q4_K: f.template operator()<GgmlType::Q4_K>(); return true;
    case GgmlType::Q5_K: f.template operator()<GgmlType::Q5_K>(); return true;
    case GgmlType::Q6_K: f.template operator()<GgmlType::Q6_K>(); return true;
    case GgmlType::IQ4_XS: f.template operator()<GgmlType::IQ4_XS>(); return true;
    case GgmlType::IQ3_XXS: f.template operator()<GgmlType::IQ3_XXS>(); return true;
    case GgmlType::IQ3_S: f.template operator()<GgmlType::IQ3_S>(); return true;
    case GgmlType::IQ2_S: f.template operator()<GgmlType::IQ2_S>(); return true;
    case GgmlType::Q3_K: f.template operator()<GgmlType::Q3_K>(); return true;
    default: return false;
  }
}

// The same for every format with an integer product (gemv_int8.cu, and on the
// tensor cores gemv_int8_mma.cu): those above, and Q8_0, Q4_0 and IQ4_NL (the Q8_0 style).
template <class F>
bool dispatch_int8_any(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::Q8_0: f.template operator()<GgmlType::Q8_0>(); return true;
    case GgmlType::Q4_0: f.template operator()<GgmlType::Q4_0>(); return true;
    case GgmlType::IQ4_NL: f.template operator()<GgmlType::IQ4_NL>(); return true;
    default: return dispatch_int8(t, std::forward<F>(f));
  }
}

}  // namespace ember::cuda
