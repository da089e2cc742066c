// Rotary position embedding of one head vector, in either pairing.
#pragma once
#include <cmath>
#include <cstdint>

#include "model/descriptor.h"

namespace ember::cpu {

// cos/sin of pos * inv_freq[i] for each pair i: computed once per token, used by every head.
inline void rope_angles(int64_t pos, const double* inv_freq, int n_pairs, float* cos_out, float* sin_out) {
  for (int i = 0; i < n_pairs; ++i) {
    const double angle = double(pos) * inv_freq[i];
    cos_out[i] = float(std::cos(angle));
    sin_out[i] = float(std::sin(angle));
  }
}

// Rotates pair i of a head (2 * n_pairs elements) by the angle whose cos/sin are given.
inline void rope_head(float* x, int n_pairs, const float* cos_a, const float* sin_a, RopePairing pairing) {
  for (int i = 0; i < n_pairs; ++i) {
    const float c = cos_a[i], s = sin_a[i];
    float* a;
    float* b;
    if (pairing == RopePairing::Adjacent) {
      a = x + 2 * i;
      b = a + 1;
    } else {
      a = x + i;
      b = x + i + n_pairs;
    }
    const float x0 = *a, x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x1 * c + x0 * s;
  }
}

}  // namespace ember::cpu
