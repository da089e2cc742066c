// Mixture of experts on the GPU: routing (scores, top k, weights) and the
// weighted sum of the chosen experts' outputs. The expert products themselves
// are gemv_experts (gemv.h): only the selected experts' weights are read.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_matrix.h"
#include "model/descriptor.h"

namespace ember::cuda {

// Router logits (n_tok rows of n_experts) -> ids and weights (n_tok rows of k), in the descriptor's routing order.
void route(const ModelDesc& d, const float* logits, int64_t n_tok, int32_t* ids, float* weights, cudaStream_t s);

// The router product and route() of a step of one token in one launch (the
// decode path): the logits are gemv's bits, the choices route()'s. For float
// routers (F32, F16, BF16: routers are kept unquantised). `done` is one int,
// zero before the launch and left zero after it.
bool routes_in_one_launch(const DeviceMatrix& router);
void route_one_token(const ModelDesc& d, const DeviceMatrix& router, const IqTables& tab, const float* x, float* logits,
                     int32_t* ids, float* weights, int32_t* done, cudaStream_t s);

// Items (token t's j-th choice is item t * k + j) sorted by expert: `order`
// holds the n_items item ids expert by expert (in no fixed order within an
// expert), `tiles` the triples (first index into order, count, expert) of up
// to kExpertTile items each, max_expert_tiles(n_items, n_experts) of them, the
// unused ones with count 0. One block of threads; no host round trip.
int64_t max_expert_tiles(int64_t n_items, int n_experts);
void group_by_expert(const int32_t* ids, int64_t n_items, int n_experts, int32_t* order, int32_t* tiles, cudaStream_t s);

// out row t = sum over j < k of weights[t * k + j] * expert_out row (t * k + j), rows of n_cols.
// With add, out row t += that sum instead (a residual add without a kernel of its own).
void combine_experts(const float* expert_out, const float* weights, int k, int64_t n_tok, int64_t n_cols, float* out,
                     cudaStream_t s, bool add = false);

}  // namespace ember::cuda
