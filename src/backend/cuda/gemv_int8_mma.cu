// Integer products on the tensor cores: the arithmetic of gemv_int8.cu
// (weight codes times the activations' int8 codes, exact integer sums per
// sub-block, scales applied once per group) with the integer sums made by
// mma.sync instead of __dp4a. One mma multiplies a 16-row by 32-element tile
// of weights with up to 8 tokens, so the instructions a token costs fall by an
// order of magnitude: from two tokens on, the dp4a products are bound by
// instructions, not by the bytes they read (bench/RESULTS.md).
//
// A block takes 16 rows and J tiles of 8 tokens; a warp multiplies each
// weight fragment it decodes with TW of the tiles (two, up to four for Q6_K:
// the weights' loads and decoding shared by 16 or 32 tokens), so its 8 warps
// are J / TW groups of tiles times 8 TW / J along the row (block_product).
// Every output is summed in one order whatever J and the token's place: per
// super-block of 256 elements the exact integers, then one float term (Q8_0,
// Q4_0, IQ4_NL: one per block of 32, in block order; rounding spelled out, so
// that no fused multiply-add differs between instantiations); super-block sb
// belongs to class sb % 8, each class adds its terms in order, and the eight
// class sums are added in class order. A token's result is therefore the same
// bits in any batch.
//
// Fragments (PTX ISA, mma.m16n8k32 / m16n8k16 with .s8): lane = 4 g + q.
// The A registers hold rows g and g + 8, the B registers token g, and the
// four sums of a lane are rows g, g + 8 times tokens 2q, 2q + 1. Within a
// sub-block the order of the elements is free as long as weights and
// activations agree on it, so each lane takes runs of bytes that lie together
// in the weight block and in the activation row.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/expert_tiles.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/fused_launch.cuh"
#include "backend/cuda/iq_grids.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/mma_class_sums.cuh"
#include "backend/cuda/weight_loads.cuh"
#include "util/error.h"

#include <algorithm>

namespace ember::cuda {

namespace {

constexpr int kTileRows = 16;  // rows of one block (the mma's M)
constexpr int kClasses = kMmaClasses;  // super-block classes, summed apart and added in order

// Q4_K: ad (d sum_s sc_s p_s - dmin sum_s m_s b_s), p_s the code products of
// sub-block s and b_s its activation codes' sum.
__device__ __forceinline__ float q4k_term(float ad, float d, float dmin, int isum, int imin) {
  return __fmul_rn(ad, __fsub_rn(__fmul_rn(d, float(isum)), __fmul_rn(dmin, float(imin))));
}
// The formats of one weight scale per integer sum: ad d isum. Q6_K, IQ4_XS and
// the grid formats once per super-block (isum: their sub-blocks' sums, each
// times its own integer scale), Q8_0, Q4_0 and IQ4_NL once per block of 32.
__device__ __forceinline__ float scaled_term(float ad, float d, int isum) { return __fmul_rn(__fmul_rn(ad, d), float(isum)); }
__device__ __forceinline__ float add_term(float acc, float term) { return __fadd_rn(acc, term); }

// c += a b over 32 elements: rows g, g + 8 (a) times token g (b).
__device__ __forceinline__ void mma_k32(int (&c)[4], const uint32_t (&a)[4], uint2 b) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

// c += a b over 16 elements.
__device__ __forceinline__ void mma_k16(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(b));
}

// The eight tokens of a warp's tile: where the codes of token g start (for B)
// and the scale rows of tokens 2q, 2q + 1 (for the sums), as offsets from the
// activations' codes and scales (32 bits: registers are what limits the
// kernel's resident warps); -1 where the tile has no token i (act_row(i) < 0),
// which then multiplies as zeros. The host checks that the offsets fit.
struct Tokens {
  int q;
  int d[2];
};
struct ActBase {
  const int8_t* q;  // the codes, in the order the format reads (int8_acts.h)
  const float* d;
};

template <bool Pairs>
__device__ __forceinline__ ActBase act_base(const Int8Acts& a) {
  return {Pairs ? a.pairs : a.q, a.d};
}

// Style: the activations' rounding (a constant, so that the scales' stride is a shift).
template <Int8Style Style, class ActRow>
__device__ __forceinline__ Tokens tile_tokens(const Int8Acts& a, int g, int q, ActRow act_row) {
  Tokens t;
  const int64_t tb = act_row(g);
  t.q = tb >= 0 ? int(tb * a.k) : -1;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int64_t tc = act_row(2 * q + e);
    t.d[e] = tc >= 0 ? int(tc * (a.k / scale_elems(Style))) : -1;
  }
  return t;
}

template <GgmlType T>
struct MmaFormat;

// Tile xt's two activation words at bytes lo and hi of its row from `at` (the
// B fragment of a 32-element group), zeros where the tile has no token g.
__device__ __forceinline__ uint2 act_words(ActBase ab, const Tokens& xt, int64_t at, int lo, int hi) {
  const int8_t* p = ab.q + xt.q + at;
  return xt.q >= 0 ? make_uint2(*reinterpret_cast<const uint32_t*>(p + lo), *reinterpret_cast<const uint32_t*>(p + hi))
                   : make_uint2(0, 0);
}

// Adds the lane's four scaled_terms of one tile: integer sums isum of rows g,
// g + 8 (weight scales d) and tokens 2q, 2q + 1, whose activation scales are
// entry `at` of their rows' scales.
__device__ __forceinline__ void add_scaled_terms(ActBase ab, const Tokens& xt, int64_t at, const float (&d)[2],
                                                 const int (&isum)[4], float (&acc)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float ad = xt.d[e % 2] >= 0 ? ab.d[xt.d[e % 2] + at] : 0.f;
    acc[e] = add_term(acc[e], scaled_term(ad, d[e / 2], isum[e]));
  }
}

