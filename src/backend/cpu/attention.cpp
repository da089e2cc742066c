#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/elementwise.h"

namespace ember::cpu {

void attend(const AttentionArgs& a, const float* q, float* out, float* scores) {
  const int bs = a.kv->block_size();
  const int kv_dim = a.kv->kv_dim();
  const int64_t n = a.last - a.first + 1;
  float max_s = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = a.first + j;
    const float* k = a.kv->keys(a.layer, a.blocks[p / bs]) + size_t(p % bs) * size_t(kv_dim) + size_t(a.kv_head) * size_t(a.head_dim);
    float dot = 0;
    for (int d = 0; d < a.head_dim; ++d) dot += q[d] * k[d];
    float s = dot * a.scale;
    if (a.softcap > 0) s = softcap(s, a.softcap);
    scores[j] = s;
    max_s = std::max(max_s, s);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - max_s);
    sum += scores[j];
  }
  const float inv = float(1.0 / sum);
  std::fill(out, out + a.head_dim, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = a.first + j;
    const float* v = a.kv->values(a.layer, a.blocks[p / bs]) + size_t(p % bs) * size_t(kv_dim) + size_t(a.kv_head) * size_t(a.head_dim);
    const float w = scores[j] * inv;
    for (int d = 0; d < a.head_dim; ++d) out[d] += w * v[d];
  }
}

}  // namespace ember::cpu
