// Integer products for the formats whose CPU product rounds activations to
// int8 (per 256 elements, Q8_K: the K-quants, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_S;
// per 32, Q8_0: Q8_0, Q4_0, IQ4_NL): the weight codes meet the activation
// codes in __dp4a, four multiply-adds per instruction, and the scales are
// applied once per group.
// Against the float path (gemv.cu) this reads a quarter of the activation
// bytes and spends about a fifth of the instructions per weight.
//
// A warp takes R rows (the formats' pieces and the order of a row's sums:
// int8_dot.cuh); the kernels here take one token.
//
// These kernels serve one-token steps and the items of ungrouped expert
// products; from two tokens on, grouped experts, and every step with
// EMBER_CUDA_BATCH_INVARIANT=1, the products take the tensor cores
// (gemv_int8_mma.cu; gemv.h says which).
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/int8_dot.cuh"
#include "backend/cuda/fused_launch.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

// How a launch divides the work: warps per block, rows per warp, pieces each
// lane loads ahead.
template <int Warps, int Rows, int Unroll, int MinBlocks = 1>
struct Shape {
  static constexpr int kWarps = Warps, kRows = Rows, kUnroll = Unroll, kMinBlocks = MinBlocks;
};

// One token (a one-token step). Each matrix's rows are computed exactly as in a launch of their own.
template <GgmlType T, class S>
__global__ void __launch_bounds__(S::kWarps * 32, S::kMinBlocks) gemv_int8_kernel(Fused f, Int8Acts a, bool add) {
  constexpr int R = S::kRows;
  const FusedPart p = fused_part(f, blockIdx.x);
  const int64_t r0 = (int64_t(blockIdx.x - p.first) * S::kWarps + (threadIdx.x >> 5)) * R;
  if (r0 >= p.rows) return;
  const ActRow x[1] = {act_row(a, 0)};
  float acc[R][1];
  rows_dot<T, 1, R, S::kUnroll>(p.W, p.stride, r0, p.rows, a.k / 256, x, acc, true);
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (r0 + r < p.rows) {
        float& y = p.Y[r0 + r];
        y = add ? y + acc[r][0] : acc[r][0];
      }
  }
}

template <GgmlType T, class S>
__global__ void __launch_bounds__(S::kWarps * 32) gemv_int8_experts_kernel(ExpertPair m, size_t stride,
                                                                          size_t expert_stride, int64_t rows,
                                                                          const int32_t* ids, Int8Acts a, int x_div,
                                                                          int64_t ldy, bool ids_early, int64_t item0) {
  constexpr int R = S::kRows;
  // The expert ids come from the kernel before, or (ids_early) from one that
  // finished before it began: then read from L2 at once, and the first weights
  // are loaded before the wait for the activations.
  if (!ids_early) begin_kernel();
  const bool second = blockIdx.x >= m.blocks0;
  const uint8_t* W = second ? m.W[1] : m.W[0];
  float* Y = second ? m.Y[1] : m.Y[0];
  const int64_t r0 = (int64_t(blockIdx.x - (second ? m.blocks0 : 0u)) * S::kWarps + (threadIdx.x >> 5)) * R;
  if (r0 >= rows) return;
  const int64_t item = item0 + blockIdx.y;
  const ActRow x[1] = {act_row(a, item / x_div)};
  float acc[R][1];
  const int32_t expert = ids_early ? __ldcg(ids + item) : ids[item];
  rows_dot<T, 1, R, S::kUnroll>(W + size_t(expert) * expert_stride, stride, r0, rows, a.k / 256, x, acc, ids_early);
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (r0 + r < rows) Y[item * ldy + r0 + r] = acc[r][0];
  }
}

// Measured on the H200 against six other shapes (2-8 warps, 1-4 rows per warp,
// 1-4 pieces loaded ahead, register caps through minimum blocks per SM): at
// one token the others hold more registers for fewer resident warps, or
// spill (2026-12-02, bench/RESULTS.md).
using DefaultShape = Shape<4, 2, 1>;
// Expert products (a grid row per item, several items a token): four rows a
// warp, twice the weight loads in flight per lane and half the blocks. Against
// two rows, moe-30b-a3b Q4_K decoded 1.4% faster at 1 sequence and 6.3% at 16
// (2026-12-04, bench/RESULTS.md). A row's sums do not depend on the shape.
using ExpertShape = Shape<4, 4, 1>;

struct NoLaunch {
  template <GgmlType>
  void operator()() const {}
};


}  // namespace