// The integer sums of a super-block of TW tiles, cleared; then its one term
// per (row, token) added (the formats of one weight scale per super-block).
template <int TW>
__device__ __forceinline__ void clear_sums(int (&isum)[TW][4]) {
#pragma unroll
  for (int t = 0; t < TW; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) isum[t][e] = 0;
}
template <int TW>
__device__ __forceinline__ void add_super_block_terms(ActBase ab, const Tokens (&x)[TW], int64_t sb, const float (&d)[2],
                                                      const int (&isum)[TW][4], float (&acc)[TW][4]) {
#pragma unroll
  for (int t = 0; t < TW; ++t) add_scaled_terms(ab, x[t], sb, d, isum[t], acc[t]);
}

// Q4_K: 32-byte chunk c of qs holds sub-block 2c in its low nibbles and 2c + 1
// in its high ones. Lane q takes bytes [8q, 8q + 8) of every chunk: their low
// nibbles are elements 8q..8q + 7 of sub-block 2c, which it gives the mma as
// the elements 4q..4q + 3 and 16 + 4q..16 + 4q + 3 of the fragment, and it
// reads the activations of those same elements as one 8-byte load. The mins
// come from a second mma whose A holds each row's min code in all 32 places
// (min code times the sub-block's activation sum), accumulated over the block.
// The activations come in the `pairs` order (int8_acts.h): the lane's codes of
// sub-blocks 2c and 2c + 1 in one 16-byte load, a token's four lanes reading
// 64 consecutive bytes (eight 8-byte loads over 32-byte spans made the
// activations most of the kernel's L1 traffic).
// The Q4_K loads below take lane q's codes of sub-block 2c at 64 c + 16 q and
// those of 2c + 1 eight bytes on: where the pairs order puts them.
constexpr bool q4k_loads_follow_pairs() {
  for (int c = 0; c < 4; ++c)
    for (int q = 0; q < 4; ++q)
      if (pairs_position(64 * c + 8 * q) != 64 * c + 16 * q || pairs_position(64 * c + 32 + 8 * q) != 64 * c + 16 * q + 8)
        return false;
  return true;
}
static_assert(q4k_loads_follow_pairs());
// Q5_K is Q4_K with a fifth bit per code: qh[l] holds bit s for element l of
// sub-block s, so lane q's elements 8q..8q + 7 of every sub-block have their
// fifth bits in qh[8q, 8q + 8), one more 8-byte load per row. Its 16-byte
// header is Q4_K's (scales in the device layout); its codes start 32 bytes later.
template <GgmlType T>
struct MmaK4 {
  static_assert(T == GgmlType::Q4_K || T == GgmlType::Q5_K);
  static constexpr bool kFifthBit = T == GgmlType::Q5_K;
  static constexpr size_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr int kCodesAt = kFifthBit ? 48 : 16;
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = true;
  static constexpr int kTilesPerWarp = 2;  // tiles each decoded fragment meets, at most (measured: 2 beats 1 and 4)
  static constexpr int kParts = 1;         // loads of a super-block's weights (see Q8_0)
  static constexpr bool kPrefetchActs = true;  // prefetch_acts (measured)
  struct Raw {
    uint4 hdr[2];  // d, dmin, scales of rows g and g + 8
    uint2 q[2][4];
    uint2 qh[2];   // Q5_K: the fifth bits of the lane's elements
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int /*part*/, int q, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = row[h] + size_t(sb) * kBlockBytes;
      r.hdr[h] = *reinterpret_cast<const uint4*>(blk);
      if constexpr (kFifthBit) r.qh[h] = *reinterpret_cast<const uint2*>(blk + 16 + 8 * q);
#pragma unroll
      for (int c = 0; c < 4; ++c) r.q[h][c] = *reinterpret_cast<const uint2*>(blk + kCodesAt + 32 * c + 8 * q);
    }
  }
  // The lane's four codes of sub-block s (nibbles at shift) of row h, word w (0: elements 8q..8q + 3, 1: the next four).
  __device__ __forceinline__ static uint32_t codes(const Raw& r, int h, int c, int w, int s, int shift) {
    const uint32_t v = ((w ? r.q[h][c].y : r.q[h][c].x) >> shift) & 0x0F0F0F0Fu;
    if constexpr (!kFifthBit) return v;
    return v | ((((w ? r.qh[h].y : r.qh[h].x) >> s) & 0x01010101u) << 4);
  }
  // The weights' fragments are decoded once and meet each of the TW tiles.
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int /*part*/, int q, float (&acc)[TW][4]) {
    int isum[TW][4], imin[TW][4];
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) isum[t][e] = imin[t][e] = 0;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      uint4 bc[TW];  // the codes of sub-blocks 2c (x, y) and 2c + 1 (z, w)
#pragma unroll
      for (int t = 0; t < TW; ++t)
        bc[t] = x[t].q >= 0 ? *reinterpret_cast<const uint4*>(ab.q + x[t].q + sb * 256 + 64 * c + 16 * q)
                            : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int s = 2 * c + hi, shift = 4 * hi;
        const uint32_t a[4] = {codes(r, 0, c, 0, s, shift), codes(r, 1, c, 0, s, shift), codes(r, 0, c, 1, s, shift),
                               codes(r, 1, c, 1, s, shift)};
        int sc[2], m[2];
        q4k_scale_min(r.hdr[0], s, sc[0], m[0]);
        q4k_scale_min(r.hdr[1], s, sc[1], m[1]);
        const uint32_t am[4] = {uint32_t(m[0]) * 0x01010101u, uint32_t(m[1]) * 0x01010101u,
                                uint32_t(m[0]) * 0x01010101u, uint32_t(m[1]) * 0x01010101u};
#pragma unroll
        for (int t = 0; t < TW; ++t) {
          const uint2 b = hi ? make_uint2(bc[t].z, bc[t].w) : make_uint2(bc[t].x, bc[t].y);
          int prod[4] = {0, 0, 0, 0};
          mma_k32(prod, a, b);
          mma_k32(imin[t], am, b);
#pragma unroll
          for (int e = 0; e < 4; ++e) isum[t][e] += sc[e / 2] * prod[e];
        }
      }
    }
    const float d[2] = {h2f(uint16_t(r.hdr[0].x)), h2f(uint16_t(r.hdr[1].x))};
    const float dmin[2] = {h2f(uint16_t(r.hdr[0].x >> 16)), h2f(uint16_t(r.hdr[1].x >> 16))};
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float ad = x[t].d[e % 2] >= 0 ? ab.d[x[t].d[e % 2] + sb] : 0.f;
        acc[t][e] = add_term(acc[t][e], q4k_term(ad, d[e / 2], dmin[e / 2], isum[t][e], imin[t][e]));
      }
  }
};

