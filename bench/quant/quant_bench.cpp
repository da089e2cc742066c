// Times matmul_rows on a 2048 x 8192 weight matrix (2048 rows of 8192) on one
// thread, for decode (1 token) and prefill (64 tokens), and the quantiser.
// Reports the median of repeats as weight GB/s and GFLOP/s (2 * k per output).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "quant/quant.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int main() {
  const int64_t rows = 2048, k = 8192;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> wf(size_t(rows * k));
  for (auto& v : wf) v = dist(rng);
  std::printf("matmul_rows, %lld x %lld weights, 1 thread, median of repeats\n", (long long)rows, (long long)k);
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q4_0, GgmlType::Q5_K,
                     GgmlType::IQ4_XS, GgmlType::F16}) {
    const size_t rb = row_bytes(t, k);
    std::vector<uint8_t> w(rb * size_t(rows));
    const auto tq = Clock::now();
    for (int64_t r = 0; r < rows; ++r) quant::quantize_row(t, wf.data() + r * k, w.data() + r * rb, k);
    const double quant_s = seconds_since(tq);
    for (int64_t ntok : {1, 64}) {
      const size_t xb = quant::activation_row_bytes(t, k);
      std::vector<uint8_t> xq(xb * size_t(ntok));
      for (int64_t s = 0; s < ntok; ++s) quant::quantize_activation_row(t, wf.data() + s * k, xq.data() + s * xb, k);
      std::vector<float> y(size_t(rows * ntok));
      std::vector<double> times;
      const int reps = ntok == 1 ? 15 : 5;
      for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        quant::matmul_rows(t, w.data(), rb, 0, rows, k, xq.data(), xb, ntok, y.data(), rows);
        times.push_back(seconds_since(t0));
      }
      std::sort(times.begin(), times.end());
      const double s = times[times.size() / 2];
      std::printf("  %-6s ntok=%-3lld %8.3f ms  %7.2f GB/s  %7.1f GFLOP/s", type_name(t), (long long)ntok, s * 1e3,
                  double(w.size()) / s / 1e9, 2.0 * double(rows) * double(k) * double(ntok) / s / 1e9);
      if (ntok == 1) std::printf("   (quantise: %.3f s)", quant_s);
      std::printf("\n");
    }
  }
  return 0;
}