bool has_int8_product(GgmlType t) { return dispatch_int8_any(t, NoLaunch{}); }

// As the CPU rounds each format's activations (quant::activation_type).
Int8Style int8_style_of(GgmlType t) {
  return t == GgmlType::Q8_0 || t == GgmlType::Q4_0 || t == GgmlType::IQ4_NL ? Int8Style::Q8_0 : Int8Style::K;
}

bool int8_product_serves(const DeviceMatrix& W) {
  // Rows of whole 256-element blocks only (rows of the 32-element formats that are not take floats).
  return W.k % kInt8Block == 0 && has_int8_product(W.type);
}

bool tensor_core_products(int64_t n) {
  static const bool invariant = [] {
    const char* v = std::getenv("EMBER_CUDA_BATCH_INVARIANT");
    return v && std::strcmp(v, "1") == 0;
  }();
  return invariant || n >= 2;
}

void gemv_int8(const DeviceMatrix& W, const Int8Acts& a, float* Y, int64_t ldy, cudaStream_t s, bool add) {
  const MatrixOut out{&W, Y, ldy};
  gemv_int8_fused({&out, 1}, a, s, add);
}

void gemv_int8_fused(std::span<const MatrixOut> outs, const Int8Acts& a, cudaStream_t s, bool add) {
  if (a.n <= 0 || outs.empty()) return;
  const GgmlType type = outs[0].W->type;
  for (const MatrixOut& o : outs) {
    check_int8_acts(*o.W, a);
    if (o.W->type != type) throw Error("CUDA backend: int8 products fused in one launch must share a format");
  }
  if (tensor_core_products(a.n)) return gemv_int8_mma_fused(outs, a, s, add);
  using S = DefaultShape;
  auto with_format = [&]<GgmlType T>() {
    unsigned blocks = 0;
    const Fused f = make_fused(outs, int64_t(S::kWarps) * S::kRows, blocks);
    launch(gemv_int8_kernel<T, S>, blocks, S::kWarps * 32, 0, s, f, a, add);
  };
  if (!dispatch_int8_any(type, with_format)) throw Error(std::string("CUDA backend: no int8 product for format ") + type_name(type));
}

void gemv_int8_experts(std::span<const MatrixOut> outs, const int32_t* ids, const Int8Acts& a, int x_div, int64_t n_items,
                       cudaStream_t s, bool ids_early) {
  if (n_items <= 0) return;
  const DeviceMatrix& W = *outs[0].W;
  // Each item multiplies alone.
  if (tensor_core_products(1)) return gemv_int8_mma_experts(outs, ids, nullptr, nullptr, n_items, a, x_div, s);
  using S = ExpertShape;
  const ExpertPair m = expert_pair(outs, a, int64_t(S::kWarps) * S::kRows);  // checks the activations
  auto with_format = [&]<GgmlType T>() {
    by_grid_rows(n_items, [&](int64_t first, unsigned count) {
      launch(gemv_int8_experts_kernel<T, S>, dim3(m.blocks0 * unsigned(outs.size()), count), S::kWarps * 32, 0, s, m,
             W.row_stride, W.expert_stride, W.rows, ids, a, x_div, outs[0].ldy, ids_early, first);
    });
  };
  if (!dispatch_int8_any(W.type, with_format)) throw Error(std::string("CUDA backend: no int8 product for format ") + type_name(W.type));
}

void gemv_int8_experts(const DeviceMatrix& W, const int32_t* ids, const Int8Acts& a, int x_div, int64_t n_items,
                       float* Y, int64_t ldy, cudaStream_t s, bool ids_early) {
  const MatrixOut out{&W, Y, ldy};
  gemv_int8_experts({&out, 1}, ids, a, x_div, n_items, s, ids_early);
}

void gemv_int8_experts_grouped(std::span<const MatrixOut> outs, const int32_t* order, const int32_t* tiles,
                               int64_t max_tiles, const Int8Acts& a, int x_div, cudaStream_t s, int tile_items) {
  gemv_int8_mma_experts(outs, nullptr, order, tiles, max_tiles, a, x_div, s, tile_items);
}

void gemv_int8_experts_grouped(const DeviceMatrix& W, const int32_t* order, const int32_t* tiles, int64_t max_tiles,
                               const Int8Acts& a, int x_div, float* Y, int64_t ldy, cudaStream_t s, int tile_items) {
  const MatrixOut out{&W, Y, ldy};
  gemv_int8_experts_grouped({&out, 1}, order, tiles, max_tiles, a, x_div, s, tile_items);
}

}  // namespace ember::cuda
