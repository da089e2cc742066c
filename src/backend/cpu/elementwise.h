// Small per-row operations of the forward pass.
#pragma once
#include <cmath>
#include <cstdint>

#include "backend/cpu/vec_math.h"
#include "model/descriptor.h"

namespace ember::cpu {

// y = x / rms(x) * w  (w already holds 1 + w for families that scale by 1 + w)
inline void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = float(1.0 / std::sqrt(ss / double(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[i];
}

inline float gelu_tanh(float x) {
  const float c = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
}

// h = act(gate) * up, elementwise.
inline void gated_activation(Activation a, const float* gate, const float* up, float* h, int64_t n) {
  if (a == Activation::SiLU) {
    silu_mul(gate, up, h, n);
  } else {
    for (int64_t i = 0; i < n; ++i) h[i] = gelu_tanh(gate[i]) * up[i];
  }
}

inline float softcap(float x, float cap) { return cap * std::tanh(x / cap); }

}  // namespace ember::cpu
