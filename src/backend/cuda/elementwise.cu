#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/row_ops.cuh"

namespace ember::cuda {

namespace {

constexpr int kNormThreads = 256;

__global__ void rmsnorm_kernel(const float* x, const int32_t* rows, const float* w, float eps, int64_t n_cols, float* y) {
  begin_kernel();
  const int64_t i = blockIdx.x;
  const float* xr = x + (rows ? int64_t(rows[i]) : i) * n_cols;
  const float inv = row_inv_rms<kNormThreads>(xr, n_cols, eps);
  for (int64_t j = threadIdx.x; j < n_cols; j += kNormThreads) y[i * n_cols + j] = normed(xr[j], inv, w[j]);
}

__global__ void residual_kernel(float* x, const float* p, const float* post_norm, float eps, int64_t n_cols) {
  begin_kernel();
  const int64_t i = blockIdx.x;
  const float* pr = p + i * n_cols;
  const float inv = post_norm ? row_inv_rms<kNormThreads>(pr, n_cols, eps) : 1.f;
  for (int64_t j = threadIdx.x; j < n_cols; j += kNormThreads)
    x[i * n_cols + j] += post_norm ? normed(pr[j], inv, post_norm[j]) : pr[j];
}

__global__ void gated_kernel(Activation a, const float* g, const float* u, float* h, int64_t n) {
  begin_kernel();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    h[i] = gated(a, g[i], u[i]);
}

__global__ void softcap_kernel(float* x, int64_t n, float cap) {
  begin_kernel();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = cap * tanhf(x[i] / cap);
}

unsigned flat_blocks(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 4096)); }

}  // namespace

void rmsnorm_rows(const float* x, const int32_t* rows, int64_t n, const float* w, float eps, int64_t n_cols, float* y,
                  cudaStream_t s) {
  if (n <= 0) return;
  launch(rmsnorm_kernel, unsigned(n), kNormThreads, 0, s, x, rows, w, eps, n_cols, y);
}

void add_residual(float* x, const float* p, const float* post_norm, float eps, int64_t n, int64_t n_cols,
                  cudaStream_t s) {
  if (n <= 0) return;
  launch(residual_kernel, unsigned(n), kNormThreads, 0, s, x, p, post_norm, eps, n_cols);
}

void gated_activation(Activation a, const float* gate, const float* up, float* h, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch(gated_kernel, flat_blocks(n), 256, 0, s, a, gate, up, h, n);
}

void softcap(float* x, int64_t n, float cap, cudaStream_t s) {
  if (n <= 0) return;
  launch(softcap_kernel, flat_blocks(n), 256, 0, s, x, n, cap);
}

}  // namespace ember::cuda