template <>
struct MmaFormat<GgmlType::Q4_K> : MmaK4<GgmlType::Q4_K> {};
template <>
struct MmaFormat<GgmlType::Q5_K> : MmaK4<GgmlType::Q5_K> {};

// The formats of a scale per 16 elements laid out in halves of 128 (Q6_K,
// Q3_K): element 128h + 32i + l has scale number 8h + 2i + l / 16. One mma
// of 16 elements per scale: lane q takes l = 16lh + 4q .. 16lh + 4q + 3 of
// each i in word set p = 2h + lh; codes(row, p, i) gives the lane's four codes
// of rows g (row 0) and g + 8 (row 1), scale(row, number) their scales, d the
// rows' block scales; one term per super-block.
template <int TW, class Codes, class Scale>
__device__ __forceinline__ void sixteens_product(ActBase ab, const Tokens (&x)[TW], int64_t sb, int q, const float (&d)[2],
                                                 Codes codes, Scale scale, float (&acc)[TW][4]) {
  int isum[TW][4];
  clear_sums(isum);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int half = p / 2, lh = p % 2;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int si = 8 * half + 2 * i + lh;
      const uint32_t a0 = codes(0, p, i), a1 = codes(1, p, i);
      const int sc[2] = {scale(0, si), scale(1, si)};
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        const uint32_t b =
            x[t].q >= 0 ? *reinterpret_cast<const uint32_t*>(ab.q + x[t].q + sb * 256 + 128 * half + 32 * i + 16 * lh + 4 * q)
                        : 0u;
        int prod[4] = {0, 0, 0, 0};
        mma_k16(prod, a0, a1, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) isum[t][e] += sc[e / 2] * prod[e];
      }
    }
  }
  add_super_block_terms(ab, x, sb, d, isum, acc);
}

// Q6_K: element 128h + 32i + l of a block is the low nibble (i < 2) or high
// nibble (i >= 2) of ql[64h + 32(i % 2) + l] with bits 2i, 2i + 1 of qh[32h + l]
// above it; its scale is scales[8h + 2i + l / 16]. One mma of 16 elements per
// scale: lane q takes l = 16lh + 4q .. 16lh + 4q + 3, three 4-byte words per
// half h and lh that hold its elements of all four i.
template <>
struct MmaFormat<GgmlType::Q6_K> {
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 4;  // measured: 4 beats 2 from 32 tokens (its fragments cost more to decode)
  static constexpr int kParts = 1;
  struct Raw {
    uint32_t ql0[2][4], ql1[2][4], qh[2][4];  // [row][2h + lh]
    uint32_t sc[2][4];                        // the 16 int8 scales of each row
    uint16_t d[2];
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int /*part*/, int q, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // 210-byte blocks are only 2-byte aligned.
      const uint8_t* blk = row[h] + size_t(sb) * sizeof(BlockQ6_K);
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int half = p / 2, lh = p % 2;
        r.ql0[h][p] = ld_u32(blk + 64 * half + 16 * lh + 4 * q);
        r.ql1[h][p] = ld_u32(blk + 64 * half + 32 + 16 * lh + 4 * q);
        r.qh[h][p] = ld_u32(blk + 128 + 32 * half + 16 * lh + 4 * q);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) r.sc[h][i] = ld_u32(blk + 192 + 4 * i);
      r.d[h] = *reinterpret_cast<const uint16_t*>(blk + 208);
    }
  }
  // Codes group i of rows g (h = 0) and g + 8 (h = 1), word set p.
  __device__ __forceinline__ static uint32_t codes(const Raw& r, int h, int p, int i) {
    const uint32_t A = r.ql0[h][p], B = r.ql1[h][p], H = r.qh[h][p];
    return i == 0 ? q6k_codes<0>(A, B, H) : i == 1 ? q6k_codes<1>(A, B, H) : i == 2 ? q6k_codes<2>(A, B, H) : q6k_codes<3>(A, B, H);
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int /*part*/, int q, float (&acc)[TW][4]) {
    const float d[2] = {h2f(r.d[0]), h2f(r.d[1])};
    sixteens_product(
        ab, x, sb, q, d, [&](int h, int p, int i) { return codes(r, h, p, i); },
        [&](int h, int si) { return int(int8_t(r.sc[h][si / 4] >> (8 * (si % 4)))); }, acc);
  }
};

// Q3_K: laid out as Q6_K (int8_dot.cuh): element 128h + 32i + l of a block has
// its two low bits in qs[32h + l] (bits 2i, 2i + 1) and its third in bit 4h + i
// of hmask[l]; its scale is number 2(4h + i) + l / 16. One mma of 16 elements
// per scale: lane q takes l = 16lh + 4q .. 16lh + 4q + 3, one qs word per half
// h and lh, one hmask word per lh, that hold its elements of all four i.
template <>
struct MmaFormat<GgmlType::Q3_K> {
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 4;  // as Q6_K's (not measured apart)
  static constexpr int kParts = 1;
  struct Raw {
    uint32_t qs[2][4], hm[2][2];  // [row][2h + lh], [row][lh]
    uint32_t sc[2][3];            // the 12 scale bytes of each row
    uint16_t d[2];
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int /*part*/, int q, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = row[h] + size_t(sb) * sizeof(BlockQ3_K);  // only 2-byte aligned
#pragma unroll
      for (int p = 0; p < 4; ++p) r.qs[h][p] = ld_u32(blk + 32 + 32 * (p / 2) + 16 * (p % 2) + 4 * q);
#pragma unroll
      for (int lh = 0; lh < 2; ++lh) r.hm[h][lh] = ld_u32(blk + 16 * lh + 4 * q);
#pragma unroll
      for (int i = 0; i < 3; ++i) r.sc[h][i] = ld_u32(blk + 96 + 4 * i);
      r.d[h] = *reinterpret_cast<const uint16_t*>(blk + 108);
    }
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int /*part*/, int q, float (&acc)[TW][4]) {
    const float d[2] = {h2f(r.d[0]), h2f(r.d[1])};
    sixteens_product(
        ab, x, sb, q, d,
        [&](int h, int p, int i) { return q3k_codes(r.qs[h][p], r.hm[h][p % 2], i, 4 * (p / 2) + i); },
        [&](int h, int si) { return q3k_scale_of(r.sc[h], si); }, acc);
  }
};

