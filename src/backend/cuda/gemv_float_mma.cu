// Products of BF16 and F16 weights on the tensor cores, for steps of 2 or
// more tokens (and every step with EMBER_CUDA_BATCH_INVARIANT=1). The float
// products (gemv.cu) spend CUDA-core instructions on every weight and token:
// past a few tokens they are bound by arithmetic, not by the bytes they read.
// Here one mma.sync multiplies 16 rows by 8 tokens, so each weight is read
// once per step and its multiplications cost a fraction of an instruction.
//
// The activations meet the weights as on the CPU (quant/matmul.cpp): BF16
// weights meet them rounded to bfloat16 (m16n8k16: exact products, sums in
// the tensor cores' float accumulation); F16 weights meet them unrounded,
// which takes two TF32 mma (m16n8k8): the activation's TF32 rounding and the
// TF32 rounding of what that left, so the product carries about 22 bits of
// the activation (an F16 weight is exact in TF32).
//
// A block takes 16 rows and J tiles of 8 tokens; its 8 warps take the row's
// 256-element chunks by class (chunk % 8) and multiply each with all J tiles;
// each class sums its chunks in order and the eight class sums are added in
// class order, so a token's result is the same bits in any batch and at any
// place in it (as gemv_int8_mma.cu's). Each lane loads 8 consecutive weights
// of rows g and g + 8 (one 16-byte load each) and the same 8 activations of
// token g; within an mma the order of the elements is free as long as weights
// and activations agree on it (fragments: PTX ISA, mma.m16n8k16 / m16n8k8).
#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/expert_tiles.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/fused_launch.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/mma_class_sums.cuh"
#include "backend/cuda/weight_loads.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kWarps = 8;      // per block, one class of chunks each
constexpr int kTileRows = 16;  // rows of one block (the mma's M)
constexpr int kClasses = kMmaClasses;
constexpr int kChunkSteps = 8;  // 32-element steps of a 256-element chunk

// c += a b over 16 elements, bfloat16 inputs: rows g, g + 8 (a) times token g (b).
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// c += a b over 8 elements, TF32 inputs.
__device__ __forceinline__ void mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// f rounded to TF32 (to nearest, ties away), as the 32-bit pattern of that
// float: the low 13 bits cleared here, since f - tf32(f) must see the value the mma multiplies.
__device__ __forceinline__ uint32_t tf32_bits(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r & 0xFFFFE000u;
}
__device__ __forceinline__ uint32_t bf16_pair(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
// An F16 weight as TF32 (exact: 10 bits of mantissa, an exponent TF32 holds).
__device__ __forceinline__ uint32_t f16_as_tf32(uint32_t word, int half) {
  return __float_as_uint(h2f(uint16_t(word >> (16 * half))));
}

// Elements [8q, 8q + 8) of a 32-element step of both rows (a) and of one
// token (x: eight floats, zeros where the tile has no such token) into acc.
template <GgmlType T>
__device__ __forceinline__ void multiply_step(const uint4 (&a)[2], const float (&x)[8], float (&acc)[4]) {
  const uint32_t g0[4] = {a[0].x, a[0].y, a[0].z, a[0].w}, g8[4] = {a[1].x, a[1].y, a[1].z, a[1].w};
  if constexpr (T == GgmlType::BF16) {
    // Word m holds elements 8q + 2m, 8q + 2m + 1: words 0, 1 are one mma's k 2q.. and 2q + 8.., words 2, 3 the next's.
#pragma unroll
    for (int i = 0; i < 2; ++i)
      mma_bf16(acc, g0[2 * i], g8[2 * i], g0[2 * i + 1], g8[2 * i + 1], bf16_pair(x[4 * i], x[4 * i + 1]),
               bf16_pair(x[4 * i + 2], x[4 * i + 3]));
  } else {
    // Mma i takes elements 8q + 2i (its k = q) and 8q + 2i + 1 (k = q + 4), twice: the
    // activations' TF32 rounding, then that of the remainder.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t a0 = f16_as_tf32(g0[i], 0), a1 = f16_as_tf32(g8[i], 0);
      const uint32_t a2 = f16_as_tf32(g0[i], 1), a3 = f16_as_tf32(g8[i], 1);
      const float x0 = x[2 * i], x1 = x[2 * i + 1];
      const uint32_t h0 = tf32_bits(x0), h1 = tf32_bits(x1);
      mma_tf32(acc, a0, a1, a2, a3, h0, h1);
      mma_tf32(acc, a0, a1, a2, a3, tf32_bits(x0 - __uint_as_float(h0)), tf32_bits(x1 - __uint_as_float(h1)));
    }
  }
}

