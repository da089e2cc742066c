// Mixture of experts on the GPU: routing (scores, top k, weights) and the
// weighted sum of the chosen experts' outputs. The expert products themselves
// are gemv_experts (gemv.h): only the selected experts' weights are read.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_matrix.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/int8_acts.h"
#include "model/descriptor.h"

namespace ember::cuda {

// Router logits (n_tok rows of n_experts) -> ids and weights (n_tok rows of k), in the descriptor's routing order.
void route(const ModelDesc& d, const float* logits, int64_t n_tok, int32_t* ids, float* weights, cudaStream_t s);

// The router product and route() of a step of one token in one launch (the
// decode path): the logits are gemv's bits, the choices route()'s. For float
// routers (F32, F16, BF16: routers are kept unquantised) of rows of at most
// 8,192. `arrivals` is a zeroed counter the launch leaves zeroed, one per
// stream: the blocks count themselves done on it, and the last one routes.
bool routes_in_one_launch(const DeviceMatrix& router);
void route_one_token(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x, float* logits,
                     int32_t* ids, float* weights, unsigned* arrivals, cudaStream_t s);

// The RMSNorm before the router, done by the router's launch: y = rmsnorm(x) * w,
// the bits rmsnorm_rows writes, and with acts (its q set) their int8 rounding,
// the bits of rmsnorm_int8_acts (one row of the router's width). For routers
// that norms_in_router(): rows of whole 256-element blocks, at most 4,096.
struct RouterNorm {
  const float* x = nullptr;
  const float* w = nullptr;
  float eps = 0.f;
  float* y = nullptr;
  Int8Acts acts;
};
bool norms_in_router(const DeviceMatrix& router);
void norm_and_route_one_token(const ModelDesc& d, const RouterNorm& norm, const DeviceMatrix& router, const IqTables& tab,
                              float* logits, int32_t* ids, float* weights, unsigned* arrivals, cudaStream_t s);

// Items (token t's j-th choice is item t * k + j) sorted by expert: `order`
// holds the n_items item ids expert by expert (in no fixed order within an
// expert), `tiles` the triples (first index into order, count, expert) of up
// to tile_items items each, max_expert_tiles(n_items, n_experts, tile_items)
// of them, the unused ones with count 0. One block of threads; no host round trip.
int64_t max_expert_tiles(int64_t n_items, int n_experts, int tile_items = kExpertTile);
void group_by_expert(const int32_t* ids, int64_t n_items, int n_experts, int32_t* order, int32_t* tiles, cudaStream_t s,
                     int tile_items = kExpertTile);

// out row t = sum over j < k of weights[t * k + j] * expert_out row (t * k + j), rows of n_cols.
// With add, out row t += that sum instead (a residual add without a kernel of its own).
void combine_experts(const float* expert_out, const float* weights, int k, int64_t n_tok, int64_t n_cols, float* out,
                     cudaStream_t s, bool add = false);

// The second half of a one-token step's experts in one launch (moe_down.cu):
// choice j's h = act(gate row j) * up row j rounded to int8, expert ids[j]'s
// down product with it, and out = sum over j of weights[j] * that (out += with
// add), each value the bits of gated_int8_acts, gemv_int8_experts and
// combine_experts in turn. ids and weights are read before the wait for the
// kernel before (launch.cuh): they must have been written at least two kernels
// earlier (the router, then gate/up). moe_down_fits: an integer-product format,
// rows of whole 256-element blocks, 2 to 16 choices, and the CUDA-core products
// (not EMBER_CUDA_BATCH_INVARIANT=1, whose tensor-core products sum otherwise).
bool moe_down_fits(const DeviceMatrix& down, int k_used);
void moe_down_one_token(Activation act, const DeviceMatrix& down, const int32_t* ids, const float* weights,
                        const float* gate, const float* up, int k_used, float* out, bool add, cudaStream_t s);

}  // namespace ember::cuda