// Formats of 32-element blocks (Q8_0, Q4_0, IQ4_NL), met with Q8_0-style activations:
// block blk's fragment a (rows g, g + 8) with its rows' scales d, times each
// tile's activations at bytes lo and hi of the block (the fragment's elements
// 4q..4q + 3 and 16 + 4q..16 + 4q + 3), one term per (row, token) added in
// block order.
template <int TW>
__device__ __forceinline__ void block32_terms(const uint32_t (&a)[4], const float (&d)[2], ActBase ab,
                                              const Tokens (&x)[TW], int64_t blk, int lo, int hi, float (&acc)[TW][4]) {
#pragma unroll
  for (int t = 0; t < TW; ++t) {
    int prod[4] = {0, 0, 0, 0};
    mma_k32(prod, a, act_words(ab, x[t], 32 * blk, lo, hi));
    add_scaled_terms(ab, x[t], blk, d, prod, acc[t]);
  }
}
// Block b's scale from a group's eight scales as loaded, two a word.
template <int N>
__device__ __forceinline__ float block_scale(const uint32_t (&d)[N], int b) {
  return h2f(uint16_t(d[b / 2] >> (16 * (b % 2))));
}

// Q8_0: a super-block of 256 elements is eight Q8_0 blocks (32 codes and a
// half-precision scale each), in the device layout: the eight blocks' codes,
// then their eight scales (block32_layout.cuh). Lane q takes bytes [8q, 8q + 8)
// of each block's codes, one 8-byte load, as the fragment's elements
// 4q..4q + 3 and 16 + 4q..16 + 4q + 3, and the activations (Int8Style::Q8_0:
// plain order, a scale per 32) of those same bytes as one 8-byte load. Each
// block adds its own term, in block order, to the super-block's class sum.
// A super-block's weights come in two loads of four blocks.
template <>
struct MmaFormat<GgmlType::Q8_0> {
  static constexpr Int8Style kStyle = Int8Style::Q8_0;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 2;  // as Q4_K's (not measured apart)
  static constexpr int kParts = 2;
  struct Raw {
    uint32_t q[2][4][2];  // [row g, g + 8][block of the part][word]
    uint32_t d[2][2];     // the part's four scales, two halves a word
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int part, int q, Raw& r) {
    using L = Block32Layout<GgmlType::Q8_0>;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const uint2 v = load_weights<uint2>(row[h] + L::codes_at(8 * sb + 4 * part + b) + 8 * q);  // past L1
        r.q[h][b][0] = v.x;
        r.q[h][b][1] = v.y;
      }
      const uint2 d = load_weights<uint2>(row[h] + L::group_scales_at(sb) + 8 * part);
      r.d[h][0] = d.x;
      r.d[h][1] = d.y;
    }
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int part, int q, float (&acc)[TW][4]) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t a[4] = {r.q[0][b][0], r.q[1][b][0], r.q[0][b][1], r.q[1][b][1]};
      const float d[2] = {block_scale(r.d[0], b), block_scale(r.d[1], b)};
      // The activations of the lane's bytes: 8q..8q + 7 of the block.
      block32_terms(a, d, ab, x, 8 * sb + 4 * part + b, 8 * q, 8 * q + 4, acc);
    }
  }
};

// Q4_0 and IQ4_NL (blocks of a half-precision scale and 16 bytes whose low
// nibbles are elements 0..15 and high nibbles 16..31, codes minus 8 or from
// the IQ4 table; in the device layout as Q8_0's): lane q's bytes [4q, 4q + 4)
// of a block hold exactly the fragment's elements 4q..4q + 3 (low nibbles)
// and 16 + 4q..16 + 4q + 3 (high), so weights and activations keep the
// block's own order. Meet Q8_0-style activations, as the CPU's products do.
// A super-block's eight blocks come in one load: eight 4-byte words of codes
// and one 16-byte word of scales a row.
template <GgmlType T>
struct MmaNibble32 {
  static constexpr Int8Style kStyle = Int8Style::Q8_0;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 2;  // as Q4_K's (not measured apart)
  static constexpr int kParts = 1;
  static constexpr bool kPrefetchActs = T == GgmlType::Q4_0;  // measured: IQ4_NL lost with it (spills)
  struct Raw {
    uint32_t q[2][8];  // [row g, g + 8][block]: the lane's 4 code bytes
    uint32_t d[2][4];  // the blocks' scales, two halves a word
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int /*part*/, int q, Raw& r) {
    using L = Block32Layout<T>;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int b = 0; b < 8; ++b) r.q[h][b] = *reinterpret_cast<const uint32_t*>(row[h] + L::codes_at(8 * sb + b) + 4 * q);
      const uint4 d = *reinterpret_cast<const uint4*>(row[h] + L::group_scales_at(sb));
      r.d[h][0] = d.x, r.d[h][1] = d.y, r.d[h][2] = d.z, r.d[h][3] = d.w;
    }
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int /*part*/, int q, float (&acc)[TW][4]) {
#pragma unroll
    for (int b = 0; b < 8; ++b) {
      const uint32_t a[4] = {nibble_codes<T>(r.q[0][b]), nibble_codes<T>(r.q[1][b]), nibble_codes<T>(r.q[0][b] >> 4),
                             nibble_codes<T>(r.q[1][b] >> 4)};
      const float d[2] = {block_scale(r.d[0], b), block_scale(r.d[1], b)};
      block32_terms(a, d, ab, x, 8 * sb + b, 4 * q, 16 + 4 * q, acc);
    }
  }
};
template <>
struct MmaFormat<GgmlType::Q4_0> : MmaNibble32<GgmlType::Q4_0> {};
template <>
struct MmaFormat<GgmlType::IQ4_NL> : MmaNibble32<GgmlType::IQ4_NL> {};

