// Each row in slices, one block each: every thread keeps the first largest
// logit of its strided share, the block its best (the largest value, among
// equal values the lowest id), and the slice that finishes last combines the
// slices' bests the same way, so the answer is the host's whatever the slice
// and thread counts. One block per row read a 150K-entry row as a chain of
// ~150 loads per thread (12-14 us a step); spread over slices it is a few.
#include <algorithm>
#include <climits>
#include <cmath>

#include "backend/cuda/argmax.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "engine/backend.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kMaxSlices = 32;
constexpr int kPerThread = 8;  // logits per thread a slice is sized for

struct Best {
  float v;
  int id;
};

__device__ __forceinline__ Best better(Best a, Best b) { return (b.v > a.v || (b.v == a.v && b.id < a.id)) ? b : a; }

__device__ __forceinline__ Best warp_best(Best b) {
  for (int o = 16; o > 0; o >>= 1) b = better(b, Best{__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.id, o)});
  return b;
}

// Per row: kMaxSlices (value, id, bad) triples, then the row's counter of finished slices.
constexpr int kRowInts = 3 * kMaxSlices + 1;

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* logits, int64_t ld, int n, int slice,
                                                          int32_t* ids, int32_t* scratch) {
  __shared__ Best warp_bests[kThreads / 32];
  __shared__ int warp_bad[kThreads / 32];
  begin_kernel();
  const float* row = logits + int64_t(blockIdx.x) * ld;
  const int lo = int(blockIdx.y) * slice, hi = min(n, lo + slice);
  Best b{-INFINITY, INT_MAX};
  bool bad = false;
#pragma unroll 4
  for (int i = lo + int(threadIdx.x); i < hi; i += kThreads) {
    const float l = row[i];
    bad |= isnan(l) || l == INFINITY;
    if (l > b.v) b = {l, i};
  }
  b = warp_best(b);
  const int any_bad = __any_sync(0xffffffffu, bad);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    warp_bests[w] = b;
    warp_bad[w] = any_bad;
  }
  __syncthreads();
  if (w != 0) return;
  b = lane < kThreads / 32 ? warp_bests[lane] : Best{-INFINITY, INT_MAX};
  bad = lane < kThreads / 32 && warp_bad[lane];
  b = warp_best(b);
  const int slice_bad = __any_sync(0xffffffffu, bad);
  int32_t* mine = scratch + int64_t(blockIdx.x) * kRowInts;
  bool last = false;
  if (lane == 0) {
    mine[3 * blockIdx.y] = __float_as_int(b.v);
    mine[3 * blockIdx.y + 1] = b.id;
    mine[3 * blockIdx.y + 2] = slice_bad;
    __threadfence();  // the slice's best visible before it counts itself done
    last = atomicAdd(mine + 3 * kMaxSlices, 1) == int(gridDim.y) - 1;
    if (last) __threadfence();  // and the last one sees every slice's best before its warp reads them
  }
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  __syncwarp();  // lane 0's fence ordered before the other lanes' reads
  const bool in = lane < int(gridDim.y);
  b = in ? Best{__int_as_float(__ldcg(mine + 3 * lane)), __ldcg(mine + 3 * lane + 1)} : Best{-INFINITY, INT_MAX};
  b = warp_best(b);
  const int row_bad = __any_sync(0xffffffffu, in && __ldcg(mine + 3 * lane + 2));
  if (lane == 0) {
    ids[blockIdx.x] = row_bad ? kPickNonFinite : b.v == -INFINITY ? kPickAllMasked : b.id;
    mine[3 * kMaxSlices] = 0;  // ready for the next step
  }
}

}  // namespace

size_t argmax_scratch_bytes(int64_t max_rows) { return size_t(max_rows) * kRowInts * sizeof(int32_t); }

void argmax_rows(const float* logits, int64_t ld, int64_t n_rows, int n, int32_t* ids, int32_t* scratch, cudaStream_t s) {
  if (n_rows <= 0) return;
  if (n <= 0) throw Error("CUDA backend: argmax over an empty row");
  const int per_slice_min = kThreads * kPerThread;
  const int slices = std::min(kMaxSlices, (n + per_slice_min - 1) / per_slice_min);
  const int slice = (n + slices - 1) / slices;
  launch(argmax_kernel, dim3(unsigned(n_rows), unsigned(slices)), kThreads, 0, s, logits, ld, n, slice, ids, scratch);
}

}  // namespace ember::cuda
