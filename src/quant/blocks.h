// Byte layouts of the GGUF block formats. Each struct is exactly the bytes of
// one block as stored in a file (little-endian, no padding); the static_asserts
// pin the sizes to the format. Half-precision fields are raw IEEE fp16 bits.
#pragma once
#include <cstdint>

// The helpers below are compiled for the GPU too (the CUDA backend decodes the same blocks).
#ifdef __CUDACC__
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

namespace ember::quant {

constexpr int kQK = 32;    // elements per block of the 32-element formats
constexpr int kQK_K = 256; // elements per super-block of the K-quant and most IQ formats

struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };                       // x = d * (q - 8)
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };                    // x = d * q + m
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };        // x = d * (q - 16), bit 4 in qh
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };     // x = d * q + m
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };                        // x = d * q
struct BlockQ8_1 { uint16_t d, s; int8_t qs[32]; };                     // s = d * sum(q)

// K-quants: 256 elements in 16 groups of 16 (Q2_K, Q3_K, Q6_K) or 8 groups of 32 (Q4_K, Q5_K).
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; };  // scale | min<<4 per group
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };  // 6-bit signed scales
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };  // 6-bit scales and mins
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[256]; int16_t bsums[16]; };  // bsums: sums of 16 consecutive qs

// Codebook ("IQ") formats: indices into the grids of iq_tables.h.
struct BlockIQ2_XXS { uint16_t d; uint16_t qs[32]; };
struct BlockIQ2_XS { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; };
struct BlockIQ2_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; };  // qs: 32 indices, 32 sign bytes
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[96]; };  // 64 grid indices, then 8 x uint32 scale+signs
struct BlockIQ3_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; };
struct BlockIQ1_S { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; };
struct BlockIQ1_M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };  // fp16 scale spread over the scales' top nibbles
struct BlockIQ4_NL { uint16_t d; uint8_t qs[16]; };
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50 && sizeof(BlockIQ1_M) == 56);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

// Scale and min j (0..7) of a Q4_K / Q5_K block: 6 bits each packed into 12 bytes.
EMBER_HD inline void k4_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Scale i (0..15) of a Q3_K block, in [-32, 31].
EMBER_HD inline int q3k_scale(int i, const uint8_t* s) {
  const int low = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Scale of sub-block ib (0..7) of an IQ4_XS block, in [-32, 31]: 4 low bits
// from scales_l, 2 high bits from scales_h.
EMBER_HD inline int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
  const int lo = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
  const int hi = (b.scales_h >> (2 * ib)) & 3;
  return (lo | (hi << 4)) - 32;
}

}  // namespace ember::quant
