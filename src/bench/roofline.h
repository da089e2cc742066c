// The roofline of ../shared/models.md: tok/s <= bandwidth / bytes per token,
// with the bandwidth measured in the same run.
// - CPU: a large memcpy split over all cores (bytes read + bytes written per
//   second), as bench/cpu measures it.
// - GPU: a large device-to-device copy timed with events (read + written), as
//   bench/cuda measures it, through the CUDA driver opened at run time
//   (libcuda.so.1), so any build measures it where a driver is installed.
// - GPU bf16 matrix rate (the prefill roofline): an n x n x n bfloat16 product
//   with float32 sums through the machine's cuBLAS, also opened at run time.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ember::bench {

struct Bandwidth {
  std::string device;  // "cpu" or "cuda"
  double gbs = 0;      // GB/s (1e9 bytes), read + written
  std::string note;    // how it was measured, or why not
};

// Median of `reps` copies of `bytes` on all hardware threads.
Bandwidth cpu_copy_bandwidth(size_t bytes = size_t(1) << 30, int reps = 7);
// Device 0; nullopt (with the reason in `why`) when no CUDA driver or device is found.
std::optional<Bandwidth> gpu_copy_bandwidth(std::string& why, size_t bytes = size_t(1) << 30, int reps = 20);
// TFLOP/s on device 0; `why` gets how it was measured, or why it was not
// (nullopt: no driver, device or cuBLAS).
std::optional<double> gpu_bf16_tflops(std::string& why, int n = 8192, int reps = 10);

// tok/s ceiling for a decode step that reads `bytes_per_token`.
inline double roofline_tps(double gbs, double bytes_per_token) {
  return bytes_per_token > 0 ? gbs * 1e9 / bytes_per_token : 0;
}

}  // namespace ember::bench
