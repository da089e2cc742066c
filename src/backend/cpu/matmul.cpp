#include "backend/cpu/matmul.h"

#include "quant/quant.h"

namespace ember::cpu {

size_t activation_bytes(const Matrix& W, int64_t n_tok) {
  return quant::activation_row_bytes(W.type, W.k) * size_t(n_tok);
}

void matmul(ThreadPool& pool, const Matrix& W, const float* X, int64_t n_tok, float* Y, int64_t ldy, uint8_t* act) {
  // Convert each activation row once into the format the weight type's dot product reads.
  const size_t act_stride = quant::activation_row_bytes(W.type, W.k);
  const void* xq = X;
  if (quant::activation_needs_conversion(W.type)) {
    pool.parallel_for(n_tok, [&](int64_t b, int64_t e, int) {
      for (int64_t t = b; t < e; ++t) quant::quantize_activation_row(W.type, X + t * W.k, act + size_t(t) * act_stride, W.k);
    }, 8);
    xq = act;
  }
  // Rows in chunks of 16 keep each thread's weights contiguous; small matrices stay on one thread.
  const int64_t grain = W.rows * W.k < 65536 ? W.rows : 16;
  pool.parallel_for(W.rows, [&](int64_t r0, int64_t r1, int) {
    quant::matmul_rows(W.type, W.data, W.row_stride, r0, r1, W.k, xq, act_stride, n_tok, Y, ldy);
  }, grain);
}

}  // namespace ember::cpu
