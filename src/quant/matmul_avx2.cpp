// AVX2 kernels for matmul_rows (x86-64 with AVX2 + FMA; Zen 3 has no VNNI).
//
// Integer products use maddubs (u8 x s8 -> pairs of s16) and madd (s16 x s16
// -> s32). Each kernel computes one weight row against a tile of up to 8
// activation rows (4 where the registers do not allow 8), so a weight block is
// unpacked once and used for every token of the tile; that is what makes
// prefill compute-bound. Measurements and the reasoning behind the tile
// shapes are in bench/quant/NOTES.md.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "util/avx2.h"
#include "util/fp16.h"

namespace ember::quant::detail {
namespace {

inline float h2f(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return fp16_to_f32(h);
#endif
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Calls K::dot<nt> for a runtime nt in [1, N].
template <class K, int N>
inline void dot_tile(int nt, const uint8_t* row, const uint8_t* x, size_t xs, int64_t k, float* out,
                     const float* scales) {
  if constexpr (N > 1) {
    if (nt < N) return dot_tile<K, N - 1>(nt, row, x, xs, k, out, scales);
  }
  K::template dot<N>(row, x, xs, k, out, scales);
}

// Drives a kernel K over rows [r0, r1) and all tokens. Rows go in chunks
// small enough to stay in L1/L2 while every tile of activations (4 or 8 tokens)
// passes over them, so for prefill each weight byte is fetched from memory
// once and each activation tile is read from cache once per chunk, not once
// per row.
//
// Kernels on Q8_0 activations (K::kQ8_0Act) also get the activation block
// scales of the tile as floats, laid out [block][kTile tokens]: converting them
// once per (row chunk, tile) takes a half-to-float conversion out of every
// (row, token, block) step of the inner loop. The buffer is on the stack, so
// the decode loop allocates nothing (rows up to kMaxSimdRow elements).

template <class K>
void run(const uint8_t* W, size_t w_stride, int64_t r0, int64_t r1, int64_t k, const uint8_t* xq, size_t xs,
         int64_t ntok, float* Y, int64_t ldy) {
  constexpr int64_t kRowChunk = 16;
  constexpr int kTile = K::kTile;  // tokens per tile: 4, or 8 where the kernel's registers allow
  const int64_t nb32 = k / 32;
  alignas(32) float tile_scales_buf[K::kQ8_0Act ? kMaxSimdRow / 32 * kTile : 1];
  float out[8];
  for (int64_t rc = r0; rc < r1; rc += kRowChunk) {
    const int64_t re = std::min(rc + kRowChunk, r1);
    for (int64_t t = 0; t < ntok; t += kTile) {
      const int64_t nt = std::min<int64_t>(kTile, ntok - t);
      const uint8_t* x = xq + size_t(t) * xs;
      const float* tile_scales = nullptr;
      if constexpr (K::kQ8_0Act) {
        for (int64_t i = 0; i < nt; ++i) {
          const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + size_t(i) * xs);
          for (int64_t b = 0; b < nb32; ++b) tile_scales_buf[kTile * b + i] = h2f(xb[b].d);
        }
        for (int64_t i = nt; i < kTile; ++i)
          for (int64_t b = 0; b < nb32; ++b) tile_scales_buf[kTile * b + i] = 0.f;
        tile_scales = tile_scales_buf;
      }
      for (int64_t r = rc; r < re; ++r) {
        const uint8_t* row = W + size_t(r) * w_stride;
        dot_tile<K, kTile>(int(nt), row, x, xs, k, out, tile_scales);
        for (int i = 0; i < nt; ++i) Y[(t + i) * ldy + r] = out[i];
      }
    }
  }
}

// Scales and mins of a Q4_K / Q5_K block, unpacked from their 12 bytes with
// word-wide bit operations: bytes 0-7 of the result are the eight 6-bit
// scales, bytes 8-15 the eight 6-bit mins (the same values k4_scale_min gives).
inline __m128i k4_scales_mins(const uint8_t* s) {
  // Bytes 0-3 hold scales 0-3 (low 6 bits) and bytes 4-7 mins 0-3; both are
  // handled at once as one 64-bit word. Groups 4-7 take their low 4 bits from
  // bytes 8-11 (scales low nibble, mins high nibble) and their top 2 bits from
  // the top of bytes 0-3 (scales) and 4-7 (mins).
  uint64_t v01;
  uint32_t v2;
  std::memcpy(&v01, s, 8);
  std::memcpy(&v2, s + 8, 4);
  const uint64_t low = v01 & 0x3F3F3F3F3F3F3F3FULL;  // [scales 0-3 | mins 0-3]
  const uint64_t nibbles = (uint64_t(v2) | (uint64_t(v2 >> 4) << 32)) & 0x0F0F0F0F0F0F0F0FULL;
  const uint64_t high = nibbles | (((v01 >> 6) & 0x0303030303030303ULL) << 4);  // [scales 4-7 | mins 4-7]
  return _mm_unpacklo_epi32(_mm_cvtsi64_si128(int64_t(low)), _mm_cvtsi64_si128(int64_t(high)));
}

// Software prefetch a fixed distance ahead of the weight stream (running past
// a row's end fetches the start of the next row, which is the next one read;
// past a chunk's end, the thread's next chunk, see ThreadPool::for_each_chunk).
// The hardware prefetcher alone leaves the decode kernels waiting on DRAM:
// one core keeps too few lines in flight for the latency. One prefetch per
// cache line the block spans, into L2 (T1), 4 KiB ahead: on the Zen 3 machine,
// whole-model decode matmuls went from 0.75 to 0.88 of a plain read stream over
// the same bytes (distances 384 B-8 KiB, T0 and T1 compared; bench/quant/NOTES.md).
constexpr int kPrefetchBytes = 4096;
template <class Block>
inline void prefetch_ahead(const Block* b) {
  const char* p = reinterpret_cast<const char*>(b) + kPrefetchBytes;
  for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

// pshufb index that broadcasts 16-bit lane `lane` of each 128-bit half.
inline __m256i lane16(int lane) { return _mm256_set1_epi16(short(((2 * lane + 1) << 8) | (2 * lane))); }

template <int NT>
inline const BlockQ8_K* q8k(const uint8_t* x, size_t xs, int t, int64_t i) {
  return reinterpret_cast<const BlockQ8_K*>(x + size_t(t) * xs) + i;
}
template <int NT>
inline const BlockQ8_0* q80(const uint8_t* x, size_t xs, int t, int64_t i) {
  return reinterpret_cast<const BlockQ8_0*>(x + size_t(t) * xs) + i;
}

// Q4_K / Q5_K x Q8_K: unsigned 4- (or 5-) bit codes times signed activations;
// the mins are applied through the activation's group sums (bsums). Scales are
// unpacked in SIMD once per block and broadcast per group with pshufb. Q5_K
// adds a fifth bit per element from qh (bit g of byte e for element e of group g).
template <class Block, bool kFifthBit>
struct K4Bit {
  static constexpr bool kQ8_0Act = false;
  static constexpr int kTile = 8;  // isum and acc for 8 tokens fit in the 16 ymm registers
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out, const float*) {
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m128i min_pairs = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    const auto* blocks = reinterpret_cast<const Block*>(w);
    for (int64_t i = 0; i < k / 256; ++i) {
      const Block& b = blocks[i];
      prefetch_ahead(&b);
      const __m128i sm = k4_scales_mins(b.scales);
      const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, min_pairs));  // min g for bsums 2g, 2g+1
      const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));        // scales 0-7 per half
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      // Chunk c holds group 2c in its low nibbles and group 2c + 1 in its high ones.
      auto chunk = [&](int c, const __m256i& slo, const __m256i& shi) {
        const __m256i q = load256(b.qs + 32 * c);
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if constexpr (kFifthBit) {
          // Shift bits 2c and 2c + 1 of qh up to bit 4 and bit 5, then keep bit 4 of each.
          const __m256i qh = load256(b.qh), bit4 = _mm256_set1_epi8(0x10);
          const __m128i sh_lo = _mm_cvtsi32_si128(4 - 2 * c);
          lo = _mm256_or_si256(lo, _mm256_and_si256(2 * c <= 4 ? _mm256_sll_epi16(qh, sh_lo)
                                                                  : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c - 4)),
                                                    bit4));
          hi = _mm256_or_si256(hi, _mm256_and_si256(2 * c + 1 <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(3 - 2 * c))
                                                                      : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c - 3)),
                                                    bit4));
        }
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = q8k<NT>(x, xs, t, i)->qs + 64 * c;
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(xq)), slo));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(xq + 32)), shi));
        }
      };
      if constexpr (NT <= 2) {
        for (int c = 0; c < 4; ++c)
          chunk(c, _mm256_shuffle_epi8(sc16, lane16(2 * c)), _mm256_shuffle_epi8(sc16, lane16(2 * c + 1)));
      } else {
        // Wide tiles: the eight isum registers leave too few for the group
        // scales, so the scales are broadcast once per block into a stack
        // array that vpmaddwd reads as a memory operand (fewer spills: stack
        // references in this function went from 378 to 235).
        // Rolled on purpose: unrolled, GCC computes every product of the
        // block first and spills them before summing.
        alignas(32) __m256i scales[8];
        for (int g = 0; g < 8; ++g) scales[g] = _mm256_shuffle_epi8(sc16, lane16(g));
#pragma GCC unroll 1
        for (int c = 0; c < 4; ++c) chunk(c, scales[2 * c], scales[2 * c + 1]);
      }
      // d and dmin are adjacent halves: one conversion gives both.
      uint32_t dpair;
      std::memcpy(&dpair, &b.d, 4);
      const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(int(dpair)));
      const __m256 vd = _mm256_broadcastss_ps(dm), vdmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K* xb = q8k<NT>(x, xs, t, i);
        const __m256i msum = _mm256_madd_epi16(load256(xb->bsums), mins16);
        const __m256 v = _mm256_fmsub_ps(_mm256_cvtepi32_ps(isum[t]), vd, _mm256_mul_ps(_mm256_cvtepi32_ps(msum), vdmin));
        acc[t] = _mm256_fmadd_ps(v, _mm256_broadcast_ss(&xb->d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
  }
};
using Q4K = K4Bit<BlockQ4_K, false>;
using Q5K = K4Bit<BlockQ5_K, true>;

