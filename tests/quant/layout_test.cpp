// Blocks built byte by byte from the format descriptions, with the expected
// values computed here independently of the library's dequantisers; and spot
// checks of the codebooks against values published with the format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

std::vector<float> deq(GgmlType t, const void* block, int n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, block, y.data(), n);
  return y;
}
void put_h(uint8_t* p, float v) {
  const uint16_t h = f32_to_fp16(v);
  p[0] = uint8_t(h & 0xFF);
  p[1] = uint8_t(h >> 8);
}

// Q4_K (144 bytes): d, dmin (fp16), 12 bytes of 6-bit scales/mins, 128 bytes of nibbles.
TEST(Layout, Q4_K) {
  uint8_t b[144] = {};
  put_h(b + 0, 0.5f);
  put_h(b + 2, 0.25f);
  const int sc[8] = {1, 2, 3, 63, 17, 33, 40, 5}, mn[8] = {0, 1, 2, 3, 20, 63, 7, 48};
  uint8_t* s = b + 4;
  for (int j = 0; j < 4; ++j) {  // groups 0-3: low 6 bits of bytes 0-3 (scales) and 4-7 (mins)
    s[j] = uint8_t(sc[j]);
    s[j + 4] = uint8_t(mn[j]);
  }
  for (int j = 4; j < 8; ++j) {  // groups 4-7: nibbles in bytes 8-11, top 2 bits in bytes 0-7's bits 6-7
    s[j + 4] = uint8_t((sc[j] & 15) | ((mn[j] & 15) << 4));
    s[j - 4] |= uint8_t((sc[j] >> 4) << 6);
    s[j] |= uint8_t((mn[j] >> 4) << 6);
  }
  for (int i = 0; i < 128; ++i) b[16 + i] = uint8_t(i * 7 + 3);
  const auto y = deq(GgmlType::Q4_K, b, 256);
  for (int g = 0; g < 8; ++g)
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = b[16 + 32 * (g / 2) + l];
      const int q = (g % 2 == 0) ? (byte & 15) : (byte >> 4);
      ASSERT_FLOAT_EQ(y[32 * g + l], 0.5f * sc[g] * q - 0.25f * mn[g]) << "group " << g << " elem " << l;
    }
}

// Q6_K (210 bytes): ql[128], qh[64], int8 scales[16], d.
TEST(Layout, Q6_K) {
  uint8_t b[210] = {};
  const int8_t scales[16] = {-128, 127, 1, -1, 5, 17, -33, 64, 2, 3, -4, 9, 100, -100, 50, 7};
  int code[256];
  for (int i = 0; i < 256; ++i) code[i] = (i * 5 + 11) % 64;
  // Element 128h + 32k + l: low nibble in ql[64h + l + 32(k odd)] (high nibble for k >= 2),
  // top two bits in qh[32h + l] at bit 2k.
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    uint8_t& lo = b[64 * h + l + 32 * (k % 2)];
    lo |= uint8_t((code[i] & 15) << (k >= 2 ? 4 : 0));
    b[128 + 32 * h + l] |= uint8_t((code[i] >> 4) << (2 * k));
  }
  std::memcpy(b + 192, scales, 16);
  put_h(b + 208, 0.125f);
  const auto y = deq(GgmlType::Q6_K, b, 256);
  for (int i = 0; i < 256; ++i) ASSERT_FLOAT_EQ(y[i], 0.125f * scales[i / 16] * (code[i] - 32)) << i;
}

// Q3_K (110 bytes): hmask[32], qs[64], 12 bytes of 6-bit scales (offset 32), d.
TEST(Layout, Q3_K) {
  uint8_t b[110] = {};
  const int scale[16] = {-32, 31, 0, 1, -1, 15, -16, 7, 8, -9, 20, -20, 3, -3, 30, -31};
  int code[256];  // value = code - 4, code in 0..7
  for (int i = 0; i < 256; ++i) code[i] = (i * 3 + i / 16) % 8;
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, j = (i % 128) / 32, l = i % 32;
    b[32 + 32 * half + l] |= uint8_t((code[i] & 3) << (2 * j));  // 2 low bits
    if (code[i] & 4) b[l] |= uint8_t(1 << (4 * half + j));       // high bit set means "no -4"
  }
  for (int g = 0; g < 16; ++g) {
    const int v = scale[g] + 32;
    b[96 + (g % 8)] |= uint8_t((v & 15) << (g < 8 ? 0 : 4));
    b[96 + 8 + g % 4] |= uint8_t((v >> 4) << (2 * (g / 4)));
  }
  put_h(b + 108, 2.0f);
  const auto y = deq(GgmlType::Q3_K, b, 256);
  for (int i = 0; i < 256; ++i) ASSERT_FLOAT_EQ(y[i], 2.0f * scale[i / 16] * (code[i] - 4)) << i;
}

