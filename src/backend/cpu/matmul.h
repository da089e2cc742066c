// Y = X·Wᵀ for a weight matrix in any file format, split across threads.
#pragma once
#include <cstdint>

#include "model/weights.h"
#include "util/thread_pool.h"

namespace ember::cpu {

// X: n_tok rows of W.k floats; Y: n_tok rows of ldy floats, columns [0, W.rows) written.
// `act` must hold activation_bytes(W, n_tok) bytes.
void matmul(ThreadPool& pool, const Matrix& W, const float* X, int64_t n_tok, float* Y, int64_t ldy, uint8_t* act);
size_t activation_bytes(const Matrix& W, int64_t n_tok);

}  // namespace ember::cpu