// IQ4_XS (136-byte blocks, 8-byte aligned): sub-block s's 16 index bytes are
// laid out as a Q4_0 block's, so lane q takes bytes [4q, 4q + 4) of each, and
// its scale ls - 32 weighs the sub-block's integer sum; K-style activations
// (plain order), one term per super-block as Q6_K's.
template <>
struct MmaFormat<GgmlType::IQ4_XS> {
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 2;  // as Q4_K's (not measured apart)
  static constexpr int kParts = 1;
  struct Raw {
    uint2 hdr[2];      // d, scales_h; scales_l of rows g and g + 8
    uint32_t q[2][8];  // [row][sub-block]: the lane's 4 index bytes
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int /*part*/, int q, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = row[h] + size_t(sb) * sizeof(BlockIQ4_XS);
      r.hdr[h] = *reinterpret_cast<const uint2*>(blk);
#pragma unroll
      for (int s = 0; s < 8; ++s) r.q[h][s] = *reinterpret_cast<const uint32_t*>(blk + 8 + 16 * s + 4 * q);
    }
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int /*part*/, int q, float (&acc)[TW][4]) {
    int isum[TW][4];
    clear_sums(isum);
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const uint32_t a[4] = {iq4nl_codes(r.q[0][s]), iq4nl_codes(r.q[1][s]), iq4nl_codes(r.q[0][s] >> 4),
                             iq4nl_codes(r.q[1][s] >> 4)};
      const int ls[2] = {iq4xs_sub_scale(r.hdr[0], s), iq4xs_sub_scale(r.hdr[1], s)};
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        int prod[4] = {0, 0, 0, 0};
        mma_k32(prod, a, act_words(ab, x[t], sb * 256 + 32 * s, 4 * q, 16 + 4 * q));
#pragma unroll
        for (int e = 0; e < 4; ++e) isum[t][e] += ls[e / 2] * prod[e];
      }
    }
    const float d[2] = {h2f(uint16_t(r.hdr[0].x)), h2f(uint16_t(r.hdr[1].x))};
    add_super_block_terms(ab, x, sb, d, isum, acc);
  }
};

// The grid formats (int8_dot.cuh says how their codes and integer scales come
// about), K-style activations in plain order, one term per part of a
// super-block (kParts loads of 8 / kParts sub-blocks each: a whole
// super-block's index, sign and scale words of two rows, held twice while the
// next load is in flight, spilled). IQ3_XXS and IQ3_S: lane q takes grid
// entries 2q and 2q + 1 of each sub-block (elements 8q..8q + 7: one 16-bit
// load of index bytes) as the fragment's elements 4q..4q + 3 and 16 + 4q..16 +
// 4q + 3, and the activations of those same bytes; their sign bits are the
// lane's 8 bits of the sub-block (IQ3_XXS: its 7-bit sign index q).
template <GgmlType T>
struct MmaIQ3 {
  static_assert(T == GgmlType::IQ3_XXS || T == GgmlType::IQ3_S);
  static constexpr bool kXXS = T == GgmlType::IQ3_XXS;
  static constexpr size_t kBlockBytes = kXXS ? sizeof(BlockIQ3_XXS) : sizeof(BlockIQ3_S);
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 2;  // as Q4_K's (not measured apart)
  static constexpr int kParts = 2;
  static constexpr int kSub = 8 / kParts;  // sub-blocks a part
  struct Raw {
    uint32_t idx[2][kSub];  // [row g, g + 8][sub-block of the part]: the lane's two index bytes
    uint32_t aux[2][kSub];  // IQ3_XXS: each sub-block's scale and sign word; IQ3_S: the lane's sign byte
    uint32_t qh[2];         // IQ3_S: the ninth index bits of the part's sub-blocks, a byte each
    uint32_t scales[2];     // IQ3_S: their 4-bit scales
    uint16_t d[2];
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int part, int q, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = row[h] + size_t(sb) * kBlockBytes;
      r.d[h] = *reinterpret_cast<const uint16_t*>(blk);
#pragma unroll
      for (int i = 0; i < kSub; ++i) {
        const int s = kSub * part + i;
        r.idx[h][i] = *reinterpret_cast<const uint16_t*>(blk + 2 + 8 * s + 2 * q);
        r.aux[h][i] = kXXS ? ld_u32(blk + 66 + 4 * s) : uint32_t(blk[74 + 4 * s + q]);
      }
      if constexpr (!kXXS) {
        static_assert(kSub == 4);
        r.qh[h] = ld_u32(blk + 66 + 4 * part);
        r.scales[h] = *reinterpret_cast<const uint16_t*>(blk + 106 + 2 * part);
      }
    }
  }
  // Row h's codes of the part's sub-block i: entries 2q (half 0) and 2q + 1 (half 1), and its integer scale.
  __device__ __forceinline__ static void codes(const Raw& r, int h, int i, int q, uint32_t (&c)[2], int& scale) {
    const uint32_t i2 = r.idx[h][i];
    if constexpr (kXXS) {
      const uint32_t signs = iq_sign_byte((r.aux[h][i] >> (7 * q)) & 127u);
      c[0] = signed_codes(kIQ3XXSGridDevice.v[i2 & 0xFFu], signs);
      c[1] = signed_codes(kIQ3XXSGridDevice.v[i2 >> 8], signs >> 4);
      scale = grid_scale(r.aux[h][i] >> 28);
    } else {
      const uint32_t ninth = r.qh[h] >> (8 * i + 2 * q);
      c[0] = signed_codes(kIQ3SGridDevice.v[(i2 & 0xFFu) | ((ninth & 1u) << 8)], r.aux[h][i]);
      c[1] = signed_codes(kIQ3SGridDevice.v[(i2 >> 8) | ((ninth & 2u) << 7)], r.aux[h][i] >> 4);
      scale = grid_scale(r.scales[h] >> (4 * i));
    }
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int part, int q, float (&acc)[TW][4]) {
    int isum[TW][4];
    clear_sums(isum);
#pragma unroll
    for (int i = 0; i < kSub; ++i) {
      uint32_t c0[2], c1[2];
      int sc[2];
      codes(r, 0, i, q, c0, sc[0]);
      codes(r, 1, i, q, c1, sc[1]);
      const uint32_t a[4] = {c0[0], c1[0], c0[1], c1[1]};
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        int prod[4] = {0, 0, 0, 0};
        mma_k32(prod, a, act_words(ab, x[t], sb * 256 + 32 * (kSub * part + i), 8 * q, 8 * q + 4));
#pragma unroll
        for (int e = 0; e < 4; ++e) isum[t][e] += sc[e / 2] * prod[e];
      }
    }
    const float d[2] = {grid_d<T>(r.d[0]), grid_d<T>(r.d[1])};
    add_super_block_terms(ab, x, sb, d, isum, acc);
  }
};
template <>
struct MmaFormat<GgmlType::IQ3_XXS> : MmaIQ3<GgmlType::IQ3_XXS> {};
template <>
struct MmaFormat<GgmlType::IQ3_S> : MmaIQ3<GgmlType::IQ3_S> {};

