#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/elementwise.h"

namespace ember::cpu {

namespace {

// Eight independent partial sums, so the compiler can keep them in one vector
// register (a single running sum would serialise on the add latency).
inline float dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  float s = 0;
  for (; d < n; ++d) s += a[d] * b[d];
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace

void attend_group(const AttentionArgs& a, const float* q, float* out, float* scores) {
  const int bs = a.kv->block_size();
  const size_t kv_dim = size_t(a.kv->kv_dim());
  const size_t head_off = size_t(a.kv_head) * size_t(a.head_dim);
  const int64_t n = a.last - a.first + 1;
  const int hd = a.head_dim;

  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = a.first + j;
    const float* k = a.kv->keys(a.layer, a.blocks[p / bs]) + size_t(p % bs) * kv_dim + head_off;
    for (int h = 0; h < a.n_q; ++h) {
      float s = dot(q + h * hd, k, hd) * a.scale;
      if (a.softcap > 0) s = softcap(s, a.softcap);
      scores[h * n + j] = s;
    }
  }
  for (int h = 0; h < a.n_q; ++h) {  // softmax of each head's scores
    float* sc = scores + h * n;
    const float mx = *std::max_element(sc, sc + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sc[j] = std::exp(sc[j] - mx);
      sum += sc[j];
    }
    const float inv = float(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) sc[j] *= inv;
  }
  std::fill(out, out + size_t(a.n_q) * size_t(hd), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = a.first + j;
    const float* v = a.kv->values(a.layer, a.blocks[p / bs]) + size_t(p % bs) * kv_dim + head_off;
    for (int h = 0; h < a.n_q; ++h) {
      const float w = scores[h * n + j];
      float* o = out + h * hd;
      for (int d = 0; d < hd; ++d) o[d] += w * v[d];
    }
  }
}

}  // namespace ember::cpu
