#include "backend/cuda/device_layout.h"

#include <cstddef>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "quant/blocks.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

// One thread per block of block_bytes: sub-block s's scale | min << 6 into bits [12s, 12s + 12).
__global__ void k_scales_to_device_layout(uint8_t* data, size_t blocks, size_t block_bytes) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  uint8_t* scales = data + b * block_bytes + 4;
  uint8_t q[12];
  for (int i = 0; i < 12; ++i) q[i] = scales[i];
  uint32_t word[3] = {0, 0, 0};
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    quant::k4_scale_min(s, q, sc, m);  // ggml's packing, as the CPU decodes it
    const uint32_t v = uint32_t(sc) | uint32_t(m) << 6;
    const int bit = 12 * s;
    word[bit / 32] |= v << (bit % 32);
    if (bit % 32 > 20) word[bit / 32 + 1] |= v >> (32 - bit % 32);
  }
  for (int i = 0; i < 12; ++i) scales[i] = uint8_t(word[i / 4] >> (8 * (i % 4)));
}

}  // namespace

// Q4_K and Q5_K share their first 16 bytes: d, dmin and the 12 packed bytes.
static_assert(offsetof(quant::BlockQ4_K, scales) == 4 && offsetof(quant::BlockQ5_K, scales) == 4);

bool has_device_layout(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K; }

void to_device_layout(GgmlType t, uint8_t* data, size_t bytes, cudaStream_t s) {
  if (!has_device_layout(t) || bytes == 0) return;
  const size_t block = t == GgmlType::Q4_K ? sizeof(quant::BlockQ4_K) : sizeof(quant::BlockQ5_K);
  if (bytes % block != 0)
    throw Error("CUDA backend: " + std::to_string(bytes) + " bytes are not whole " + type_name(t) + " blocks");
  const size_t blocks = bytes / block;
  constexpr unsigned kThreads = 256;
  k_scales_to_device_layout<<<unsigned((blocks + kThreads - 1) / kThreads), kThreads, 0, s>>>(data, blocks, block);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ember::cuda
