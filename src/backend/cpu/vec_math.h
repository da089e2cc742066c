// Vectorised float math for the forward pass's elementwise steps.
#pragma once
#include <cstdint>

namespace ember::cpu {

// x[i] = exp(x[i] - shift) for i in [0, n); returns the sum of the results.
// AVX2: a degree-6 polynomial after range reduction, within 2 ulp of expf over
// the range softmax uses (arguments <= 0) and down to -87; below that, 0.
float exp_shifted_sum(float* x, int64_t n, float shift);

// h[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) * up.
void silu_mul(const float* gate, const float* up, float* h, int64_t n);

}  // namespace ember::cpu
