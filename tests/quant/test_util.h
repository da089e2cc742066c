// Helpers shared by the quant tests.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ember::quant::test {

inline std::vector<float> normal_data(size_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// sqrt(sum (a-b)^2 / sum b^2)
inline double rel_rms(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += double(a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace ember::quant::test
