// Times matmul_rows on a 2048 x 8192 weight matrix (2048 rows of 8192) on one
// thread, for decode (1 token) and prefill (64 tokens), and the quantiser.
// Reports the best of repeats as weight GB/s and GFLOP/s (2 * k per output),
// timed in thread CPU time: the machine is shared with compilers, and CPU time
// with the fastest repeat is what is least disturbed by them.
// Decode (1 token) cycles through enough copies of the weights to exceed the
// last-level cache (32 MiB on the Zen 3 test machine), so its GB/s is memory
// bandwidth, as in a real forward pass, not L3 bandwidth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "quant/quant.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

static double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int main() {
  const int64_t rows = 2048, k = 8192;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> wf(size_t(rows * k));
  for (auto& v : wf) v = dist(rng);
  std::printf("matmul_rows, %lld x %lld weights, 1 thread, best of repeats (thread CPU time)\n", (long long)rows, (long long)k);
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q4_0, GgmlType::Q5_K,
                     GgmlType::IQ4_XS, GgmlType::F16}) {
    const size_t rb = row_bytes(t, k);
    std::vector<uint8_t> w(rb * size_t(rows));
    const auto tq = Clock::now();
    for (int64_t r = 0; r < rows; ++r) quant::quantize_row(t, wf.data() + r * k, w.data() + r * rb, k);
    const double quant_s = seconds_since(tq);
    // Tile shapes the timed runs do not reach (the kernels tile tokens by 4 or 8).
    for (int64_t ntok : {2, 5, 6, 9, 13}) {
      const int64_t check_rows = 5;
      const size_t xb = quant::activation_row_bytes(t, k);
      std::vector<uint8_t> xq(xb * size_t(ntok));
      for (int64_t s = 0; s < ntok; ++s) quant::quantize_activation_row(t, wf.data() + s * k, xq.data() + s * xb, k);
      std::vector<float> y(size_t(check_rows * ntok)), ys(y.size());
      quant::matmul_rows(t, w.data(), rb, 0, check_rows, k, xq.data(), xb, ntok, y.data(), check_rows);
      quant::matmul_rows_scalar(t, w.data(), rb, 0, check_rows, k, xq.data(), xb, ntok, ys.data(), check_rows);
      for (size_t i = 0; i < y.size(); ++i)
        if (std::fabs(y[i] - ys[i]) > 1e-3 * (std::fabs(ys[i]) + 1.0)) {
          std::printf("  %s ntok=%lld: SIMD %g vs portable %g at %zu\n", type_name(t), (long long)ntok, y[i], ys[i], i);
          return 1;
        }
    }
    for (int64_t ntok : {1, 64}) {
      const size_t xb = quant::activation_row_bytes(t, k);
      std::vector<uint8_t> xq(xb * size_t(ntok));
      for (int64_t s = 0; s < ntok; ++s) quant::quantize_activation_row(t, wf.data() + s * k, xq.data() + s * xb, k);
      std::vector<float> y(size_t(rows * ntok));
      std::vector<double> times;
      const size_t copies = ntok == 1 ? std::max<size_t>(1, (size_t(96) << 20) / w.size() + 1) : 1;
      std::vector<uint8_t> wc(w.size() * copies);
      for (size_t c = 0; c < copies; ++c) std::copy(w.begin(), w.end(), wc.begin() + std::ptrdiff_t(c * w.size()));
      const int reps = ntok == 1 ? 31 : 5;
      for (int i = 0; i < reps; ++i) {
        const uint8_t* wi = wc.data() + (size_t(i) % copies) * w.size();
        const double t0 = thread_seconds();
        quant::matmul_rows(t, wi, rb, 0, rows, k, xq.data(), xb, ntok, y.data(), rows);
        times.push_back(thread_seconds() - t0);
      }
      // The SIMD result must agree with the portable path on a few rows.
      const int64_t check_rows = 8;
      std::vector<float> ys(size_t(check_rows * ntok));
      quant::matmul_rows_scalar(t, w.data(), rb, 0, check_rows, k, xq.data(), xb, ntok, ys.data(), check_rows);
      double worst = 0;
      for (int64_t s = 0; s < ntok; ++s)
        for (int64_t r = 0; r < check_rows; ++r) {
          const double a = y[size_t(s * rows + r)], b = ys[size_t(s * check_rows + r)];
          worst = std::max(worst, std::fabs(a - b) / (std::fabs(b) + 1.0));
        }
      std::sort(times.begin(), times.end());
      const double s = times.front();
      std::printf("  %-6s ntok=%-3lld %8.3f ms  %7.2f GB/s  %7.1f GFLOP/s", type_name(t), (long long)ntok, s * 1e3,
                  double(w.size()) / s / 1e9, 2.0 * double(rows) * double(k) * double(ntok) / s / 1e9);
      std::printf("  max rel diff vs portable %.1e", worst);
      if (ntok == 1) {
        // Decode as the CPU backend runs it: rows split across two threads.
        // Wall time (both threads must finish), best of repeats.
        double best2 = 1e9;
        for (int i = 0; i < reps; ++i) {
          const uint8_t* wi = wc.data() + (size_t(i) % copies) * w.size();
          const auto t0 = Clock::now();
          std::thread other([&] {
            quant::matmul_rows(t, wi, rb, rows / 2, rows, k, xq.data(), xb, 1, y.data(), rows);
          });
          quant::matmul_rows(t, wi, rb, 0, rows / 2, k, xq.data(), xb, 1, y.data(), rows);
          other.join();
          best2 = std::min(best2, seconds_since(t0));
        }
        std::printf("  2 threads %.2f GB/s", double(w.size()) / best2 / 1e9);
      }
      if (ntok == 1) std::printf("   (quantise: %.3f s)", quant_s);
      std::printf("\n");
    }
  }
  return 0;
}