// Q6_K: 6-bit codes q in [0, 63] stand for q - 32; the -32 is applied through bsums.
struct Q6K {
  static constexpr bool kQ8_0Act = false;
  static constexpr int kTile = 4;
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out, const float*) {
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w);
    for (int64_t i = 0; i < k / 256; ++i) {
      const BlockQ6_K& b = blocks[i];
      prefetch_ahead(&b);
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      // Rolled for the same reason as in Q4K: unrolled, partial products spill.
#pragma GCC unroll 1
      for (int h = 0; h < 2; ++h) {
        // Scales 8h..8h+7 as 16-bit lanes in both halves; pshufb then puts
        // scale g in the low half and g + 1 in the high half.
        const __m256i sc8 = _mm256_broadcastsi128_si256(
            _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales + 8 * h))));
        const __m256i l0 = load256(b.ql + 64 * h), l1 = load256(b.ql + 64 * h + 32), qh = load256(b.qh + 32 * h);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
        for (int j = 0; j < 4; ++j) {
          const __m256i sv = _mm256_shuffle_epi8(sc8, _mm256_setr_m128i(_mm256_castsi256_si128(lane16(2 * j)),
                                                                         _mm256_castsi256_si128(lane16(2 * j + 1))));
          for (int t = 0; t < NT; ++t) {
            const int8_t* xq = q8k<NT>(x, xs, t, i)->qs + 128 * h + 32 * j;
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[j], load256(xq)), sv));
          }
        }
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
      const float d = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K* xb = q8k<NT>(x, xs, t, i);
        const __m256i off = _mm256_madd_epi16(load256(xb->bsums), sc16);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * xb->d), acc[t]);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(off), _mm256_set1_ps(32.f * d * xb->d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
  }
};