// Q5_0 (22 bytes): d, 32 high bits, 16 bytes of nibbles (element j low, j+16 high).
TEST(Layout, Q5_0) {
  uint8_t b[22] = {};
  put_h(b, 0.25f);
  int code[32];
  for (int i = 0; i < 32; ++i) code[i] = (i * 13 + 5) % 32;
  for (int i = 0; i < 32; ++i) {
    if (code[i] & 16) b[2 + i / 8] |= uint8_t(1 << (i % 8));
    b[6 + i % 16] |= uint8_t((code[i] & 15) << (i < 16 ? 0 : 4));
  }
  const auto y = deq(GgmlType::Q5_0, b, 32);
  for (int i = 0; i < 32; ++i) ASSERT_FLOAT_EQ(y[i], 0.25f * (code[i] - 16)) << i;
}

const int kIQ4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_XS (136 bytes): d, scales_h (2 bits per block), scales_l (4 bits per block), 128 bytes of nibbles.
TEST(Layout, IQ4_XS) {
  uint8_t b[136] = {};
  put_h(b, 0.5f);
  const int ls[8] = {-32, -1, 0, 5, 31, 17, -20, 10};
  uint16_t sh = 0;
  for (int ib = 0; ib < 8; ++ib) {
    const int v = ls[ib] + 32;
    b[4 + ib / 2] |= uint8_t((v & 15) << (4 * (ib % 2)));
    sh |= uint16_t((v >> 4) << (2 * ib));
  }
  b[2] = uint8_t(sh & 0xFF);
  b[3] = uint8_t(sh >> 8);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) b[8 + 16 * ib + j] = uint8_t(((j + ib) & 15) | ((15 - j) << 4));
  const auto y = deq(GgmlType::IQ4_XS, b, 256);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) {
      ASSERT_FLOAT_EQ(y[32 * ib + j], 0.5f * ls[ib] * kIQ4[(j + ib) & 15]);
      ASSERT_FLOAT_EQ(y[32 * ib + 16 + j], 0.5f * ls[ib] * kIQ4[15 - j]);
    }
}

int parity_sign_byte(int s7) {
  int bits = 0;
  for (int i = 0; i < 7; ++i) bits += (s7 >> i) & 1;
  return s7 | ((bits & 1) << 7);
}

// IQ2_XXS (66 bytes): d, then per 32 elements 8 bytes: 4 grid indices, then a
// uint32 with four 7-bit sign indices and a 4-bit scale in the top bits.
TEST(Layout, IQ2_XXS) {
  uint8_t b[66] = {};
  put_h(b, 1.0f);
  // First grid entries of the published table: bytes of 0x08 (8), 0x19 (25), 0x2b (43).
  const uint8_t grid[4][8] = {{8, 8, 8, 8, 8, 8, 8, 8}, {43, 8, 8, 8, 8, 8, 8, 8},
                              {25, 25, 8, 8, 8, 8, 8, 8}, {8, 43, 8, 8, 8, 8, 8, 8}};
  const int sign_idx[4] = {0, 1, 127, 64};
  const int scale4 = 3;
  for (int ib = 0; ib < 8; ++ib) {
    uint8_t* p = b + 2 + 8 * ib;
    for (int l = 0; l < 4; ++l) p[l] = uint8_t((l + ib) % 4);
    uint32_t aux = uint32_t(scale4) << 28;
    for (int l = 0; l < 4; ++l) aux |= uint32_t(sign_idx[l]) << (7 * l);
    std::memcpy(p + 4, &aux, 4);
  }
  const auto y = deq(GgmlType::IQ2_XXS, b, 256);
  const float db = 1.0f * (0.5f + scale4) * 0.25f;
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int s = parity_sign_byte(sign_idx[l]);
      for (int j = 0; j < 8; ++j) {
        const float v = db * grid[(l + ib) % 4][j] * (((s >> j) & 1) ? -1.f : 1.f);
        ASSERT_FLOAT_EQ(y[32 * ib + 8 * l + j], v) << ib << " " << l << " " << j;
      }
    }
}

