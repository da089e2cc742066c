#include "backend/cpu/vec_math.h"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "util/avx2.h"
#endif

namespace ember::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// exp(x) for 8 lanes: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its Taylor
// polynomial to degree 6 (truncation error < 2e-8 relative), times 2^n built
// in the exponent bits. Inputs below -87.3 give 0, above 88.7 give +inf.
inline __m256 exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.7f);
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  // max/min return their second operand when one is NaN: with x second, a NaN
  // input stays NaN (a softmax over NaN logits must not look like probabilities).
  x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 split in two for exactness
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

}  // namespace

float exp_shifted_sum(float* x, int64_t n, float shift) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  float s = hsum(sum);
  if (i < n) {  // the tail through the same polynomial, so every element is computed alike
    alignas(32) float t[8] = {};
    for (int64_t j = i; j < n; ++j) t[j - i] = x[j] - shift;
    _mm256_store_ps(t, exp8(_mm256_load_ps(t)));
    for (int64_t j = i; j < n; ++j) {
      x[j] = t[j - i];
      s += t[j - i];
    }
  }
  return s;
}

void silu_mul(const float* gate, const float* up, float* h, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, g))));
    _mm256_storeu_ps(h + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {  // the tail through the same polynomial: an element's result must not depend on where a thread's range ends
    alignas(32) float g[8] = {}, u[8] = {};
    for (int64_t j = i; j < n; ++j) { g[j - i] = gate[j]; u[j - i] = up[j]; }
    const __m256 gv = _mm256_load_ps(g);
    const __m256 s = _mm256_div_ps(gv, _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, gv))));
    _mm256_store_ps(g, _mm256_mul_ps(s, _mm256_load_ps(u)));
    for (int64_t j = i; j < n; ++j) h[j] = g[j - i];
  }
}

#else  // portable

float exp_shifted_sum(float* x, int64_t n, float shift) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    s += x[i];
  }
  return s;
}

void silu_mul(const float* gate, const float* up, float* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

#endif

}  // namespace ember::cpu
