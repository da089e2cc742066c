#include "backend/cuda/device_layout.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "quant/blocks.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

// One thread per block: sub-block s's scale | min << 6 into bits [12s, 12s + 12).
__global__ void q4k_to_device_layout(uint8_t* data, size_t blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  uint8_t* scales = data + b * sizeof(quant::BlockQ4_K) + 4;
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

bool has_device_layout(GgmlType t) { return t == GgmlType::Q4_K; }

void to_device_layout(GgmlType t, uint8_t* data, size_t bytes, cudaStream_t s) {
  if (!has_device_layout(t) || bytes == 0) return;
  constexpr size_t kBlock = sizeof(quant::BlockQ4_K);
  if (bytes % kBlock != 0)
    throw Error("CUDA backend: " + std::to_string(bytes) + " bytes are not whole Q4_K blocks");
  const size_t blocks = bytes / kBlock;
  constexpr unsigned kThreads = 256;
  q4k_to_device_layout<<<unsigned((blocks + kThreads - 1) / kThreads), kThreads, 0, s>>>(data, blocks);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ember::cuda
