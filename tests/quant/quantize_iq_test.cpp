// Quantisers of the IQ codebook formats, checked through the reference
// dequantiser (dequantize.cpp), which reads the blocks as the format defines them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

// Bounds on the relative RMS error for normal data. The reference point is
// the best scalar quantiser (Lloyd-Max) for a Gaussian with the same number of
// bits per value for the codes (grid index plus signs, scales excluded):
// relative RMS 0.603 at 1 bit, 0.343 at 2 bits, 0.186 at 3 bits. The 4- and
// 8-wide grids do about as well as that; each bound sits roughly 15% above
// the error measured with this encoder (in parentheses), so a wrong sign, a
// misplaced index bit or a bad scale fails at once.
struct Bound { GgmlType type; double max_rel_rms; };
const Bound kBounds[] = {
    {GgmlType::IQ3_XXS, 0.21},  // 3 bits/value (0.178)
    {GgmlType::IQ3_S, 0.155},   // 3.25 bits/value, per-element signs (0.130)
    {GgmlType::IQ2_XXS, 0.38},  // 2 bits/value (0.331)
    {GgmlType::IQ2_XS, 0.33},   // 2.125 bits/value, scales per 16 (0.286)
    {GgmlType::IQ2_S, 0.28},    // 2.25 bits/value, per-element signs (0.239)
    {GgmlType::IQ1_S, 0.52},    // 1.375 bits/value (0.450)
    {GgmlType::IQ1_M, 0.48},    // 1.5 bits/value, finer scales and deltas (0.417)
};

class IQQuantize : public ::testing::TestWithParam<Bound> {};

std::vector<float> round_trip(GgmlType t, const std::vector<float>& x) {
  const auto n = int64_t(x.size());
  std::vector<uint8_t> q(row_bytes(t, n));
  quantize_row(t, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

TEST_P(IQQuantize, CanQuantize) { EXPECT_TRUE(can_quantize(GetParam().type)); }

TEST_P(IQQuantize, RandomNormalWithinBound) {
  const Bound b = GetParam();
  const int64_t n = 256 * 64;
  for (float sigma : {1.f, 0.02f}) {  // 0.02: weight-like values must survive the fp16 scale
    const auto x = test::normal_data(size_t(n), 77, sigma);
    const auto y = round_trip(b.type, x);
    const double err = test::rel_rms(y.data(), x.data(), size_t(n));
    EXPECT_LT(err, b.max_rel_rms) << type_name(b.type) << " sigma " << sigma;
    EXPECT_GT(err, 0.0) << type_name(b.type) << ": lossless on normal data is suspicious";
  }
}

TEST_P(IQQuantize, ZerosStayZero) {
  const std::vector<float> x(512, 0.f);
  const auto y = round_trip(GetParam().type, x);
  for (float v : y) ASSERT_EQ(v, 0.f) << type_name(GetParam().type);
}

// A block that is not finite must not crash the encoder nor disturb the next block.
TEST_P(IQQuantize, NonFiniteBlockLeavesOthersIntact) {
  const Bound b = GetParam();
  auto x = test::normal_data(512, 5);
  x[3] = NAN;
  x[100] = INFINITY;
  const auto y = round_trip(b.type, x);
  EXPECT_LT(test::rel_rms(y.data() + 256, x.data() + 256, 256), b.max_rel_rms * 1.3) << type_name(b.type);
}

// Sets the fp16 super-block scale of a block (IQ1_M spreads it over the top
// nibbles of its four scale words; every other IQ block starts with it) and
// puts one group's scale code at its maximum, so that d is the scale the
// encoder derives from the largest group.
void make_block_canonical(GgmlType t, uint8_t* blk, uint16_t d) {
  switch (t) {
    case GgmlType::IQ1_M: {
      uint16_t sc[4];
      std::memcpy(sc, blk + 48, 8);
      for (int i = 0; i < 4; ++i) sc[i] = uint16_t((sc[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
      sc[0] |= 7;  // 3-bit scale of the first 16 elements
      std::memcpy(blk + 48, sc, 8);
      return;
    }
    case GgmlType::IQ3_XXS: blk[2 + 64 + 3] |= 0xF0; break;  // top nibble of the first scale+signs word
    case GgmlType::IQ2_XXS: blk[2 + 7] |= 0xF0; break;       // same, in the first 8-byte group
    case GgmlType::IQ2_XS: blk[2 + 64] |= 0x0F; break;       // scales[0], low nibble
    case GgmlType::IQ2_S: blk[2 + 64 + 8] |= 0x0F; break;    // scales[0], after qs and qh
    case GgmlType::IQ3_S: blk[2 + 64 + 8 + 32] |= 0x0F; break;  // scales[0]
    case GgmlType::IQ1_S: blk[2 + 32 + 1] |= 0x70; break;    // 3-bit scale in bits 12-14 of qh[0]
    default: FAIL() << "no layout for " << type_name(t);
  }
  std::memcpy(blk, &d, 2);
}

// Values that the format represents exactly (random codes, signs and scales
// with one group at the top scale) must come back unchanged.
TEST_P(IQQuantize, RepresentableBlocksAreReproduced) {
  const GgmlType t = GetParam().type;
  const size_t bb = type_info(t).block_bytes;
  const int blocks = 16;
  std::mt19937 rng(99);
  std::vector<uint8_t> src(bb * blocks);
  for (auto& v : src) v = uint8_t(rng());
  for (int i = 0; i < blocks; ++i)
    make_block_canonical(t, src.data() + bb * i, f32_to_fp16(i % 2 ? 0.0123f : 1.5f));
  std::vector<float> x(256 * blocks);
  dequantize_row(t, src.data(), x.data(), int64_t(x.size()));
  const auto y = round_trip(t, x);
  for (int i = 0; i < blocks; ++i) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * i + j]));
    for (int j = 0; j < 256; ++j)
      ASSERT_NEAR(y[256 * i + j], x[256 * i + j], 1e-5f * amax) << type_name(t) << " block " << i << " element " << j;
  }
}

TEST_P(IQQuantize, LengthNotMultipleOfBlockThrows) {
  std::vector<float> x(300, 1.f);
  std::vector<uint8_t> q(1024);
  EXPECT_THROW(quantize_row(GetParam().type, x.data(), q.data(), 300), Error);
}

INSTANTIATE_TEST_SUITE_P(Formats, IQQuantize, ::testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(type_name(info.param.type)); });

}  // namespace
}  // namespace ember::quant