// IQ2_S: a scale per 16 elements, so two mma of 16 elements per sub-block.
// In half f, lane q takes word q % 2 of grid entry 2f + q / 2 (elements
// 16f + 4q..16f + 4q + 3 in order) and the activations of those bytes.
template <>
struct MmaFormat<GgmlType::IQ2_S> {
  static constexpr Int8Style kStyle = Int8Style::K;
  static constexpr bool kPairs = false;
  static constexpr int kTilesPerWarp = 2;  // as Q4_K's (not measured apart)
  static constexpr int kParts = 2;
  static constexpr int kSub = 8 / kParts;
  static_assert(kSub == 4);
  struct Raw {
    uint32_t idx[2][kSub], signs[2][kSub];  // [row g, g + 8][sub-block of the part]: its four index bytes, its four sign bytes
    uint32_t qh[2], scales[2];              // a byte per sub-block of the part
    uint16_t d[2];
  };
  __device__ __forceinline__ static void fetch(const uint8_t* const (&row)[2], int64_t sb, int part, int /*q*/, Raw& r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = row[h] + size_t(sb) * sizeof(BlockIQ2_S);
      r.d[h] = *reinterpret_cast<const uint16_t*>(blk);
#pragma unroll
      for (int i = 0; i < kSub; ++i) {
        const int s = kSub * part + i;
        r.idx[h][i] = ld_u32(blk + 2 + 4 * s);
        r.signs[h][i] = ld_u32(blk + 34 + 4 * s);
      }
      r.qh[h] = ld_u32(blk + 66 + 4 * part);
      r.scales[h] = ld_u32(blk + 74 + 4 * part);
    }
  }
  // Row h's four codes of half f of the part's sub-block i, and that half's integer scale.
  __device__ __forceinline__ static uint32_t codes(const Raw& r, int h, int i, int f, int q, int& scale) {
    const int l = 2 * f + q / 2;
    const uint32_t ninth = (r.qh[h] >> (8 * i + 2 * l)) & 3u;
    const uint32_t index = ((r.idx[h][i] >> (8 * l)) & 0xFFu) | (ninth << 8);
    const uint32_t g = reinterpret_cast<const uint32_t*>(kIQ2SGridDevice.v)[2 * index + (q & 1)];
    scale = grid_scale(r.scales[h] >> (8 * i + 4 * f));
    return signed_codes(g, r.signs[h][i] >> (8 * l + 4 * (q & 1)));
  }
  template <int TW>
  __device__ __forceinline__ static void multiply(const Raw& r, ActBase ab, const Tokens (&x)[TW], int64_t sb,
                                                  int part, int q, float (&acc)[TW][4]) {
    int isum[TW][4];
    clear_sums(isum);
#pragma unroll
    for (int i = 0; i < kSub; ++i) {
      int sc[2][2];  // [half][row]
      const uint32_t a0[2] = {codes(r, 0, i, 0, q, sc[0][0]), codes(r, 1, i, 0, q, sc[0][1])};
      const uint32_t a1[2] = {codes(r, 0, i, 1, q, sc[1][0]), codes(r, 1, i, 1, q, sc[1][1])};
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        const uint2 b = act_words(ab, x[t], sb * 256 + 32 * (kSub * part + i), 4 * q, 16 + 4 * q);
        int p0[4] = {0, 0, 0, 0}, p1[4] = {0, 0, 0, 0};
        mma_k16(p0, a0[0], a0[1], b.x);
        mma_k16(p1, a1[0], a1[1], b.y);
#pragma unroll
        for (int e = 0; e < 4; ++e) isum[t][e] += sc[0][e / 2] * p0[e] + sc[1][e / 2] * p1[e];
      }
    }
    const float d[2] = {grid_d<GgmlType::IQ2_S>(r.d[0]), grid_d<GgmlType::IQ2_S>(r.d[1])};
    add_super_block_terms(ab, x, sb, d, isum, acc);
  }
};

// Asks L1 for the activation codes of super-block sb of each tile's token g
// (256 bytes a token in either order: lanes q = 0, 1 one 128-byte line each),
// issued with the weights of sb, so that its multiply finds them near instead
// of waiting on L2 after its weights have come (the kernel's stalls are
// mostly loads: bench/results/2026-12-06-s23/run11-ncu-q4k-2tok.txt). Taken
// where it was measured to gain, in one product on an H100: formats that set
// kPrefetchActs, steps of up to 8 tokens (at 2 / 8 tokens Q4_K +11 / +6%,
// Q5_K +5 / +1%, Q4_0 +5 / +6%). IQ4_NL (-7 / -14%, spills), Q6_K, Q8_0,
// IQ4_XS and Q3_K lost with it, the grid formats gained under 5%, and every
// format lost at 16 tokens; the expert products are not measured with it and
// go without.
template <class F>
constexpr bool prefetches_acts() {
  if constexpr (requires { F::kPrefetchActs; }) return F::kPrefetchActs;
  else return false;
}
template <int TW>
__device__ __forceinline__ void prefetch_acts(ActBase ab, const Tokens (&x)[TW], int64_t sb, int q) {
  if (q >= 2) return;
#pragma unroll
  for (int t = 0; t < TW; ++t)
    if (x[t].q >= 0) asm volatile("prefetch.global.L1 [%0];" ::"l"(ab.q + x[t].q + sb * 256 + 128 * q));
}

