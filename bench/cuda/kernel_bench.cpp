// The CUDA decode products alone, against the device's measured copy bandwidth:
//
//   ember_bench_cuda_kernels [--rows 14336] [--k 4096] [--tokens 1,2,4,8,16] [--formats Q4_K,Q6_K]
//
// For each weight format: products of a rows x k matrix with n activation
// rows, launched back to back as a decode step runs them (16 per timed run,
// median of 30 runs after warm-up, events around each run), over enough copies
// of the matrix in turn (at least 256 MB) that the 50 MB L2 cannot hold them.
// Timing launches one at a time instead would add each launch's own latency,
// which a captured step does not pay. Reports GB/s of weights
// read and the ratio to the copy bandwidth (bytes read + written by a 1 GiB
// device-to-device copy), the ceiling of a memory-bound kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_layout.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/iq_tables_device.h"
#include "bench_util.h"
#include "event_timer.h"
#include "quant/quant.h"

using namespace ember;
using namespace ember::cuda;


int main(int argc, char** argv) {
  int64_t rows = 14336, k = 4096;
  std::string tokens = "1,2,4,8,16";
  std::string formats;  // all of them when empty
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows") rows = std::stoll(argv[i + 1]);
    else if (a == "--k") k = std::stoll(argv[i + 1]);
    else if (a == "--tokens") tokens = argv[i + 1];
    else if (a == "--formats") formats = "," + std::string(argv[i + 1]) + ",";
  }
  try {
    const double copy_gbs = bench::device_copy_gbs();
    std::printf("copy bandwidth (read + write): %.0f GB/s\n\n", copy_gbs);

    const DeviceIqTables iq = upload_iq_tables();
    const IqTables& tab = iq.tables;

    const auto ns = bench::parse_list(tokens);
    const int64_t max_n = *std::max_element(ns.begin(), ns.end());
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x(size_t(max_n * k));
    for (float& v : x) v = nd(rng);
    DeviceBuffer dx(x.size() * 4), dy(size_t(max_n * rows) * 4), dq(int8_acts_bytes(max_n, k));
    EMBER_CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));

    std::printf("%lld x %lld weights; GB/s of weights read, and %% of the copy bandwidth\n\n| format | MB |",
                (long long)rows, (long long)k);
    for (int n : ns) std::printf(" %d tok |", n);
    std::printf("\n|---|---|");
    for (size_t i = 0; i < ns.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0,
                          GgmlType::IQ4_XS, GgmlType::IQ4_NL, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_S,
                          GgmlType::Q3_K, GgmlType::BF16, GgmlType::F16}) {
      if (!formats.empty() && formats.find("," + std::string(type_name(type)) + ",") == std::string::npos) continue;
      // 64 distinct quantised rows, repeated: the bytes a product reads are what matter here.
      const size_t stride = row_bytes(type, k), bytes = stride * size_t(rows);
      std::vector<uint8_t> host(bytes);
      std::vector<float> row(static_cast<size_t>(k));
      for (int64_t r = 0; r < std::min<int64_t>(rows, 64); ++r) {
        for (float& v : row) v = nd(rng);
        quant::quantize_row(type, row.data(), host.data() + size_t(r) * stride, k);
      }
      for (int64_t r = 64; r < rows; ++r) std::copy_n(host.data() + size_t(r % 64) * stride, stride, host.data() + size_t(r) * stride);
      std::vector<DeviceBuffer> copies;
      const size_t n_copies = std::max<size_t>(4, ((size_t(256) << 20) + bytes - 1) / bytes);
      for (size_t i = 0; i < n_copies; ++i) {
        copies.emplace_back(bytes);
        EMBER_CUDA_CHECK(cudaMemcpy(copies.back().get(), host.data(), bytes, cudaMemcpyHostToDevice));
        to_device_layout(type, copies.back().get<uint8_t>(), bytes, k, nullptr);
      }
      // The float product, then (where the format has one) the integer product,
      // its activation rounding included in the time.
      for (bool int8 : {false, true}) {
        if (int8 && !has_int8_product(type)) continue;
        std::printf("| %s%s | %.1f |", type_name(type), int8 ? " int8" : "", double(bytes) / 1e6);
        for (int n : ns) {
          const double ms = bench::median_call_ms(30, 16, [&](int i) {
            DeviceMatrix m{type, copies[size_t(i) % n_copies].get<uint8_t>(), k, rows, stride, 0};
            if (int8) {
              const Int8Acts a = quantize_int8_acts(dx.get<float>(), k, n, k, dq.get(), nullptr, int8_style_of(type));
              gemv(m, tab, dx.get<float>(), k, n, dy.get<float>(), rows, nullptr, &a);
            } else {
              gemv(m, tab, dx.get<float>(), k, n, dy.get<float>(), rows, nullptr);
            }
          });
          const double gbs = double(bytes) / (ms * 1e-3) / 1e9;
          std::printf(" %.0f (%.0f%%) |", gbs, 100.0 * gbs / copy_gbs);
        }
        std::printf("\n");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
