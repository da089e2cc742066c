// The vectorised exp and SiLU against the C library, element by element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/vec_math.h"

using namespace ember;

TEST(VecMath, ExpShiftedSumMatchesStdExp) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-95.0f, 5.0f);
  for (int64_t n : {0, 1, 7, 8, 9, 31, 1000}) {
    std::vector<float> x(static_cast<size_t>(n)), y;
    for (auto& v : x) v = u(rng);
    y = x;
    const float shift = 4.5f;
    const float sum = cpu::exp_shifted_sum(y.data(), n, shift);
    double ref_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(double(x[size_t(i)] - shift));  // the argument as the function forms it, in float
      ref_sum += ref;
      if (ref < 1e-37) {  // below float's normal range: 0 or a tiny value are both fine
        EXPECT_LT(y[size_t(i)], 1e-37f);
        continue;
      }
      EXPECT_NEAR(y[size_t(i)], ref, 4e-7 * ref) << "x " << x[size_t(i)];
    }
    EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum + 1e-30) << "n " << n;
  }
}

TEST(VecMath, ExpOfZeroAndLargeNegatives) {
  std::vector<float> x = {0.0f, -1e4f, -88.0f, -87.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1e30f};
  cpu::exp_shifted_sum(x.data(), int64_t(x.size()), 0.0f);
  EXPECT_FLOAT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_LT(x[2], 1e-37f);
  EXPECT_NEAR(x[3], std::exp(-87.0f), 1e-6f * std::exp(-87.0f));
  EXPECT_EQ(x[8], 0.0f);
}

TEST(VecMath, SiluMulMatchesFormula) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 6.0f);
  const int64_t n = 1003;
  std::vector<float> g(n), up(n), h(n);
  for (auto& v : g) v = nd(rng);
  for (auto& v : up) v = nd(rng);
  g[0] = 200.0f;
  g[1] = -200.0f;
  g[2] = 0.0f;
  cpu::silu_mul(g.data(), up.data(), h.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double ref = double(g[size_t(i)]) / (1.0 + std::exp(-double(g[size_t(i)]))) * up[size_t(i)];
    EXPECT_NEAR(h[size_t(i)], ref, 1e-6 * std::fabs(ref) + 1e-30) << "gate " << g[size_t(i)];
  }
}

TEST(VecMath, NanPropagatesThroughTheSoftmaxSum) {
  std::vector<float> x(16, -1.0f);
  x[5] = std::nanf("");
  EXPECT_TRUE(std::isnan(ember::cpu::exp_shifted_sum(x.data(), int64_t(x.size()), 0.0f)));
  EXPECT_TRUE(std::isnan(x[5]));
}

// An element's result must not depend on whether it falls in a full vector or
// in the tail of a range (threads split ranges anywhere): batch invariance.
TEST(VecMath, SiluMulTailEqualsFullVectorBits) {
  std::vector<float> g(24), u(24), whole(24), split(24);
  for (int i = 0; i < 24; ++i) {
    g[size_t(i)] = -4.0f + 0.37f * float(i);
    u[size_t(i)] = 0.5f + 0.11f * float(i);
  }
  ember::cpu::silu_mul(g.data(), u.data(), whole.data(), 24);
  ember::cpu::silu_mul(g.data(), u.data(), split.data(), 13);  // 8 in a vector, 5 in the tail
  ember::cpu::silu_mul(g.data() + 13, u.data() + 13, split.data() + 13, 11);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(std::memcmp(&whole[size_t(i)], &split[size_t(i)], 4), 0) << i;
}
