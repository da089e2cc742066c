// Products with many activation rows (prefill chunks, large batches) on the
// tensor cores. The weight matrix is decoded to bfloat16 once per product into
// a scratch buffer (BF16 weights are read where they lie), the activations are
// rounded to bfloat16, and cuBLAS multiplies the two with float32 sums.
//
// Why this shape: the decode products (gemv.h) read each weight once per step
// but spend CUDA-core instructions on every token, so past a few tens of tokens
// they are arithmetic-bound far below the tensor cores' rate. Decoding to
// bfloat16 first costs one read of the file format plus a write and a read of
// 2 bytes per weight: for a chunk of hundreds of tokens that is small beside
// the multiply itself.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_matrix.h"

struct cublasContext;

namespace ember::cuda {

class TensorCoreGemm {
 public:
  // Room for matrices of up to max_weights elements and max_rows activation
  // rows of up to max_k elements. Allocates everything it will use here.
  TensorCoreGemm(int64_t max_weights, int64_t max_rows, int64_t max_k, cudaStream_t s);
  // The device memory such a product allocates.
  static size_t bytes(int64_t max_weights, int64_t max_rows, int64_t max_k);
  ~TensorCoreGemm();
  TensorCoreGemm(const TensorCoreGemm&) = delete;
  TensorCoreGemm& operator=(const TensorCoreGemm&) = delete;

  bool fits(const DeviceMatrix& W, int64_t n) const {
    return W.rows * W.k <= max_weights_ && n <= max_rows_ && W.k <= max_k_;
  }
  // Y[t * ldy + r] = dot(W row r, X row t) for t < n (or += with add); X rows ldx apart.
  void run(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
           bool add);

 private:
  cublasContext* handle_ = nullptr;
  cudaStream_t stream_;
  int64_t max_weights_, max_rows_, max_k_;
  DeviceBuffer weights_, acts_, workspace_;
};

}  // namespace ember::cuda