// The eight 6-bit scales of an IQ4_XS block, one per byte: low 4 bits from the
// nibbles of scales_l, high 2 bits from bit pairs of scales_h.
inline uint64_t iq4xs_scales(const BlockIQ4_XS& b) {
  uint32_t low;
  std::memcpy(&low, b.scales_l, 4);
#if defined(__BMI2__)
  return _pdep_u64(low, 0x0F0F0F0F0F0F0F0FULL) | _pdep_u64(b.scales_h, 0x3030303030303030ULL);
#else
  uint64_t v = 0;
  for (int j = 0; j < 8; ++j)
    v |= uint64_t(((low >> (4 * j)) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4)) << (8 * j);
  return v;
#endif
}

// IQ4_XS: nibbles index the 16-entry value table (pshufb), 6-bit block scales.
struct IQ4XS {
  static constexpr bool kQ8_0Act = false;
  static constexpr int kTile = 4;
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out, const float*) {
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq::kIQ4NLValues)));
    const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(w);
    for (int64_t i = 0; i < k / 256; ++i) {
      const BlockIQ4_XS& b = blocks[i];
      prefetch_ahead(&b);
      // The eight 6-bit scales (minus 32) as 16-bit lanes, repeated in both halves.
      const __m256i sc16 = _mm256_broadcastsi128_si256(
          _mm_sub_epi16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(iq4xs_scales(b)))), _mm_set1_epi16(32)));
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int ib = 0; ib < 8; ib += 2) {
        const __m256i q = load256(b.qs + 16 * ib);  // two blocks of 32
        const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        __m256i v[2];
        v[0] = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20));
        v[1] = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31));
        for (int s = 0; s < 2; ++s) {
          const int j = ib + s;
          const __m256i sv = _mm256_shuffle_epi8(sc16, lane16(j));
          const __m256i av = _mm256_sign_epi8(v[s], v[s]);
          for (int t = 0; t < NT; ++t) {
            const __m256i xv = load256(q8k<NT>(x, xs, t, i)->qs + 32 * j);
            const __m256i p = _mm256_maddubs_epi16(av, _mm256_sign_epi8(xv, v[s]));
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, sv));
          }
        }
      }
      const float d = h2f(b.d);
      for (int t = 0; t < NT; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * q8k<NT>(x, xs, t, i)->d), acc[t]);
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
  }
};