// IQ3_S (110 bytes): 9-bit grid indices (qs + one qh bit), explicit sign bytes, 4-bit odd scales.
TEST(Layout, IQ3_S) {
  uint8_t b[110] = {};
  put_h(b, 0.5f);
  // Published iq3s_grid[0..4] = 0x01010101, 0x01010103, 0x01010105, 0x0101010b, 0x0101010f.
  const uint32_t grid[5] = {0x01010101, 0x01010103, 0x01010105, 0x0101010b, 0x0101010f};
  for (int i = 0; i < 64; ++i) b[2 + i] = uint8_t(i % 5);  // qh bits stay 0: indices < 256
  for (int i = 0; i < 32; ++i) b[74 + i] = uint8_t(i * 37 + 1);
  b[106] = 0x21; b[107] = 0x43; b[108] = 0x65; b[109] = 0x87;  // scales 1,2,3,4,5,6,7,8
  const auto y = deq(GgmlType::IQ3_S, b, 256);
  for (int i = 0; i < 256; ++i) {
    const int ib = i / 32, sc = ((b[106 + ib / 2] >> (4 * (ib % 2))) & 15);
    const uint32_t g = grid[(i / 4) % 64 % 5];
    const int mag = int((g >> (8 * (i % 4))) & 0xFF);
    const int sbyte = b[74 + i / 8];
    const float v = 0.5f * float(1 + 2 * sc) * float(mag) * (((sbyte >> (i % 8)) & 1) ? -1.f : 1.f);
    ASSERT_FLOAT_EQ(y[i], v) << i;
  }
}

// Spot checks of the unpacked codebooks against entries of the published tables.
TEST(Layout, CodebooksMatchPublishedEntries) {
  EXPECT_EQ(iq::iq2xxs_grid()[0], 0x0808080808080808ull);
  EXPECT_EQ(iq::iq2xxs_grid()[1], 0x080808080808082bull);
  EXPECT_EQ(iq::iq2xxs_grid()[3], 0x0808080808082b08ull);
  const uint64_t iq2s_head[9] = {0x0808080808080808, 0x080808080808082b, 0x0808080808081919, 0x0808080808082b08,
                                 0x0808080808082b2b, 0x0808080808190819, 0x0808080808191908, 0x080808080819192b,
                                 0x0808080808192b19};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(iq::iq2s_grid()[i], iq2s_head[i]) << i;
  const uint64_t iq2xs_tail[4] = {0x2b2b2b2b082b2b08, 0x2b2b2b2b082b2b2b, 0x2b2b2b2b2b190819, 0x2b2b2b2b2b2b2b2b};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(iq::iq2xs_grid()[508 + i], iq2xs_tail[i]) << i;
  const uint32_t iq3s_head[11] = {0x01010101, 0x01010103, 0x01010105, 0x0101010b, 0x0101010f, 0x01010301,
                                  0x01010303, 0x01010305, 0x01010309, 0x0101030d, 0x01010501};
  for (int i = 0; i < 11; ++i) EXPECT_EQ(iq::iq3s_grid()[i], iq3s_head[i]) << i;
  EXPECT_EQ(iq::iq3xxs_grid()[0], 0x04040404u);
  EXPECT_EQ(iq::iq3xxs_grid()[1], 0x04040414u);
  EXPECT_EQ(iq::iq1s_grid()[0], 0xffffffffffffffffull);
  EXPECT_EQ(iq::ksigns(1), 129);
  EXPECT_EQ(iq::ksigns(3), 3);
  EXPECT_EQ(iq::ksigns(127), 255);
  // Every grid lists distinct entries (a transcription slip would likely duplicate one).
  auto distinct = [](const auto* g, int n) {
    std::vector<uint64_t> v(g, g + n);
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  EXPECT_TRUE(distinct(iq::iq2xxs_grid(), 256));
  EXPECT_TRUE(distinct(iq::iq2xs_grid(), 512));
  EXPECT_TRUE(distinct(iq::iq2s_grid(), 1024));
  EXPECT_TRUE(distinct(iq::iq3xxs_grid(), 256));
  EXPECT_TRUE(distinct(iq::iq3s_grid(), 512));
  EXPECT_TRUE(distinct(iq::iq1s_grid(), 2048));
}

}  // namespace
}  // namespace ember::quant
