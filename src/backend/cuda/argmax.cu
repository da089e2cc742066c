// One block per row: each thread keeps the first largest logit of its strided
// share, then the block keeps the largest value and, among equal values, the
// lowest id, so the answer is the host's whatever the thread count.
#include <climits>
#include <cmath>

#include "backend/cuda/argmax.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "engine/backend.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 1024;

struct Best {
  float v;
  int id;
};

__device__ __forceinline__ Best better(Best a, Best b) { return (b.v > a.v || (b.v == a.v && b.id < a.id)) ? b : a; }

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* logits, int64_t ld, int n, int32_t* ids) {
  __shared__ Best warp_best[kThreads / 32];
  __shared__ int warp_bad[kThreads / 32];
  begin_kernel();
  const float* row = logits + int64_t(blockIdx.x) * ld;
  Best b{-INFINITY, INT_MAX};
  bool bad = false;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float l = row[i];
    bad |= isnan(l) || l == INFINITY;
    if (l > b.v) b = {l, i};
  }
  for (int o = 16; o > 0; o >>= 1) b = better(b, Best{__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.id, o)});
  const int any_bad = __any_sync(0xffffffffu, bad);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    warp_best[w] = b;
    warp_bad[w] = any_bad;
  }
  __syncthreads();
  if (w == 0) {
    b = warp_best[lane];
    bad = warp_bad[lane];
    for (int o = 16; o > 0; o >>= 1) b = better(b, Best{__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.id, o)});
    const int block_bad = __any_sync(0xffffffffu, bad);
    if (lane == 0) ids[blockIdx.x] = block_bad ? kArgmaxNonFinite : b.v == -INFINITY ? kArgmaxAllMasked : b.id;
  }
}

}  // namespace

void argmax_rows(const float* logits, int64_t ld, int64_t n_rows, int n, int32_t* ids, cudaStream_t s) {
  if (n_rows <= 0) return;
  launch(argmax_kernel, unsigned(n_rows), kThreads, 0, s, logits, ld, n, ids);
}

}  // namespace ember::cuda