constexpr int kWarps = 8;  // per block

// One block's products: 16 rows from r0 of W (rows past the matrix repeat its
// last row) times J tiles of 8 tokens, act_row(i) the activation row of token
// i (negative: none, multiplied as zeros). A warp multiplies each weight
// fragment it decodes with TW of the tiles, so the block's 8 warps are G = J /
// TW groups of tiles times 8 / G along k, and a warp multiplies the
// super-blocks of G classes: with G = 1 each warp holds one class, with G = 8
// one warp holds all eight, in eight sums. Each pass loads the next
// super-block's weights (or the next part of this one's) before multiplying
// the ones it has; with Prefetch (the dense products of one tile of tokens),
// formats that set kPrefetchActs also ask L1 for that super-block's
// activations then. The sums of a (row, token) do not depend on TW or J.
//
// Returns true in the warps that hold a tile's result (warp j < J holds tile
// j): `out` then holds the sums of tile `tile`. With await_inputs the first
// weights are loaded before the activations are ready (launch.cuh).
template <GgmlType T, int J, int TW, bool Prefetch, class ActRow>
__device__ __forceinline__ bool block_product(const uint8_t* W, size_t stride, int64_t rows, int64_t r0,
                                              const Int8Acts& a, ActRow act_row, bool await_inputs, int& tile,
                                              float (&out)[4]) {
  using F = MmaFormat<T>;
  static_assert(J % TW == 0);
  constexpr int G = J / TW;       // groups of tiles
  constexpr int Wk = kWarps / G;  // warps along k
  constexpr int S = kClasses / Wk;  // classes per warp
  static_assert(Wk * G == kWarps && Wk * S == kClasses);
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), g = lane >> 2, q = lane & 3;
  const int kw = warp / G, jg = warp % G;
  const uint8_t* const row[2] = {W + size_t(min(r0 + g, rows - 1)) * stride, W + size_t(min(r0 + g + 8, rows - 1)) * stride};
  const int64_t blocks = a.k / 256;
  float acc[S][TW][4];  // class kw + Wk * sl, tile TW * jg + t
#pragma unroll
  for (int sl = 0; sl < S; ++sl)
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[sl][t][e] = 0.f;
  typename F::Raw cur, next;
  if (kw < blocks) F::fetch(row, kw, 0, q, cur);
  if (await_inputs) begin_kernel();
  Tokens x[TW];
#pragma unroll
  for (int t = 0; t < TW; ++t)
    x[t] = tile_tokens<F::kStyle>(a, g, q, [&](int i) { return act_row(8 * (TW * jg + t) + i); });
  const ActBase ab = act_base<F::kPairs>(a);
  constexpr bool kPrefetch = Prefetch && prefetches_acts<F>();
  if constexpr (kPrefetch)
    if (kw < blocks) prefetch_acts(ab, x, kw, q);
  for (int64_t base = kw; base < blocks; base += kClasses) {
#pragma unroll
    for (int sl = 0; sl < S; ++sl) {
      const int64_t sb = base + Wk * sl;
      if (sb < blocks) {
        if constexpr (F::kParts == 1) {
          const bool more = sb + Wk < blocks;
          if (more) {
            F::fetch(row, sb + Wk, 0, q, next);
            if constexpr (kPrefetch) prefetch_acts(ab, x, sb + Wk, q);
          }
          F::template multiply<TW>(cur, ab, x, sb, 0, q, acc[sl]);
          if (more) cur = next;
        } else {
#pragma unroll
          for (int part = 0; part < F::kParts; ++part) {
            const bool last = part + 1 == F::kParts, more = !last || sb + Wk < blocks;
            if (more) F::fetch(row, last ? sb + Wk : sb, last ? 0 : part + 1, q, next);
            if constexpr (kPrefetch)
              if (more && last) prefetch_acts(ab, x, sb + Wk, q);
            F::template multiply<TW>(cur, ab, x, sb, part, q, acc[sl]);
            if (more) cur = next;
          }
        }
      }
    }
  }
  __shared__ MmaPartials<J> partial;  // [class][tile]
#pragma unroll
  for (int sl = 0; sl < S; ++sl)
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) partial[kw + Wk * sl][TW * jg + t][e][lane] = acc[sl][t][e];
  if (!add_class_sums<J>(partial, out)) return false;
  tile = warp;
  return true;
}

// Block (x, y): 16 rows of the matrix fused_part(x) chooses, tokens
// [8J y, 8J y + 8J). Rows past the matrix and tokens past n are not written.
// With add, Y += the products.
template <GgmlType T, int J, int TW>
__global__ void __launch_bounds__(kWarps * 32, 2) gemv_int8_mma_kernel(Fused f, Int8Acts a, bool add) {
  const FusedPart part = fused_part(f, blockIdx.x);
  const int64_t r0 = int64_t(blockIdx.x - part.first) * kTileRows;
  const int64_t t0 = int64_t(blockIdx.y) * 8 * J;
  int tile;
  float out[4];
  auto act_row = [&](int i) -> int64_t { return t0 + i < a.n ? t0 + i : -1; };
  if (!block_product<T, J, TW, J == 1>(part.W, part.stride, part.rows, r0, a, act_row, true, tile, out)) return;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t r = out_row(r0, e), t = t0 + out_token(tile, e);
    if (r < part.rows && t < a.n) {
      float& y = part.Y[t * part.ldy + r];
      y = add ? y + out[e] : out[e];
    }
  }
}