// 32-element blocks against Q8_0 activations; Unpack gives the signed weights.
// xd holds the tile's activation scales as floats, [block][kTile tokens].
template <class Block, class Unpack>
struct Small {
  static constexpr bool kQ8_0Act = true;
  static constexpr int kTile = 8;
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out, const float* xd) {
    const __m256i ones = _mm256_set1_epi16(1);
    const auto* blocks = reinterpret_cast<const Block*>(w);
    const int64_t nb = k / 32;
    // Adds block i into acc; the weight block is unpacked once for all NT tokens.
    auto step = [&](int64_t i, __m256* acc) {
      prefetch_ahead(blocks + i);
      const __m256i v = Unpack::get(blocks[i]);
      const __m256i av = _mm256_sign_epi8(v, v);
      alignas(32) float s[kTile];  // weight scale times each token's activation scale
      if constexpr (NT <= 2) {
        const float dw = h2f(blocks[i].d);
        for (int t = 0; t < NT; ++t) s[t] = dw * xd[kTile * i + t];
      } else {
        _mm256_store_ps(s, _mm256_mul_ps(_mm256_set1_ps(h2f(blocks[i].d)), _mm256_loadu_ps(xd + kTile * i)));
      }
      for (int t = 0; t < NT; ++t) {
        const __m256i xv = load256(q80<NT>(x, xs, t, i)->qs);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(xv, v)), ones);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(s[t]), acc[t]);
      }
    };
    // One accumulator per token, blocks in order, whatever the tile size: a
    // token's sum is then the same bits alone or in a batch (batch
    // invariance). Two interleaved accumulators for small tiles hid the FMA
    // latency but summed in another order than the wide tiles; decode is
    // bound by memory, not by that latency.
    __m256 acc0[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) step(i, acc0);
    for (int t = 0; t < NT; ++t) out[t] = hsum(acc0[t]);
  }
};
struct UnpackQ8_0 {
  static __m256i get(const BlockQ8_0& b) { return load256(b.qs); }
};
struct UnpackQ4_0 {
static __m256i get(const BlockQ4_0& b) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m256i v = _mm256_setr_m128i(_mm_and_si128(q, m4), _mm_and_si128(_mm_srli_epi16(q, 4), m4));
  return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}
};
struct UnpackIQ4NL {
static __m256i get(const BlockIQ4_NL& b) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iq::kIQ4NLValues));
  return _mm256_setr_m128i(_mm_shuffle_epi8(table, _mm_and_si128(q, m4)),
                           _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
}
};

