// Several matrices multiplied in one launch, shared by the integer products on
// the CUDA cores (gemv_int8.cu) and on the tensor cores (gemv_int8_mma.cu) and
// by the BF16/F16 tensor-core products (gemv_float_mma.cu). Fused: up to
// kMaxFused matrices of one format reading the same activations (q/k/v,
// gate/up); blocks [end[m - 1], end[m]) of the grid's x serve matrix m.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "backend/cuda/gemv.h"
#include "util/error.h"

namespace ember::cuda {

struct Fused {
  const uint8_t* W[kMaxFused];
  size_t stride[kMaxFused];
  int64_t rows[kMaxFused];
  float* Y[kMaxFused];
  int64_t ldy[kMaxFused];
  unsigned end[kMaxFused];
  int n;
};

// The matrix a block serves, and the first block of that matrix.
struct FusedPart {
  const uint8_t* W;
  size_t stride;
  int64_t rows;
  float* Y;
  int64_t ldy;
  unsigned first;
};

__device__ __forceinline__ FusedPart fused_part(const Fused& f, unsigned bx) {
  const int m = f.n > 1 && bx >= f.end[0] ? (f.n > 2 && bx >= f.end[1] ? 2 : 1) : 0;
  // Selects rather than an indexed load, which would put the parameters in local memory.
  return {m == 0 ? f.W[0] : m == 1 ? f.W[1] : f.W[2],
          m == 0 ? f.stride[0] : m == 1 ? f.stride[1] : f.stride[2],
          m == 0 ? f.rows[0] : m == 1 ? f.rows[1] : f.rows[2],
          m == 0 ? f.Y[0] : m == 1 ? f.Y[1] : f.Y[2],
          m == 0 ? f.ldy[0] : m == 1 ? f.ldy[1] : f.ldy[2],
          m == 0 ? 0u : m == 1 ? f.end[0] : f.end[1]};
}

// Int8 activations must have as many elements as the rows they meet, rounded
// in the style of their format (int8_style_of).
inline void check_int8_acts(const DeviceMatrix& W, const Int8Acts& a) {
  if (a.k != W.k)
    throw Error("CUDA backend: int8 activations of " + std::to_string(a.k) + " elements for rows of " + std::to_string(W.k));
  if (a.style != int8_style_of(W.type))
    throw Error(std::string("CUDA backend: int8 activations of another rounding for format ") + type_name(W.type));
}

// The launch description of outs, rows_per_block rows of each matrix per block.
inline Fused make_fused(std::span<const MatrixOut> outs, int64_t rows_per_block, unsigned& blocks) {
  if (outs.size() > size_t(kMaxFused))
    throw Error("CUDA backend: more products in one launch than " + std::to_string(kMaxFused));
  Fused f{};
  f.n = int(outs.size());
  blocks = 0;
  for (int i = 0; i < f.n; ++i) {
    const DeviceMatrix& W = *outs[size_t(i)].W;
    f.W[i] = W.data;
    f.stride[i] = W.row_stride;
    f.rows[i] = W.rows;
    f.Y[i] = outs[size_t(i)].Y;
    f.ldy[i] = outs[size_t(i)].ldy;
    f.end[i] = blocks += unsigned((W.rows + rows_per_block - 1) / rows_per_block);
  }
  return f;
}

// One or two expert tensors of the same shape (gate and up) whose items read
// the same activations, in one launch: blocks [0, blocks0) of the grid's x
// serve W[0], the rest W[1], each exactly as in a launch of its own.
struct ExpertPair {
  const uint8_t* W[2];
  float* Y[2];
  unsigned blocks0;
};

// The pair for one launch: the tensors must match in format and every
// dimension, and their outputs in ldy.
inline ExpertPair expert_pair(std::span<const MatrixOut> outs, const Int8Acts& a, int64_t rows_per_block) {
  if (outs.empty() || outs.size() > 2) throw Error("CUDA backend: one or two expert tensors per launch");
  const MatrixOut& o0 = outs[0];
  const MatrixOut& o1 = outs.back();
  const DeviceMatrix &W0 = *o0.W, &W1 = *o1.W;
  if (W1.type != W0.type || W1.rows != W0.rows || W1.k != W0.k || W1.row_stride != W0.row_stride ||
      W1.expert_stride != W0.expert_stride || o1.ldy != o0.ldy)
    throw Error("CUDA backend: expert tensors paired in one launch must share format and shape");
  check_int8_acts(W0, a);
  return ExpertPair{{W0.data, W1.data}, {o0.Y, o1.Y}, unsigned((W0.rows + rows_per_block - 1) / rows_per_block)};
}

}  // namespace ember::cuda