// One block's products: 16 rows from r0 of W (rows past the matrix repeat its
// last row) times J tiles of 8 tokens, act_row(i) the activation row of token
// i (nullptr: none, multiplied as zeros). Each warp multiplies the chunks of
// its class with every tile; the class sums are added in class order.
// Returns true in the warps that hold a tile's result (warp j < J holds tile
// j, its sums in `out`: rows g, g + 8 times tokens 2q, 2q + 1). With
// await_inputs the first weights are loaded before the activations are ready
// (launch.cuh).
template <GgmlType T, int J, class ActRow>
__device__ __forceinline__ bool block_product(const uint8_t* W, size_t stride, int64_t rows, int64_t r0, int64_t k,
                                              ActRow act_row, bool await_inputs, float (&out)[4]) {
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), g = lane >> 2, q = lane & 3;
  const uint8_t* const row[2] = {W + size_t(min(r0 + g, rows - 1)) * stride, W + size_t(min(r0 + g + 8, rows - 1)) * stride};
  // The warp's 32-element steps: those of chunks warp, warp + 8, ..., in order.
  const int64_t steps = k / 32;
  auto step_at = [&](int64_t i) {  // the warp's i-th step
    return (warp + kClasses * (i / kChunkSteps)) * kChunkSteps + i % kChunkSteps;
  };
  auto load = [&](int64_t s, uint4 (&a)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) a[h] = load_weights<uint4>(row[h] + size_t(32 * s + 8 * q) * 2);
  };
  float acc[J][4];
#pragma unroll
  for (int j = 0; j < J; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
  uint4 cur[2], next[2];
  int64_t i = 0;
  if (step_at(0) < steps) load(step_at(0), cur);
  if (await_inputs) begin_kernel();
  const float* x[J];
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const float* r = act_row(8 * j + g);
    x[j] = r ? r + 8 * q : nullptr;
  }
  for (int64_t s = step_at(0); s < steps; s = step_at(i)) {
    const int64_t s_next = step_at(i + 1);
    if (s_next < steps) load(s_next, next);
#pragma unroll
    for (int j = 0; j < J; ++j) {
      float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      if (x[j]) {
        const float4 lo = *reinterpret_cast<const float4*>(x[j] + 32 * s), hi = *reinterpret_cast<const float4*>(x[j] + 32 * s + 4);
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
      }
      multiply_step<T>(cur, v, acc[j]);
    }
    cur[0] = next[0], cur[1] = next[1];
    ++i;
  }
  __shared__ MmaPartials<J> partial;
#pragma unroll
  for (int j = 0; j < J; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) partial[warp][j][e][lane] = acc[j][e];
  return add_class_sums<J>(partial, out);
}

// Block (x, y): 16 rows of the matrix fused_part(x) chooses (fused_launch.cuh:
// q/k/v or gate/up in one launch, or one matrix) times tokens [8J y, 8J y +
// 8J) of X; rows past a matrix and tokens past n are not written. With add,
// Y += the products. A matrix's sums are the same bits fused or alone.
template <GgmlType T, int J>
__global__ void __launch_bounds__(kWarps * 32, 2)
    float_mma_kernel(Fused f, int64_t k, const float* X, int64_t ldx, int64_t n, bool add) {
  const FusedPart part = fused_part(f, blockIdx.x);
  const int64_t r0 = int64_t(blockIdx.x - part.first) * kTileRows, t0 = int64_t(blockIdx.y) * 8 * J;
  auto act_row = [&](int i) -> const float* { return t0 + i < n ? X + (t0 + i) * ldx : nullptr; };
  float out[4];
  if (!block_product<T, J>(part.W, part.stride, part.rows, r0, k, act_row, true, out)) return;
  const int tile = int(threadIdx.x >> 5);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t r = out_row(r0, e), t = t0 + out_token(tile, e);
    if (r < part.rows && t < n) {
      float& y = part.Y[t * part.ldy + r];
      y = add ? y + out[e] : out[e];
    }
  }
}

// Expert products: block (x, y) multiplies 16 rows of one expert with the
// items of tile y. Per item (tiles == nullptr): tile y is item y alone, of
// expert ids[y]. Grouped: tiles holds (first, count, expert) triples into
// order (item ids), up to 8 items each. Item i reads activation row i / x_div
// and writes row i of Y. An item's sums are the same whichever way.
static_assert(kExpertTile <= 8, "a block of the expert products takes one tile of 8 items");
template <GgmlType T>
__global__ void __launch_bounds__(kWarps * 32, 2)
    float_mma_experts_kernel(const uint8_t* W, size_t stride, size_t expert_stride, int64_t rows, int64_t k,
                             const int32_t* ids, const int32_t* order, const int32_t* tiles, const float* X,
                             int64_t ldx, int x_div, float* Y, int64_t ldy, int64_t y0) {
  begin_kernel();  // the ids and tiles come from the kernel before
  const ExpertItems it = expert_items(y0 + blockIdx.y, ids, order, tiles);
  if (it.count == 0) return;
  const int64_t r0 = int64_t(blockIdx.x) * kTileRows;
  auto act_row = [&](int i) -> const float* { return i < it.count ? X + (it.item(i) / x_div) * ldx : nullptr; };
  float out[4];
  if (!block_product<T, 1>(W + size_t(it.expert) * expert_stride, stride, rows, r0, k, act_row, false, out)) return;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t r = out_row(r0, e);
    const int i = out_token(0, e);
    if (r < rows && i < it.count) Y[it.item(i) * ldy + r] = out[e];
  }
}

