// The greedy choice of logit rows on the GPU, so that only ids cross to the host.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ember::cuda {

// ids[r] = the greedy choice of row r (rows ld floats apart) among its first n
// logits (n >= 1), exactly as greedy_id() of engine/backend.h decides it: the lowest id
// holding the largest logit, kPickNonFinite for a NaN or +inf, kPickAllMasked
// when all are -inf. scratch: argmax_scratch_bytes(n_rows) bytes, zero before
// the first call; every call leaves it ready for the next.
size_t argmax_scratch_bytes(int64_t max_rows);
void argmax_rows(const float* logits, int64_t ld, int64_t n_rows, int n, int32_t* ids, int32_t* scratch, cudaStream_t s);

}  // namespace ember::cuda
