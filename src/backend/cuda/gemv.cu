// Quantised matrix-vector products: one warp per few output rows, its 32
// lanes walking the rows 32 elements (one chunk) at a time, each chunk decoded
// in registers and multiplied with up to kMaxTile activation rows.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/warp_reduce.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kWarps = 4;     // rows per block of threads

// Rows per warp for a tile of NT tokens: more rows share each activation load,
// fewer fit in registers as NT grows.
template <int NT>
constexpr int rows_per_warp() { return NT <= 2 ? 4 : 2; }

// Tile blockIdx.y covers tokens [NT * y, NT * y + NT); tokens past n repeat the
// last one and are not written, so every token's arithmetic is the same.
template <GgmlType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const uint8_t* W, size_t stride, int64_t rows, int64_t k,
                                                          IqTables tab, const float* X, int64_t ldx, int64_t n,
                                                          float* Y, int64_t ldy, bool add) {
  begin_kernel();
  constexpr int R = rows_per_warp<NT>();
  const int64_t r0 = (int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5)) * R;
  if (r0 >= rows) return;
  const int64_t t0 = int64_t(blockIdx.y) * NT;
  const float* x[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) x[t] = X + min(t0 + t, n - 1) * ldx;
  float acc[R][NT];
  rows_dot<T, NT, R>(W, stride, r0, rows, k / 32, tab, x, acc);
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int t = 0; t < NT; ++t)
        if (t0 + t < n && r0 + r < rows) {
          float& y = Y[(t0 + t) * ldy + r0 + r];
          y = add ? y + acc[r][t] : acc[r][t];
        }
  }
}

template <GgmlType T>
__global__ void __launch_bounds__(kWarps * 32) gemv_experts_kernel(const uint8_t* W, size_t stride, size_t expert_stride,
                                                                  int64_t rows, int64_t k, IqTables tab,
                                                                  const int32_t* ids, const float* X, int64_t ldx,
                                                                  int x_div, float* Y, int64_t ldy, int64_t item0) {
  begin_kernel();
  constexpr int R = rows_per_warp<1>();
  const int64_t r0 = (int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5)) * R;
  if (r0 >= rows) return;
  const int64_t item = item0 + blockIdx.y;
  const float* x[1] = {X + (item / x_div) * ldx};
  float acc[R][1];
  rows_dot<T, 1, R>(W + size_t(ids[item]) * expert_stride, stride, r0, rows, k / 32, tab, x, acc);
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (r0 + r < rows) Y[item * ldy + r0 + r] = acc[r][0];
  }
}

template <GgmlType T>
__global__ void gather_kernel(const uint8_t* W, size_t stride, int64_t rows, int64_t k, IqTables tab, const int32_t* ids,
                              const int32_t* picked, float scale, float* Y) {
  begin_kernel();
  const int64_t t = blockIdx.x;
  int64_t id = ids[t];
  if (id < 0) {
    id = picked[-1 - id];
    if (id < 0 || id >= rows) id = 0;  // a failed pick: the host ends that sequence when it reads it
  }
  const uint8_t* row = W + size_t(id) * stride;
  for (int64_t c = threadIdx.x; c < k / 32; c += blockDim.x) {
    float w[32];
    dequant_chunk<T>(row, c, k / 32, tab, w);
#pragma unroll
    for (int j = 0; j < 32; ++j) Y[t * k + 32 * c + j] = w[j] * scale;
  }
}

void check_shape(const DeviceMatrix& W) {
  if (W.k % 32 != 0) throw Error("CUDA backend: rows of " + std::to_string(W.k) + " elements are not whole 32-element chunks");
}

}  // namespace

void gemv(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
          cudaStream_t s, const Int8Acts* acts, bool add) {
  if (n <= 0) return;
  check_shape(W);
  if (acts && acts->style == int8_style_of(W.type) && int8_product_serves(W)) {
    if (acts->n != n) throw Error("CUDA backend: int8 activations of another step");
    return gemv_int8(W, *acts, Y, ldy, s, add);
  }
  if (float_mma_serves(W, n) && float_mma_reads(X, ldx))
    return gemv_float_mma(W, X, ldx, n, Y, ldy, s, add);
  gemv_float(W, tab, X, ldx, n, Y, ldy, s, add);
}

void gemv_float(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
                cudaStream_t s, bool add) {
  if (n <= 0) return;
  check_shape(W);
  auto with_format = [&]<GgmlType T>() {
    auto go = [&]<int NT>() {
      const int64_t per_block = kWarps * rows_per_warp<NT>();
      const unsigned blocks = unsigned((W.rows + per_block - 1) / per_block);
      launch(gemv_kernel<T, NT>, dim3(blocks, unsigned((n + NT - 1) / NT)), kWarps * 32, 0, s, W.data, W.row_stride,
             W.rows, W.k, tab, X, ldx, n, Y, ldy, add);
    };
    if (n == 1) go.template operator()<1>();
    else if (n == 2) go.template operator()<2>();
    else if (n <= 4) go.template operator()<4>();
    else go.template operator()<kMaxTile>();
  };
  if (!dispatch_format(W.type, with_format)) throw Error(std::string("CUDA backend: no product for format ") + type_name(W.type));
}

void gemv_experts(const DeviceMatrix& W, const IqTables& tab, const int32_t* ids, const float* X, int64_t ldx,
                  int x_div, int64_t n_items, float* Y, int64_t ldy, cudaStream_t s, const Int8Acts* acts,
                  bool ids_early) {
  if (n_items <= 0) return;
  check_shape(W);
  if (acts && acts->style == int8_style_of(W.type) && int8_product_serves(W))
    return gemv_int8_experts(W, ids, *acts, x_div, n_items, Y, ldy, s, ids_early);
  if (float_mma_experts_serve(W) && tensor_core_products(1) && float_mma_reads(X, ldx))
    return gemv_float_mma_experts(W, ids, nullptr, nullptr, n_items, X, ldx, x_div, Y, ldy, s);
  const int64_t per_block = kWarps * rows_per_warp<1>();
  const unsigned blocks = unsigned((W.rows + per_block - 1) / per_block);
  auto with_format = [&]<GgmlType T>() {
    by_grid_rows(n_items, [&](int64_t first, unsigned count) {
      launch(gemv_experts_kernel<T>, dim3(blocks, count), kWarps * 32, 0, s, W.data, W.row_stride, W.expert_stride,
             W.rows, W.k, tab, ids, X, ldx, x_div, Y, ldy, first);
    });
  };
  if (!dispatch_format(W.type, with_format)) throw Error(std::string("CUDA backend: no product for format ") + type_name(W.type));
}

void gather_rows(const DeviceMatrix& W, const IqTables& tab, const int32_t* ids, const int32_t* picked, int64_t n,
                 float scale, float* Y, cudaStream_t s) {
  if (n <= 0) return;
  check_shape(W);
  auto with_format = [&]<GgmlType T>() {
    launch(gather_kernel<T>, unsigned(n), 128, 0, s, W.data, W.row_stride, W.rows, W.k, tab, ids, picked, scale, Y);
  };
  if (!dispatch_format(W.type, with_format)) throw Error(std::string("CUDA backend: no decoder for format ") + type_name(W.type));
}

namespace {
struct NoLaunch {
  template <GgmlType>
  void operator()() const {}
};
}  // namespace

bool device_can_decode(GgmlType t) { return dispatch_format(t, NoLaunch{}); }

}  // namespace ember::cuda
