// Products of quantised weights with a few activation rows (decode and small
// batches): each weight block is decoded once per step inside the inner loop,
// whatever the number of tokens, and never written back as floats.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "backend/cuda/device_matrix.h"
#include "backend/cuda/int8_acts.h"

namespace ember::cuda {

// Y[t * ldy + r] = dot(W row r, X row t) for t < n, r < W.rows. X: n rows of W.k floats, ldx apart.
// Every token's sums run in the same order whatever n is, so a token's result
// does not depend on which other tokens share the step.
// With acts (X rounded by quantize_int8_acts) in the style of the format's
// integer product, for a matrix that product serves (int8_product_serves), it
// runs instead of the float one; otherwise the float one reads X. With add, Y += the
// products instead (a residual add without a kernel of its own).
void gemv(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
          cudaStream_t s, const Int8Acts* acts = nullptr, bool add = false);

// The float products alone (decoded weights times float activations on the
// CUDA cores), at any n: what gemv runs where neither an integer nor a
// tensor-core float product takes W. The MoE router's products take them at
// every size, so that a token's router logits (the one-token router's bits,
// moe.h) and so its experts do not depend on its batch.
void gemv_float(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y,
                int64_t ldy, cudaStream_t s, bool add = false);

// Mixture of experts: item i multiplies expert ids[i] (W.data + ids[i] * W.expert_stride)
// with X row i / x_div, into Y row i. acts as for gemv. ids_early: the ids were
// written at least two kernels before this one (its predecessor began only
// after their writer finished, launch.cuh), so the integer products read them
// and load their first weights before waiting for the activations.
void gemv_experts(const DeviceMatrix& W, const IqTables& tab, const int32_t* ids, const float* X, int64_t ldx,
                  int x_div, int64_t n_items, float* Y, int64_t ldy, cudaStream_t s, const Int8Acts* acts = nullptr,
                  bool ids_early = false);

// The integer products (gemv_int8.cu), for the formats whose CPU product rounds
// activations to int8: per 256 elements (Q4_K, Q6_K; Int8Style::K) or per 32
// (Q8_0; Int8Style::Q8_0): the weight codes meet the activation codes of
// quantize_int8_acts (in the format's style, int8_style_of) in 4-way integer
// dot products. int8_product_serves: whether the integer product takes W
// (rows of whole 256-element blocks), at any number of tokens.
bool has_int8_product(GgmlType t);
Int8Style int8_style_of(GgmlType t);
bool int8_product_serves(const DeviceMatrix& W);
void gemv_int8(const DeviceMatrix& W, const Int8Acts& a, float* Y, int64_t ldy, cudaStream_t s, bool add = false);
// Several matrices of one format reading the same activations (q/k/v,
// gate/up) in one launch: each output gets the bits gemv_int8 gives it alone.
// A MatrixOut is one matrix of such a launch and where its products go.
constexpr int kMaxFused = 3;
struct MatrixOut {
  const DeviceMatrix* W;
  float* Y;
  int64_t ldy;
};
void gemv_int8_fused(std::span<const MatrixOut> outs, const Int8Acts& a, cudaStream_t s, bool add = false);
void gemv_int8_experts(const DeviceMatrix& W, const int32_t* ids, const Int8Acts& a, int x_div, int64_t n_items,
                       float* Y, int64_t ldy, cudaStream_t s, bool ids_early = false);
// Two expert tensors of one format and shape reading the same items (gate and
// up) in one launch, each output the bits of its own launch (also one tensor).
void gemv_int8_experts(std::span<const MatrixOut> outs, const int32_t* ids, const Int8Acts& a, int x_div, int64_t n_items,
                       cudaStream_t s, bool ids_early = false);

// The same products with the items grouped by expert (moe.h group_by_expert):
// each block multiplies one tile of up to tile_items items of one expert
// (kExpertTile, or kLargeExpertTile where experts have many items: prefill), so
// the expert's weights are read once per tile instead of once per item, on the
// tensor cores (below); with EMBER_CUDA_BATCH_INVARIANT=1 every item gets the
// bits gemv_int8_experts gives it, whatever the tiles. `tiles` holds max_tiles
// (first, count, expert) triples into `order` (item ids); tiles of count 0 are skipped.
constexpr int kExpertTile = 8;
constexpr int kLargeExpertTile = 64;
void gemv_int8_experts_grouped(const DeviceMatrix& W, const int32_t* order, const int32_t* tiles, int64_t max_tiles,
                               const Int8Acts& a, int x_div, float* Y, int64_t ldy, cudaStream_t s,
                               int tile_items = kExpertTile);
void gemv_int8_experts_grouped(std::span<const MatrixOut> outs, const int32_t* order, const int32_t* tiles,
                               int64_t max_tiles, const Int8Acts& a, int x_div, cudaStream_t s, int tile_items = kExpertTile);

// The same integer products with their integer sums made on the tensor cores
// (gemv_int8_mma.cu), for every format with one: every output is summed in one order
// whatever the number of tokens, so a token's result has the same bits in any
// batch. tensor_core_products(n) says which kernel the products above take
// for n tokens (ungrouped experts: n = 1, each item alone): the tensor cores
// from two tokens on, and grouped experts always; for one token the CUDA
// cores (gemv_int8.cu), about 20% faster there but summing in another order,
// so a sequence alone and in a batch differ in their last bits.
// EMBER_CUDA_BATCH_INVARIANT=1 takes the tensor cores for every n (a
// sequence's logits then never depend on its batch).
bool tensor_core_products(int64_t n);
void gemv_int8_mma_fused(std::span<const MatrixOut> outs, const Int8Acts& a, cudaStream_t s, bool add = false);
// Expert products: per item (ids, as gemv_int8_experts) or grouped (order,
// tiles and max_tiles, as gemv_int8_experts_grouped, tiles of up to
// tile_items items); n_tiles is the number of items or of tiles.
void gemv_int8_mma_experts(std::span<const MatrixOut> outs, const int32_t* ids, const int32_t* order, const int32_t* tiles,
                           int64_t n_tiles, const Int8Acts& a, int x_div, cudaStream_t s, int tile_items = kExpertTile);

// Products of BF16 and F16 weights on the tensor cores (gemv_float_mma.cu),
// with the CPU's arithmetic (BF16: activations rounded to bfloat16; F16: float
// activations, kept to about 22 bits), each output summed in one order
// whatever the number of tokens. float_mma_serves: whether gemv takes them
// for W and n tokens (tensor_core_products(n), rows of whole 32-element steps);
// float_mma_reads: whether they can read activations X with rows ldx apart
// (rows of whole 16-byte units, 16-byte aligned).
bool float_mma_serves(const DeviceMatrix& W, int64_t n);
bool float_mma_reads(const float* X, int64_t ldx);
void gemv_float_mma(const DeviceMatrix& W, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy, cudaStream_t s,
                    bool add = false);
// Up to kMaxFused BF16 or F16 matrices of one format and row length reading
// the same activations in one launch: each output the bits of its own launch.
void gemv_float_mma_fused(std::span<const MatrixOut> outs, const float* X, int64_t ldx, int64_t n, cudaStream_t s,
                          bool add = false);
// Expert products of BF16 and F16 weights on the tensor cores, as
// gemv_int8_mma_experts: per item (ids) or grouped by expert (order, tiles
// and n_tiles of moe.h group_by_expert: each expert's rows read once per tile
// of up to kExpertTile items); an item's bits are the same either way.
// gemv_experts takes the per-item form with EMBER_CUDA_BATCH_INVARIANT=1.
bool float_mma_experts_serve(const DeviceMatrix& W);
void gemv_float_mma_experts(const DeviceMatrix& W, const int32_t* ids, const int32_t* order, const int32_t* tiles,
                            int64_t n_tiles, const float* X, int64_t ldx, int x_div, float* Y, int64_t ldy,
                            cudaStream_t s);

// Row ids[t] of W, decoded, times scale, into Y row t (n rows of W.k floats): the embedding lookup.
// ids[t] < 0 stands for picked[-1 - ids[t]] (a token the step before picked on
// the device); a pick outside W's rows (kPickNonFinite, ...) reads row 0.
void gather_rows(const DeviceMatrix& W, const IqTables& tab, const int32_t* ids, const int32_t* picked, int64_t n,
                 float scale, float* Y, cudaStream_t s);

}  // namespace ember::cuda
