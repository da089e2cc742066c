#include "backend/cuda/gemm.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequant.cuh"
#include "backend/cuda/launch.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusString(st));
}

// cuBLAS's own scratch, given to it up front so that no call allocates (and a
// call may be captured into a CUDA Graph).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// One thread per 32-element chunk: decoded as the products decode it, stored
// as bfloat16 in a dense [rows][k] matrix.
template <GgmlType T>
__global__ void decode_to_bf16(const uint8_t* W, size_t stride, int64_t rows, int64_t k, IqTables tab,
                               __nv_bfloat16* out) {
  begin_kernel();
  const int64_t chunks = k / 32;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * chunks) return;
  const int64_t r = i / chunks, c = i % chunks;
  float w[32];
  dequant_chunk<T>(W + size_t(r) * stride, c, chunks, tab, w);
  __align__(16) __nv_bfloat162 h[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) h[j] = __floats2bfloat162_rn(w[2 * j], w[2 * j + 1]);
  uint4* dst = reinterpret_cast<uint4*>(out + r * k + 32 * c);
  const uint4* src = reinterpret_cast<const uint4*>(h);
#pragma unroll
  for (int j = 0; j < 4; ++j) dst[j] = src[j];
}

__global__ void round_to_bf16(const float* X, int64_t ldx, int64_t n, int64_t k, __nv_bfloat16* out) {
  begin_kernel();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * k) return;
  const int64_t t = i / k, j = i % k;
  out[i] = __float2bfloat16_rn(X[t * ldx + j]);
}

}  // namespace

size_t TensorCoreGemm::bytes(int64_t max_weights, int64_t max_rows, int64_t max_k) {
  return (size_t(max_weights) + size_t(max_rows) * size_t(max_k)) * sizeof(__nv_bfloat16) + kWorkspaceBytes;
}

TensorCoreGemm::TensorCoreGemm(int64_t max_weights, int64_t max_rows, int64_t max_k, cudaStream_t s)
    : stream_(s), max_weights_(max_weights), max_rows_(max_rows), max_k_(max_k),
      weights_(size_t(max_weights) * sizeof(__nv_bfloat16)),
      acts_(size_t(max_rows) * size_t(max_k) * sizeof(__nv_bfloat16)),
      workspace_(kWorkspaceBytes) {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
  check_cublas(cublasSetStream(handle_, s), "cublasSetStream");
  check_cublas(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()), "cublasSetWorkspace");
}

TensorCoreGemm::~TensorCoreGemm() {
  if (handle_) cublasDestroy(handle_);
}

void TensorCoreGemm::run(const DeviceMatrix& W, const IqTables& tab, const float* X, int64_t ldx, int64_t n, float* Y,
                         int64_t ldy, bool add) {
  if (n <= 0) return;
  if (!fits(W, n)) throw Error("CUDA backend: a product larger than the tensor-core scratch");
  if (W.k % 32 != 0) throw Error("CUDA backend: rows of " + std::to_string(W.k) + " elements are not whole 32-element chunks");
  const __nv_bfloat16* wb = weights_.get<__nv_bfloat16>();
  auto* xb = acts_.get<__nv_bfloat16>();
  if (W.type == GgmlType::BF16 && W.row_stride == size_t(W.k) * sizeof(__nv_bfloat16)) {
    wb = reinterpret_cast<const __nv_bfloat16*>(W.data);  // already what cuBLAS reads: no copy
  } else {
    const int64_t chunks = W.rows * (W.k / 32);
    auto decode = [&]<GgmlType T>() {
      launch(decode_to_bf16<T>, unsigned((chunks + 127) / 128), 128, 0, stream_, W.data, W.row_stride, W.rows, W.k, tab,
             weights_.get<__nv_bfloat16>());
    };
    if (!dispatch_format(W.type, decode)) throw Error(std::string("CUDA backend: no decoder for format ") + type_name(W.type));
  }
  launch(round_to_bf16, unsigned((n * W.k + 255) / 256), 256, 0, stream_, X, ldx, n, W.k, xb);
  // Row-major W [rows][k] is column-major k x rows: Y^T (rows x n, ldy) = W^T-of-that times X^T.
  const float alpha = 1.f, beta = add ? 1.f : 0.f;
  check_cublas(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, int(W.rows), int(n), int(W.k), &alpha, wb, CUDA_R_16BF,
                            int(W.k), xb, CUDA_R_16BF, int(W.k), &beta, Y, CUDA_R_32F, int(ldy), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace ember::cuda