// Float weights against float activations: convert 8 weights, FMA into each token.
inline __m256 load_w(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_w(const uint16_t* p, std::false_type /*fp16*/) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_w(const uint16_t* p, std::true_type /*bf16*/) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
struct F32W {
  using T = float;
  static __m256 load(const float* p) { return load_w(p); }
  static float one(float v) { return v; }
};
struct F16W {
  using T = uint16_t;
  static __m256 load(const uint16_t* p) { return load_w(p, std::false_type{}); }
  static float one(uint16_t v) { return h2f(v); }
};
struct BF16W {
  using T = uint16_t;
  static __m256 load(const uint16_t* p) { return load_w(p, std::true_type{}); }
  static float one(uint16_t v) { return bf16_to_f32(v); }
};
template <class F>
struct Float {
  static constexpr bool kQ8_0Act = false;
  static constexpr int kTile = 4;
  template <int NT>
  static void dot(const uint8_t* w, const uint8_t* x, size_t xs, int64_t k, float* out, const float*) {
    const auto* wp = reinterpret_cast<const typename F::T*>(w);
    const float* xp[NT];
    for (int t = 0; t < NT; ++t) xp[t] = reinterpret_cast<const float*>(x + size_t(t) * xs);
    __m256 acc0[NT], acc1[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      const __m256 w0 = F::load(wp + j), w1 = F::load(wp + j + 8);
      for (int t = 0; t < NT; ++t) {
        acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xp[t] + j), acc0[t]);
        acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xp[t] + j + 8), acc1[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      float s = hsum(_mm256_add_ps(acc0[t], acc1[t]));
      for (int64_t i = j; i < k; ++i) s += F::one(wp[i]) * xp[t][i];
      out[t] = s;
    }
  }
};

}  // namespace

MatmulKernel avx2_kernel(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return run<Float<F32W>>;
    case GgmlType::F16: return run<Float<F16W>>;
    case GgmlType::BF16: return run<Float<BF16W>>;
    case GgmlType::Q8_0: return run<Small<BlockQ8_0, UnpackQ8_0>>;
    case GgmlType::Q4_0: return run<Small<BlockQ4_0, UnpackQ4_0>>;
    case GgmlType::IQ4_NL: return run<Small<BlockIQ4_NL, UnpackIQ4NL>>;
    case GgmlType::Q4_K: return run<Q4K>;
    case GgmlType::Q5_K: return run<Q5K>;
    case GgmlType::Q6_K: return run<Q6K>;
    case GgmlType::IQ4_XS: return run<IQ4XS>;
    default: return nullptr;
  }
}

}  // namespace ember::quant::detail

#else  // no AVX2: every type takes the portable path

namespace ember::quant::detail {
MatmulKernel avx2_kernel(GgmlType) { return nullptr; }
}  // namespace ember::quant::detail

#endif
