// The small per-row operations of the forward pass on the GPU (norms, residual
// adds, gated activations, soft-caps), mirroring backend/cpu/elementwise.h.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "model/descriptor.h"

namespace ember::cuda {

// y row i = rmsnorm(x row (rows ? rows[i] : i)) * w, rows of n_cols floats.
void rmsnorm_rows(const float* x, const int32_t* rows, int64_t n, const float* w, float eps, int64_t n_cols, float* y,
                  cudaStream_t s);
// x += (post_norm ? rmsnorm(p) * post_norm : p), n rows of n_cols.
void add_residual(float* x, const float* p, const float* post_norm, float eps, int64_t n, int64_t n_cols,
                  cudaStream_t s);
// h = act(gate) * up over n elements.
void gated_activation(Activation a, const float* gate, const float* up, float* h, int64_t n, cudaStream_t s);
// x = cap * tanh(x / cap) over n elements.
void softcap(float* x, int64_t n, float cap, cudaStream_t s);

}  // namespace ember::cuda
