// The second half of a one-token step's experts in one launch: for each chosen
// expert j, h_j = act(gate_j) * up_j rounded to int8, expert j's down product
// with it, and the weighted sum over j added onto the residual stream. Three
// kernels did this before (the gated rounding, the down product, the sum), and
// a one-token step is a chain of latencies: each seam cost its ramp and tail.
//
// A thread block cluster of K blocks (one per choice) takes kBlockRows output
// rows. Block j loads its rows of expert j's weights before it waits for the
// gate/up product (the expert ids were written two kernels before, as for
// gemv_experts' ids_early), then rounds h_j into shared memory itself (the
// 256-element blocks of a row, one warp each: a few KB from L2 instead of a
// kernel), multiplies, and leaves its rows' results in shared memory. After a
// cluster barrier each block sums a share of the rows over the K blocks in
// choice order, through distributed shared memory.
//
// Every value has the bits of the three-kernel path: the rounding is
// gated_int8_acts' (round_block), each row's sums are rows_dot's order (a row
// of at most LG pieces, one per lane, sums alike in a group of LG lanes), and
// the weighted sum is combine_experts' fmaf chain from zero (tested).
#include <cooperative_groups.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/int8_dot.cuh"
#include "backend/cuda/int8_round.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/row_ops.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kDownWarps = 4;
constexpr int kMaxDownChoices = 16;   // clusters of up to 16 blocks (beyond 8: opted into)
constexpr int64_t kMaxDownPieces = 128;  // a row's pieces a lane group fetches at once (LG 32, U 4)

struct DownArgs {
  const uint8_t* W;
  size_t stride, expert_stride;
  int64_t rows, k;
  const int32_t* ids;
  const float* weights;
  const float *gate, *up;
  Activation act;
  int K;
  float* out;
  bool add;
};

// Shared memory of a block: h_j's codes (and their `pairs` order, which
// round_block also writes), scales, group sums, then the block's row results.
struct DownSmem {
  size_t q, pairs, d, sums, y, bytes;
};
__host__ __device__ inline DownSmem down_smem(int64_t k, int block_rows) {
  auto up16 = [](size_t b) { return (b + 15) / 16 * 16; };
  DownSmem s{};
  s.q = 0;
  s.pairs = up16(size_t(k));
  s.d = s.pairs + up16(size_t(k));
  s.sums = s.d + up16(size_t(k / kInt8Block) * sizeof(float));
  s.y = s.sums + up16(size_t(k / kInt8Group) * sizeof(int32_t));
  s.bytes = s.y + size_t(block_rows) * sizeof(float);
  return s;
}

// LG lanes per row group, U pieces per lane, R rows per group: every piece of
// a row is fetched in one pass (pieces <= LG * U).
template <GgmlType T, int LG, int U, int R>
__global__ void __launch_bounds__(kDownWarps * 32) moe_down_kernel(DownArgs a) {
  using F = Int8Format<T>;
  constexpr int kBlockRows = kDownWarps * (32 / LG) * R;
  extern __shared__ __align__(16) uint8_t smem[];
  const DownSmem sm = down_smem(a.k, kBlockRows);
  auto* q = reinterpret_cast<int8_t*>(smem + sm.q);
  auto* pairs = reinterpret_cast<int8_t*>(smem + sm.pairs);
  auto* d = reinterpret_cast<float*>(smem + sm.d);
  auto* sums = reinterpret_cast<int32_t*>(smem + sm.sums);
  auto* y = reinterpret_cast<float*>(smem + sm.y);

  const cg::cluster_group cl = cg::this_cluster();
  const int j = int(cl.block_rank());
  const int64_t first_row = int64_t(blockIdx.x / unsigned(a.K)) * kBlockRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & (LG - 1);
  const int local0 = (warp * (32 / LG) + int(threadIdx.x & 31) / LG) * R;

  // Expert j's rows, fetched before the wait: its id is already there (see the top).
  const uint8_t* W = a.W + size_t(__ldcg(a.ids + j)) * a.expert_stride;
  const uint8_t* row[R];
  float acc[R][1];
  start_rows(W, a.stride, first_row + local0, a.rows, row, acc);
  const int64_t pieces = a.k / kInt8Block * F::kPieces;
  typename F::Raw raw[U][R];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t p = lane + LG * u;
    if (p < pieces)
#pragma unroll
      for (int r = 0; r < R; ++r) F::fetch(row[r], p / F::kPieces, int(p % F::kPieces), raw[u][r]);
  }
  begin_kernel();

  // h_j rounded, one warp per 256-element block, as gated_round_kernel does it.
  for (int64_t b = warp; b < a.k / kInt8Block; b += kDownWarps) {
    const int64_t e = int64_t(j) * a.k + b * kInt8Block + 8 * (threadIdx.x & 31);
    float g[8], uu[8], v[8];
    load_eight(a.gate + e, g);
    load_eight(a.up + e, uu);
#pragma unroll
    for (int m = 0; m < 8; ++m) v[m] = gated(a.act, g[m], uu[m]);
    round_block(v, q + b * kInt8Block, d + b, sums + b * (kInt8Block / kInt8Group), pairs + b * kInt8Block);
  }
  __syncthreads();

  const ActRow x = {q, d, sums};
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t p = lane + LG * u;
    if (p < pieces) {
      typename F::Piece w[R];
#pragma unroll
      for (int r = 0; r < R; ++r) F::decode(raw[u][r], int(p % F::kPieces), w[r]);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][0] += F::dot(w[r], x, p / F::kPieces, int(p % F::kPieces));
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r][0] = group_sum<LG>(acc[r][0]);
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) y[local0 + r] = acc[r][0];
  cl.sync();  // every block's rows are in its shared memory

  // Block j sums rows j, j + K, ... of the block's rows over the cluster, in choice order.
  for (int i = j + a.K * int(threadIdx.x); i < kBlockRows; i += a.K * int(blockDim.x)) {
    const int64_t r = first_row + i;
    if (r >= a.rows) break;
    float s = 0.f;
    for (int c = 0; c < a.K; ++c) s = fmaf(__ldcg(a.weights + c), *cl.map_shared_rank(y + i, c), s);
    float& o = a.out[r];
    o = a.add ? o + s : s;
  }
  cl.sync();  // no block leaves while another may still read its rows
}

