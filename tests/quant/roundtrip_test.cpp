// Quantise -> dequantise round trips on random normal data, with a bound per
// format on the relative RMS error. The bounds sit a little above what a
// uniform quantiser of that many levels gives on normal data (step/sqrt(12)
// relative to sigma), so a wrong scale or a misplaced bit fails them at once.
#include <gtest/gtest.h>

#include <cstring>

#include "quant/quant.h"
#include "test_util.h"
#include "util/error.h"

namespace ember::quant {
namespace {

struct Bound { GgmlType type; double max_rel_rms; };

const Bound kBounds[] = {
    {GgmlType::F16, 1e-3},   {GgmlType::BF16, 5e-3},  {GgmlType::Q8_0, 0.01},   {GgmlType::Q8_K, 0.01},
    {GgmlType::Q6_K, 0.025}, {GgmlType::Q5_K, 0.045}, {GgmlType::Q5_0, 0.06},   {GgmlType::Q5_1, 0.06},
    {GgmlType::Q4_K, 0.09},  {GgmlType::Q4_0, 0.12},  {GgmlType::Q4_1, 0.12},   {GgmlType::IQ4_NL, 0.11},
    {GgmlType::IQ4_XS, 0.11}, {GgmlType::Q3_K, 0.22}, {GgmlType::Q2_K, 0.42},
};

class RoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTrip, RandomNormalWithinBound) {
  const Bound b = GetParam();
  const int64_t n = 256 * 64;
  for (float sigma : {1.f, 0.02f}) {  // weight-like scale too: fp16 scales must not lose it
    const auto x = test::normal_data(size_t(n), 1234, sigma);
    std::vector<uint8_t> q(row_bytes(b.type, n));
    quantize_row(b.type, x.data(), q.data(), n);
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(b.type, q.data(), y.data(), n);
    const double err = test::rel_rms(y.data(), x.data(), size_t(n));
    EXPECT_LT(err, b.max_rel_rms) << type_name(b.type) << " sigma " << sigma;
    EXPECT_GT(err, 0.0) << type_name(b.type) << ": lossless round trip is suspicious for a lossy format";
  }
}

TEST_P(RoundTrip, ZerosStayZero) {
  const Bound b = GetParam();
  const int64_t n = 512;
  std::vector<float> x(size_t(n), 0.f), y(size_t(n), 1.f);
  std::vector<uint8_t> q(row_bytes(b.type, n));
  quantize_row(b.type, x.data(), q.data(), n);
  dequantize_row(b.type, q.data(), y.data(), n);
  for (float v : y) ASSERT_EQ(v, 0.f) << type_name(b.type);
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip, ::testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(type_name(info.param.type)); });

TEST(RoundTrip, Q8_0AndF16AreExactOnRepresentableValues) {
  // Integers times a power of two survive Q8_0 exactly when the block max is 127 * scale.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = float((i * 37) % 255 - 127) * 0.5f;
  x[0] = 127 * 0.5f;
  std::vector<uint8_t> q(row_bytes(GgmlType::Q8_0, 32));
  quantize_row(GgmlType::Q8_0, x.data(), q.data(), 32);
  std::vector<float> y(32);
  dequantize_row(GgmlType::Q8_0, q.data(), y.data(), 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], x[i]) << i;
}

TEST(RoundTrip, BadInputThrows) {
  std::vector<float> x(300);
  std::vector<uint8_t> q(1024);
  EXPECT_THROW(quantize_row(GgmlType::Q4_K, x.data(), q.data(), 300), Error);   // not a multiple of 256
  EXPECT_THROW(dequantize_row(GgmlType::Q4_0, q.data(), x.data(), 33), Error);  // not a multiple of 32
  EXPECT_THROW(quantize_row(GgmlType::Q8_1, x.data(), q.data(), 256), Error);    // no quantiser
  EXPECT_THROW(dequantize_row(GgmlType::I32, q.data(), x.data(), 4), Error);
  EXPECT_THROW(dequantize_row(static_cast<GgmlType>(4), q.data(), x.data(), 4), Error);
}

}  // namespace
}  // namespace ember::quant
