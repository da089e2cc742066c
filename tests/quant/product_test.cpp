// matmul_rows against float references.
//
// Three comparisons per weight type:
//  1. matmul_rows vs the double-precision dot of the dequantised weights with
//     the dequantised activations (what the integer kernels compute exactly up
//     to float rounding): |diff| <= 1e-5 * sum|w_i * x_i|.
//  2. matmul_rows vs vec_dot_f32 with the original float activations. For
//     float activations the bound is the same 1e-5. For 8-bit activations
//     each x_i moves by at most half a quantisation step (d_block / 2), so
//     |diff| <= sum |w_i| * d_block(i) / 2 (+ the rounding term above): a hard
//     bound, not a statistical one.
//  3. SIMD kernel vs the portable path: same 1e-5 bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "test_util.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

const GgmlType kAll[] = {
    GgmlType::F32,     GgmlType::F16,    GgmlType::BF16,    GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
    GgmlType::Q5_1,    GgmlType::Q8_0,   GgmlType::Q2_K,    GgmlType::Q3_K,   GgmlType::Q4_K,  GgmlType::Q5_K,
    GgmlType::Q6_K,    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,  GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S,   GgmlType::IQ1_M,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
};

// Weight rows: quantised from normal data when a quantiser exists, otherwise
// random codes with a sane fp16 scale (the IQ codebook formats).
std::vector<uint8_t> make_weights(GgmlType t, int64_t rows, int64_t k, uint32_t seed) {
  const size_t rb = row_bytes(t, k);
  std::vector<uint8_t> w(rb * size_t(rows));
  if (can_quantize(t)) {
    const auto x = test::normal_data(size_t(rows * k), seed);
    for (int64_t r = 0; r < rows; ++r) quantize_row(t, x.data() + r * k, w.data() + r * rb, k);
    return w;
  }
  std::mt19937 rng(seed);
  for (auto& b : w) b = uint8_t(rng());
  const size_t bb = type_info(t).block_bytes;
  const uint16_t d = f32_to_fp16(0.01f);
  for (size_t off = 0; off < w.size(); off += bb) {
    if (t == GgmlType::IQ1_M) {  // fp16 scale lives in the top nibbles of the four scale words
      uint16_t sc[4];
      std::memcpy(sc, &w[off + 48], 8);
      for (int i = 0; i < 4; ++i) sc[i] = uint16_t((sc[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
      std::memcpy(&w[off + 48], sc, 8);
    } else {
      std::memcpy(&w[off], &d, 2);  // every other IQ block starts with its fp16 scale
    }
  }
  return w;
}

// Half the largest quantisation step of activation element i (0 for float activations).
float half_step(GgmlType w, GgmlType act, const uint8_t* xq, int64_t i) {
  // BF16 weights meet activations rounded to bfloat16: at most half a unit in the
  // last of 8 mantissa bits, 2^-9 relative (2^-8 taken, as |x| may exceed |rounded x|).
  if (w == GgmlType::BF16) return std::ldexp(std::fabs(reinterpret_cast<const float*>(xq)[i]), -8);
  if (act == GgmlType::Q8_0) return 0.5f * std::fabs(fp16_to_f32(reinterpret_cast<const BlockQ8_0*>(xq)[i / 32].d));
  if (act == GgmlType::Q8_K) return 0.5f * reinterpret_cast<const BlockQ8_K*>(xq)[i / 256].d;
  return 0.f;
}

class Product : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Product, MatchesFloatReference) {
  const GgmlType t = GetParam();
  const int64_t k = 1024, rows = 5;
  const auto w = make_weights(t, rows, k, 7);
  const size_t rb = row_bytes(t, k);
  const GgmlType act = activation_type(t);
  const size_t xb = activation_row_bytes(t, k);
  for (int64_t ntok : {1, 3, 4, 7}) {
    const auto x = test::normal_data(size_t(ntok * k), 99 + uint32_t(ntok));
    std::vector<uint8_t> xq(xb * size_t(ntok));
    for (int64_t s = 0; s < ntok; ++s) quantize_activation_row(t, x.data() + s * k, xq.data() + s * xb, k);
    std::vector<float> y(size_t(ntok * rows), NAN), ys(size_t(ntok * rows), NAN);
    matmul_rows(t, w.data(), rb, 0, rows, k, xq.data(), xb, ntok, y.data(), rows);
    matmul_rows_scalar(t, w.data(), rb, 0, rows, k, xq.data(), xb, ntok, ys.data(), rows);
    std::vector<float> wf(static_cast<size_t>(k)), xd(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(t, w.data() + r * rb, wf.data(), k);
      for (int64_t s = 0; s < ntok; ++s) {
        const uint8_t* xqs = xq.data() + s * xb;
        dequantize_row(act, xqs, xd.data(), k);
        double exact = 0, mag = 0, step_bound = 0;
        for (int64_t i = 0; i < k; ++i) {
          exact += double(wf[i]) * double(xd[i]);
          mag += std::fabs(double(wf[i]) * double(xd[i]));
          step_bound += std::fabs(double(wf[i])) * half_step(t, act, xqs, i);
        }
        const float got = y[s * rows + r];
        ASSERT_NEAR(got, exact, 1e-5 * mag) << type_name(t) << " row " << r << " tok " << s << " of " << ntok;
        ASSERT_NEAR(got, ys[s * rows + r], 1e-5 * mag) << type_name(t) << ": SIMD and portable paths differ";
        const float ref = vec_dot_f32(t, w.data() + r * rb, x.data() + s * k, k);
        ASSERT_NEAR(got, ref, step_bound * 1.0001 + 1e-5 * mag) << type_name(t) << " vs float activations";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Product, ::testing::ValuesIn(kAll),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(Product, ActivationTypes) {
  EXPECT_EQ(activation_type(GgmlType::Q4_K), GgmlType::Q8_K);
  EXPECT_EQ(activation_type(GgmlType::IQ2_XXS), GgmlType::Q8_K);
  EXPECT_EQ(activation_type(GgmlType::Q4_0), GgmlType::Q8_0);
  EXPECT_EQ(activation_type(GgmlType::IQ4_NL), GgmlType::Q8_0);
  EXPECT_EQ(activation_type(GgmlType::BF16), GgmlType::F32);
  EXPECT_EQ(activation_row_bytes(GgmlType::Q4_K, 512), 2 * sizeof(BlockQ8_K));
}

TEST(Product, SimdKernelsExistForBenchmarkedTypes) {
#if defined(__AVX2__) && defined(__FMA__)
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_K, GgmlType::F16,
                     GgmlType::BF16, GgmlType::F32, GgmlType::IQ4_XS})
    EXPECT_TRUE(has_simd_matmul(t)) << type_name(t);
#elif defined(__aarch64__) && defined(__ARM_NEON)
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_K, GgmlType::F16,
                     GgmlType::BF16, GgmlType::F32, GgmlType::IQ4_NL, GgmlType::IQ4_XS})
    EXPECT_TRUE(has_simd_matmul(t)) << type_name(t);
#else
  GTEST_SKIP() << "no SIMD kernels in this build";
#endif
}

TEST(Product, RowRangeAndStrideAreHonoured) {
  const GgmlType t = GgmlType::Q4_K;
  const int64_t k = 512, rows = 6, ntok = 2, ldy = 10;
  const auto w = make_weights(t, rows, k, 3);
  const size_t rb = row_bytes(t, k), xb = activation_row_bytes(t, k);
  const auto x = test::normal_data(size_t(ntok * k), 5);
  std::vector<uint8_t> xq(xb * ntok);
  for (int s = 0; s < ntok; ++s) quantize_activation_row(t, x.data() + s * k, xq.data() + s * xb, k);
  std::vector<float> y(size_t(ntok * ldy), -7.f);
  matmul_rows(t, w.data(), rb, 2, 4, k, xq.data(), xb, ntok, y.data(), ldy);
  for (int s = 0; s < ntok; ++s)
    for (int r = 0; r < ldy; ++r) {
      if (r >= 2 && r < 4) EXPECT_NE(y[s * ldy + r], -7.f);
      else EXPECT_EQ(y[s * ldy + r], -7.f) << "wrote outside [r0, r1) at row " << r;
    }
}

// While portable products are on, matmul_rows is the portable path bit for bit
// (the CUDA model tests measure the CPU's drift between its two paths with it).
TEST(Product, PortableSwitchSelectsThePortablePath) {
  const GgmlType t = GgmlType::Q4_K;
  const int64_t k = 512, rows = 9, ntok = 3;
  const auto w = make_weights(t, rows, k, 11);
  const size_t rb = row_bytes(t, k), xb = activation_row_bytes(t, k);
  const auto x = test::normal_data(size_t(ntok * k), 5);
  std::vector<uint8_t> xq(xb * size_t(ntok));
  for (int64_t s = 0; s < ntok; ++s) quantize_activation_row(t, x.data() + s * k, xq.data() + s * xb, k);
  std::vector<float> y(size_t(ntok * rows)), ys(size_t(ntok * rows));
  matmul_rows_scalar(t, w.data(), rb, 0, rows, k, xq.data(), xb, ntok, ys.data(), rows);
  use_portable_products(true);
  matmul_rows(t, w.data(), rb, 0, rows, k, xq.data(), xb, ntok, y.data(), rows);
  use_portable_products(false);
  EXPECT_EQ(std::memcmp(y.data(), ys.data(), y.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ember::quant