struct NoLaunch {
  template <GgmlType>
  void operator()() const {}
};

// Pieces of a 256-element block in format T's integer product.
int pieces_per_block(GgmlType t) {
  int n = 0;
  dispatch_int8(t, [&]<GgmlType T>() { n = Int8Format<T>::kPieces; });
  return n;
}

}  // namespace

bool moe_down_fits(const DeviceMatrix& down, int k_used) {
  // It rounds the gated activation itself, in the K style: the formats that read that one.
  if (!dispatch_int8(down.type, NoLaunch{}) || tensor_core_products(1) || down.k % kInt8Block != 0 ||
      down.expert_stride == 0)
    return false;
  // One expert a token (a launch without clusters) keeps the three kernels: not measured nor tested here.
  return k_used >= 2 && k_used <= kMaxDownChoices && down.k / kInt8Block * pieces_per_block(down.type) <= kMaxDownPieces;
}

void moe_down_one_token(Activation act, const DeviceMatrix& down, const int32_t* ids, const float* weights,
                        const float* gate, const float* up, int k_used, float* out, bool add, cudaStream_t s) {
  if (!moe_down_fits(down, k_used)) throw Error("CUDA backend: the one-launch expert down product does not take this matrix");
  const DownArgs a{down.data, down.row_stride, down.expert_stride, down.rows, down.k, ids, weights, gate, up, act, k_used, out, add};
  const int64_t pieces = down.k / kInt8Block * pieces_per_block(down.type);
  auto go = [&]<GgmlType T, int LG, int U, int R>() {
    constexpr int kBlockRows = kDownWarps * (32 / LG) * R;
    static const cudaError_t opted =
        cudaFuncSetAttribute(moe_down_kernel<T, LG, U, R>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    EMBER_CUDA_CHECK(opted);
    const unsigned clusters = unsigned((down.rows + kBlockRows - 1) / kBlockRows);
    launch_clustered(moe_down_kernel<T, LG, U, R>, clusters * unsigned(k_used), kDownWarps * 32,
                     down_smem(down.k, kBlockRows).bytes, unsigned(k_used), s, a);
  };
  // The narrowest lane group that holds a row's pieces one per lane, else the
  // whole warp with several; U pieces of R rows, 4 pieces of raw weights a lane
  // (48 registers for Q4_K, 80 for Q5_K).
  dispatch_int8(down.type, [&]<GgmlType T>() {
    if (pieces <= 8) go.template operator()<T, 8, 1, 4>();
    else if (pieces <= 16) go.template operator()<T, 16, 1, 4>();
    else if (pieces <= 32) go.template operator()<T, 32, 1, 4>();
    else if (pieces <= 64) go.template operator()<T, 32, 2, 2>();
    else go.template operator()<T, 32, 4, 1>();
  });
}

}  // namespace ember::cuda
