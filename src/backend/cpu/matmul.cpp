#include "backend/cpu/matmul.h"

#include <algorithm>

#include "quant/quant.h"

namespace ember::cpu {

size_t activation_bytes(const Matrix& W, int64_t n_tok) {
  return quant::activation_row_bytes(W.type, W.k) * size_t(n_tok);
}

namespace {

// Jobs can share one activation conversion when their dot products read the same format.
bool same_activation_format(const Matrix& a, const Matrix& b) {
  return a.k == b.k && quant::activation_type(a.type) == quant::activation_type(b.type) &&
         quant::activation_needs_conversion(a.type) == quant::activation_needs_conversion(b.type) &&
         (a.type == GgmlType::BF16) == (b.type == GgmlType::BF16);  // BF16 rounds its float activations
}

}  // namespace

void matmul_many(ThreadPool& pool, std::initializer_list<MatmulJob> jobs, const float* X, int64_t n_tok, uint8_t* act) {
  const Matrix& W0 = *jobs.begin()->W;
  for (const MatmulJob& j : jobs) {
    if (!same_activation_format(*j.W, W0)) {  // rare (mixed files): one dispatch each
      for (const MatmulJob& one : jobs) matmul_many(pool, {one}, X, n_tok, act);
      return;
    }
  }
  // Convert each activation row once into the format the weight type's dot product reads.
  const size_t act_stride = quant::activation_row_bytes(W0.type, W0.k);
  const void* xq = X;
  if (quant::activation_needs_conversion(W0.type)) {
    pool.parallel_for(n_tok, [&](int64_t b, int64_t e, int) {
      for (int64_t t = b; t < e; ++t) quant::quantize_activation_row(W0.type, X + t * W0.k, act + size_t(t) * act_stride, W0.k);
    }, 8);
    xq = act;
  }

  // Chunks of rows over all jobs: big enough to stream (tens of KB of weights
  // each), small enough that the last ones balance the threads. Each thread
  // walks its own contiguous run of chunks (ThreadPool::for_each_chunk).
  constexpr int64_t kChunk = 32;
  int64_t total_rows = 0, n_chunks = 0;
  for (const MatmulJob& j : jobs) {
    total_rows += j.W->rows;
    n_chunks += (j.W->rows + kChunk - 1) / kChunk;
  }
  auto run_chunk = [&](int64_t c) {
    for (const MatmulJob& j : jobs) {
      const int64_t nc = (j.W->rows + kChunk - 1) / kChunk;
      if (c >= nc) { c -= nc; continue; }
      const int64_t r0 = c * kChunk, r1 = std::min(j.W->rows, r0 + kChunk);
      quant::matmul_rows(j.W->type, j.W->data, j.W->row_stride, r0, r1, j.W->k, xq, act_stride, n_tok, j.Y, j.ldy);
      return;
    }
  };
  if (total_rows * W0.k < 65536 || n_chunks == 1) {  // too small to be worth waking another thread
    for (int64_t c = 0; c < n_chunks; ++c) run_chunk(c);
    return;
  }
  pool.for_each_chunk(n_chunks, [&](int64_t c, int) { run_chunk(c); });
}

}  // namespace ember::cpu