// Expert products: block (x, y) multiplies 16 rows of one expert with the
// items of tile y. Per item (tiles == nullptr): tile y is item y alone, of
// expert ids[y]. Grouped: tiles holds (first, count, expert) triples into
// order (item ids), up to 8J items each (J tiles of 8 tokens, as the dense
// products take them). Item i reads activation row i / x_div and writes row i
// of Y. Blocks [0, blocks0) of x serve W[0], the rest W[1] (gate and up in one
// launch). An item's sums are the same whichever way.
template <GgmlType T, int J, int TW>
__global__ void __launch_bounds__(kWarps * 32, 2) gemv_int8_mma_experts_kernel(ExpertPair m, size_t stride,
                                                                               size_t expert_stride, int64_t rows,
                                                                               const int32_t* ids, const int32_t* order,
                                                                               const int32_t* tiles, Int8Acts a,
                                                                               int x_div, int64_t ldy, int64_t y0) {
  begin_kernel();  // the ids and tiles come from the kernel before
  const ExpertItems it = expert_items(y0 + blockIdx.y, ids, order, tiles);
  if (it.count == 0) return;
  const bool second = blockIdx.x >= m.blocks0;
  const int64_t r0 = int64_t(blockIdx.x - (second ? m.blocks0 : 0u)) * kTileRows;
  const uint8_t* W = (second ? m.W[1] : m.W[0]) + size_t(it.expert) * expert_stride;
  auto act_row = [&](int i) -> int64_t { return i < it.count ? it.item(i) / x_div : -1; };
  int tile;
  float out[4];
  if (!block_product<T, J, TW, false>(W, stride, rows, r0, a, act_row, false, tile, out)) return;
  float* Y = second ? m.Y[1] : m.Y[0];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t r = out_row(r0, e);
    const int i = out_token(tile, e);
    if (r < rows && i < it.count) Y[it.item(i) * ldy + r] = out[e];
  }
}

// The kernels address activation rows with 32-bit offsets (Tokens).
void check_offsets(const Int8Acts& a) {
  if (a.n * a.k > 0x7fffffff) throw Error("CUDA backend: more int8 activations in one product than 2^31");
}

template <class F>
void dispatch(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::Q4_K: f.template operator()<GgmlType::Q4_K>(); return;
    case GgmlType::Q5_K: f.template operator()<GgmlType::Q5_K>(); return;
    case GgmlType::Q6_K: f.template operator()<GgmlType::Q6_K>(); return;
    case GgmlType::Q8_0: f.template operator()<GgmlType::Q8_0>(); return;
    case GgmlType::Q4_0: f.template operator()<GgmlType::Q4_0>(); return;
    case GgmlType::IQ4_NL: f.template operator()<GgmlType::IQ4_NL>(); return;
    case GgmlType::IQ4_XS: f.template operator()<GgmlType::IQ4_XS>(); return;
    case GgmlType::IQ3_XXS: f.template operator()<GgmlType::IQ3_XXS>(); return;
    case GgmlType::IQ3_S: f.template operator()<GgmlType::IQ3_S>(); return;
    case GgmlType::IQ2_S: f.template operator()<GgmlType::IQ2_S>(); return;
    case GgmlType::Q3_K: f.template operator()<GgmlType::Q3_K>(); return;
    default: throw Error(std::string("CUDA backend: no tensor-core int8 product for format ") + type_name(t));
  }
}

}  // namespace

void gemv_int8_mma_fused(std::span<const MatrixOut> outs, const Int8Acts& a, cudaStream_t s, bool add) {
  if (a.n <= 0 || outs.empty()) return;
  check_offsets(a);
  const GgmlType type = outs[0].W->type;
  for (const MatrixOut& o : outs) {
    check_int8_acts(*o.W, a);
    if (o.W->type != type) throw Error("CUDA backend: int8 products fused in one launch must share a format");
  }
  unsigned blocks = 0;
  const Fused f = make_fused(outs, kTileRows, blocks);
  auto go = [&]<GgmlType T, int J, int TW>() {
    launch(gemv_int8_mma_kernel<T, J, TW>, dim3(blocks, unsigned((a.n + 8 * J - 1) / (8 * J))), kWarps * 32, 0, s, f,
           a, add);
  };
  auto with_format = [&]<GgmlType T>() {
    constexpr int tw = MmaFormat<T>::kTilesPerWarp;
    if (a.n <= 8) go.template operator()<T, 1, 1>();
    else if (a.n <= 16) go.template operator()<T, 2, std::min(2, tw)>();
    else if (a.n <= 32) go.template operator()<T, 4, std::min(4, tw)>();
    else go.template operator()<T, 8, std::min(8, tw)>();
  };
  dispatch(type, with_format);
}

void gemv_int8_mma_experts(std::span<const MatrixOut> outs, const int32_t* ids, const int32_t* order, const int32_t* tiles,
                           int64_t n_tiles, const Int8Acts& a, int x_div, cudaStream_t s, int tile_items) {
  if (n_tiles <= 0) return;
  check_offsets(a);
  const ExpertPair m = expert_pair(outs, a, kTileRows);
  const DeviceMatrix& W = *outs[0].W;
  auto go = [&]<GgmlType T, int J, int TW>() {
    by_grid_rows(n_tiles, [&](int64_t first, unsigned count) {
      launch(gemv_int8_mma_experts_kernel<T, J, TW>, dim3(m.blocks0 * unsigned(outs.size()), count), kWarps * 32, 0, s, m,
             W.row_stride, W.expert_stride, W.rows, ids, order, tiles, a, x_div, outs[0].ldy, first);
    });
  };
  auto with_format = [&]<GgmlType T>() {
    constexpr int tw = MmaFormat<T>::kTilesPerWarp;
    if (tiles == nullptr || tile_items <= 8) go.template operator()<T, 1, 1>();  // per item: one item a block
    else if (tile_items <= 32) go.template operator()<T, 4, std::min(4, tw)>();
    else if (tile_items <= 64) go.template operator()<T, 8, std::min(8, tw)>();
    else throw Error("CUDA backend: grouped expert tiles hold at most 64 items");
  };
  dispatch(W.type, with_format);
}

}  // namespace ember::cuda
