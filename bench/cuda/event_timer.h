// Timing of device work with CUDA events, shared by the CUDA benchmarks.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "backend/cuda/cuda_check.h"
#include "bench_util.h"

namespace ember::bench {

// Median milliseconds per call of f(i) (i counts the calls), timed over
// `runs` runs of `per_run` consecutive calls on the default stream, after
// two runs' worth of warm-up calls, events around each run.
template <class F>
double median_call_ms(int runs, int per_run, F&& f) {
  cudaEvent_t a, b;
  EMBER_CUDA_CHECK(cudaEventCreate(&a));
  EMBER_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  int call = 0;
  for (int i = 0; i < 2 * per_run; ++i) f(call++);
  for (int r = 0; r < runs; ++r) {
    EMBER_CUDA_CHECK(cudaEventRecord(a));
    for (int i = 0; i < per_run; ++i) f(call++);
    EMBER_CUDA_CHECK(cudaEventRecord(b));
    EMBER_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / float(per_run));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(ms);
}

// The device's copy bandwidth in GB/s, bytes read + written by a 1 GiB
// device-to-device copy (median of 20): the ceiling of a memory-bound kernel.
inline double device_copy_gbs() {
  const size_t bytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  EMBER_CUDA_CHECK(cudaMalloc(&a, bytes));
  EMBER_CUDA_CHECK(cudaMalloc(&b, bytes));
  EMBER_CUDA_CHECK(cudaMemset(a, 1, bytes));
  const double ms = median_call_ms(20, 1, [&](int) { EMBER_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  EMBER_CUDA_CHECK(cudaFree(a));
  EMBER_CUDA_CHECK(cudaFree(b));
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace ember::bench
