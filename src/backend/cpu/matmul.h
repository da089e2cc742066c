// Y = X·Wᵀ for weight matrices in any file format, split across threads.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "model/weights.h"
#include "util/thread_pool.h"

namespace ember::cpu {

struct MatmulJob {
  const Matrix* W;
  float* Y;       // n_tok rows of ldy floats; columns [0, W->rows) written
  int64_t ldy;
};

// Several products that read the same activations X (n_tok rows of k floats),
// e.g. Q, K and V, in one dispatch: the activations are converted once and the
// rows of all matrices are cut into chunks that the threads take in turn, so a
// thread that falls behind (another process, a slower core) delays no one.
// `act` must hold activation_bytes(*jobs[0].W, n_tok) bytes.
void matmul_many(ThreadPool& pool, std::initializer_list<MatmulJob> jobs, const float* X, int64_t n_tok, uint8_t* act);

inline void matmul(ThreadPool& pool, const Matrix& W, const float* X, int64_t n_tok, float* Y, int64_t ldy, uint8_t* act) {
  matmul_many(pool, {MatmulJob{&W, Y, ldy}}, X, n_tok, act);
}

size_t activation_bytes(const Matrix& W, int64_t n_tok);

}  // namespace ember::cpu