bool is_float16(const DeviceMatrix& W) { return W.type == GgmlType::BF16 || W.type == GgmlType::F16; }

// The weights the kernels read: BF16 or F16 rows of whole 32-element steps,
// each row (and each expert: 0 for a dense matrix) 16-byte aligned.
bool float_mma_layout(const DeviceMatrix& W) {
  return is_float16(W) && W.k % 32 == 0 && W.row_stride % 16 == 0 && W.expert_stride % 16 == 0;
}

void check_float_mma(const DeviceMatrix& W, const float* X, int64_t ldx) {
  if (!is_float16(W)) throw Error(std::string("CUDA backend: no tensor-core float product for format ") + type_name(W.type));
  if (!float_mma_layout(W) || !float_mma_reads(X, ldx))
    throw Error("CUDA backend: a tensor-core float product needs rows of whole 32-element steps, 16-byte aligned");
}

}  // namespace

bool float_mma_reads(const float* X, int64_t ldx) { return ldx % 4 == 0 && reinterpret_cast<uintptr_t>(X) % 16 == 0; }

bool float_mma_serves(const DeviceMatrix& W, int64_t n) { return float_mma_layout(W) && tensor_core_products(n); }

void gemv_float_mma(const DeviceMatrix& W, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy, cudaStream_t s,
                    bool add) {
  const MatrixOut out{&W, Y, ldy};
  gemv_float_mma_fused({&out, 1}, X, ldx, n, s, add);
}

void gemv_float_mma_fused(std::span<const MatrixOut> outs, const float* X, int64_t ldx, int64_t n, cudaStream_t s,
                          bool add) {
  if (n <= 0 || outs.empty()) return;
  const DeviceMatrix& W = *outs[0].W;
  for (const MatrixOut& o : outs) {
    check_float_mma(*o.W, X, ldx);
    if (o.W->type != W.type || o.W->k != W.k)
      throw Error("CUDA backend: float products fused in one launch must share format and row length");
  }
  unsigned blocks = 0;
  const Fused f = make_fused(outs, kTileRows, blocks);
  if (blocks == 0) return;
  auto go = [&]<GgmlType T, int J>() {
    launch(float_mma_kernel<T, J>, dim3(blocks, unsigned((n + 8 * J - 1) / (8 * J))), kWarps * 32, 0, s, f, W.k, X, ldx,
           n, add);
  };
  auto with_format = [&]<GgmlType T>() {
    if (n <= 8) go.template operator()<T, 1>();
    else if (n <= 16) go.template operator()<T, 2>();
    else if (n <= 32) go.template operator()<T, 4>();
    else go.template operator()<T, 8>();
  };
  if (W.type == GgmlType::BF16) with_format.template operator()<GgmlType::BF16>();
  else with_format.template operator()<GgmlType::F16>();
}

bool float_mma_experts_serve(const DeviceMatrix& W) { return float_mma_layout(W); }

void gemv_float_mma_experts(const DeviceMatrix& W, const int32_t* ids, const int32_t* order, const int32_t* tiles,
                            int64_t n_tiles, const float* X, int64_t ldx, int x_div, float* Y, int64_t ldy,
                            cudaStream_t s) {
  if (n_tiles <= 0 || W.rows <= 0) return;
  check_float_mma(W, X, ldx);
  const unsigned blocks = unsigned((W.rows + kTileRows - 1) / kTileRows);
  auto with_format = [&]<GgmlType T>() {
    by_grid_rows(n_tiles, [&](int64_t first, unsigned count) {
      launch(float_mma_experts_kernel<T>, dim3(blocks, count), kWarps * 32, 0, s, W.data, W.row_stride, W.expert_stride,
             W.rows, W.k, ids, order, tiles, X, ldx, x_div, Y, ldy, first);
    });
  };
  if (W.type == GgmlType::BF16) with_format.template operator()<GgmlType::BF16>();
  else with_format.template operator()<GgmlType::F16>();
}

}  // namespace ember::cuda
