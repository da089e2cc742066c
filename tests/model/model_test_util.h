// Helpers shared by the model tests: running a model over token ids and
// comparing logits with a reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cstdlib>
#include <memory>

#include "backend/backend_factory.h"
#include "engine/session.h"
#include "model/model.h"

namespace ember::test {

// Logits of every position, [ids.size() * vocab].
// The KV cache is F32 here, so the comparisons with the references measure the
// model's arithmetic, not the rounding of a 16-bit cache.
inline KvConfig f32_kv(int max_context) {
  KvConfig kv;
  kv.block_size = 16;
  kv.n_blocks = (max_context + 15) / 16;
  kv.type = KvType::F32;
  return kv;
}

// The backend the model tests run on: EMBER_TEST_BACKEND (cpu, cuda), else cpu.
inline std::string test_backend_kind() {
  const char* k = std::getenv("EMBER_TEST_BACKEND");
  return k && *k ? k : "cpu";
}

inline std::vector<float> all_logits(const Model& m, const std::vector<int32_t>& ids, int threads = 2,
                                     const std::string& kind = test_backend_kind(), int step_tokens = 16) {
  StepLimits o;
  o.max_context = int(ids.size()) + 16;
  o.max_tokens = step_tokens;  // several chunks by default: exercises prefill across steps
  o.max_logit_rows = 16;
  auto backend = make_backend(m, kind, o, f32_kv(o.max_context), threads);
  BlockAllocator blocks(backend->kv_config().n_blocks);
  Session s(*backend, blocks);
  const int64_t V = m.desc().vocab;
  std::vector<float> out(ids.size() * size_t(V));
  s.append_all_logits(ids, [&](int64_t i, const float* l) { std::copy(l, l + V, out.begin() + i * V); });
  return out;
}

// Greedy continuation of `prompt` by n tokens, decoding one token per step.
inline std::vector<int32_t> greedy(const Model& m, const std::vector<int32_t>& prompt, int n, int threads = 2,
                                   const std::string& kind = test_backend_kind()) {
  StepLimits o;
  o.max_context = int(prompt.size()) + n + 1;
  o.max_tokens = 64;
  auto backend = make_backend(m, kind, o, f32_kv(o.max_context), threads);
  BlockAllocator blocks(backend->kv_config().n_blocks);
  Session s(*backend, blocks);
  const int64_t V = m.desc().vocab;
  std::vector<int32_t> out;
  const float* l = s.append(prompt);
  for (int i = 0; i < n; ++i) {
    const int32_t id = int32_t(std::max_element(l, l + V) - l);
    out.push_back(id);
    if (i + 1 < n) l = s.append(std::span<const int32_t>(&id, 1));
  }
  return out;
}

// max |a - ref| / max |ref|
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    num = std::max(num, double(std::fabs(a[i] - ref[i])));
    den = std::max(den, double(std::fabs(ref[i])));
  }
  return num / den;
}

// Per position: max |a - ref| over its row / max |ref| over all rows; the median
// of those. Unlike the maximum it is not set by the one position where the
// rounding of 8-bit activations happened to go the other way.
inline double median_rel_error(const std::vector<float>& a, const std::vector<float>& ref, int64_t vocab) {
  double den = 0;
  for (float v : ref) den = std::max(den, double(std::fabs(v)));
  std::vector<double> rows(ref.size() / size_t(vocab));
  for (size_t r = 0; r < rows.size(); ++r) {
    double num = 0;
    for (size_t i = r * size_t(vocab); i < (r + 1) * size_t(vocab); ++i)
      num = std::isnan(a[i]) ? INFINITY : std::max(num, double(std::fabs(a[i] - ref[i])));
    rows[r] = num / den;
  }
  std::nth_element(rows.begin(), rows.begin() + ptrdiff_t(rows.size() / 2), rows.end());
  return rows.empty() ? 0.0 : rows[rows.size() / 2];
}

// Fraction of rows whose argmax agrees.
inline double argmax_agreement(const std::vector<float>& a, const std::vector<float>& ref, int64_t vocab) {
  const int64_t rows = int64_t(ref.size()) / vocab;
  int64_t same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.data() + r * vocab;
    const float* y = ref.data() + r * vocab;
    same += (std::max_element(x, x + vocab) - x) == (std::max_element(y, y + vocab) - y);
  }
  return double(same) / double(rows);
}

// Argmax agreement over the positions where the reference is decisive: its top
// two logits differ by at least min_gap_frac of the largest |logit|. Closer
// calls are decided by rounding (the reference quantises activations to 8 bits,
// ember does not), so they say nothing about correctness.
inline double decisive_argmax_agreement(const std::vector<float>& a, const std::vector<float>& ref, int64_t vocab,
                                        double min_gap_frac) {
  double max_abs = 0;
  for (float v : ref) max_abs = std::max(max_abs, double(std::fabs(v)));
  const int64_t rows = int64_t(ref.size()) / vocab;
  int64_t counted = 0, same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.data() + r * vocab;
    const float* y = ref.data() + r * vocab;
    const int64_t top = std::max_element(y, y + vocab) - y;
    float second = -INFINITY;
    for (int64_t i = 0; i < vocab; ++i)
      if (i != top) second = std::max(second, y[i]);
    if (double(y[top] - second) < min_gap_frac * max_abs) continue;
    ++counted;
    same += (std::max_element(x, x + vocab) - x) == top;
  }
  return counted ? double(same) / double(counted) : 1.0;
}

}  // namespace ember::test
