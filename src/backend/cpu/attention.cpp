#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/vec_math.h"
#include "util/fp16.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "util/avx2.h"
#define EMBER_ATTENTION_AVX2 1
#endif

namespace ember::cpu {

namespace {

// The KV element types: how one element, and (AVX2) eight, become floats.
struct F32Elem {
  using T = float;
  static float one(T v) { return v; }
#if EMBER_ATTENTION_AVX2
  static __m256 eight(const T* p) { return _mm256_loadu_ps(p); }
#endif
};
struct F16Elem {
  using T = uint16_t;
  static float one(T v) { return fp16_to_f32(v); }
#if EMBER_ATTENTION_AVX2
  static __m256 eight(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#endif
};
struct BF16Elem {
  using T = uint16_t;
  static float one(T v) { return bf16_to_f32(v); }
#if EMBER_ATTENTION_AVX2
  static __m256 eight(const T* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
#endif
};

// Calls fn(offset, rows, count, stride) for each run of positions of
// [first, last] that lies in one KV block: `offset` is the run's first
// position minus `first`, `rows` points at that position's data for this head
// (keys or values, per `get`), and consecutive positions are `stride` elements apart.
template <class E, class Get, class F>
inline void for_each_block_run(const AttentionArgs& a, Get get, F fn) {
  const int bs = a.kv->config().block_size;
  const size_t kv_dim = size_t(a.kv->kv_dim());
  const size_t head_off = size_t(a.kv_head) * size_t(a.head_dim);
  for (int64_t p = a.first; p <= a.last;) {
    const int64_t in_block = p % bs;
    const int64_t count = std::min<int64_t>(bs - in_block, a.last + 1 - p);
    const auto* rows = reinterpret_cast<const typename E::T*>(get(a.blocks[p / bs])) + size_t(in_block) * kv_dim + head_off;
    fn(p - a.first, rows, count, kv_dim);
    p += count;
  }
}

// q·k over n elements, with independent partial sums (one running sum would
// serialise on the add latency).
template <class E>
inline float dot(const float* a, const typename E::T* b, int n) {
  int d = 0;
  float s = 0;
#if EMBER_ATTENTION_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; d + 16 <= n; d += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), E::eight(b + d), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d + 8), E::eight(b + d + 8), acc1);
  }
  for (; d + 8 <= n; d += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), E::eight(b + d), acc0);
  s = hsum(_mm256_add_ps(acc0, acc1));
#else
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * E::one(b[d + j]);
  s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
#endif
  for (; d < n; ++d) s += a[d] * E::one(b[d]);
  return s;
}

// out_h += Σ_j w[h][j] · v_j for `count` value rows, heads [h0, h0 + nh).
// Eight output columns at a time stay in registers while the rows stream by.
template <class E>
inline void accumulate_values(const float* w, int64_t w_stride, int h0, int nh, const typename E::T* rows,
                              int64_t count, size_t stride, int hd, float* out) {
  int d = 0;
#if EMBER_ATTENTION_AVX2
  if (nh <= 4) {
    for (; d + 8 <= hd; d += 8) {
      __m256 acc[4];
      for (int h = 0; h < nh; ++h) acc[h] = _mm256_loadu_ps(out + (h0 + h) * hd + d);
      for (int64_t j = 0; j < count; ++j) {
        const __m256 v = E::eight(rows + size_t(j) * stride + size_t(d));
        for (int h = 0; h < nh; ++h)
          acc[h] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + (h0 + h) * w_stride + j), v, acc[h]);
      }
      for (int h = 0; h < nh; ++h) _mm256_storeu_ps(out + (h0 + h) * hd + d, acc[h]);
    }
  }
#endif
  if (d == hd) return;
  for (int64_t j = 0; j < count; ++j) {
    const auto* v = rows + size_t(j) * stride;
    for (int h = h0; h < h0 + nh; ++h) {
      const float wj = w[h * w_stride + j];
      float* o = out + h * hd;
      for (int e = d; e < hd; ++e) o[e] += wj * E::one(v[e]);
    }
  }
}

template <class E>
void attend(const AttentionArgs& a, const float* q, float* out, float* scores) {
  const int64_t n = a.last - a.first + 1;
  const int hd = a.head_dim;
  const KvStorage& kv = *a.kv;
  auto keys = [&](int block) { return kv.keys(a.layer, block); };
  auto values = [&](int block) { return kv.values(a.layer, block); };

  // Scores of every query head against every key; each key row is read once for the group.
  for_each_block_run<E>(a, keys, [&](int64_t j0, const typename E::T* rows, int64_t count, size_t stride) {
    for (int64_t j = 0; j < count; ++j) {
      const auto* k = rows + size_t(j) * stride;
      for (int h = 0; h < a.n_q; ++h) {
        float s = dot<E>(q + h * hd, k, hd) * a.scale;
        if (a.softcap > 0) s = softcap(s, a.softcap);
        scores[h * n + j0 + j] = s;
      }
    }
  });
  for (int h = 0; h < a.n_q; ++h) {  // softmax of each head's scores
    float* sc = scores + h * n;
    const float mx = *std::max_element(sc, sc + n);
    const float inv = 1.0f / exp_shifted_sum(sc, n, mx);
    for (int64_t j = 0; j < n; ++j) sc[j] *= inv;
  }
  std::fill(out, out + size_t(a.n_q) * size_t(hd), 0.0f);
  for_each_block_run<E>(a, values, [&](int64_t j0, const typename E::T* rows, int64_t count, size_t stride) {
    for (int h0 = 0; h0 < a.n_q; h0 += 4)
      accumulate_values<E>(scores + j0, n, h0, std::min(4, a.n_q - h0), rows, count, stride, hd, out);
  });
}

}  // namespace

void attend_group(const AttentionArgs& a, const float* q, float* out, float* scores) {
  switch (a.kv->config().type) {
    case KvType::F32: return attend<F32Elem>(a, q, out, scores);
    case KvType::F16: return attend<F16Elem>(a, q, out, scores);
    case KvType::BF16: return attend<BF16Elem>(a, q, out, scores);
  }
}

}  // namespace ember::cpu
