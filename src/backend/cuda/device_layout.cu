#include "backend/cuda/device_layout.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "quant/blocks.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

// ggml's packing of a Q4_K block's scales and mins (as in quant/dequantize.cpp):
// sub-blocks 0..3 in the low six bits of bytes 0..3 (scales) and 4..7 (mins);
// 4..7 in the nibbles of bytes 8..11 with their top two bits in the top bits
// of bytes 0..7.
__device__ void file_scale_min(const uint8_t* q, int s, uint32_t& sc, uint32_t& m) {
  if (s < 4) {
    sc = q[s] & 63;
    m = q[s + 4] & 63;
  } else {
    sc = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
    m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

// One thread per block: sub-block s's scale | min << 6 into bits [12s, 12s + 12).
__global__ void q4k_to_device_layout(uint8_t* data, size_t blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  uint8_t* scales = data + b * sizeof(quant::BlockQ4_K) + 4;
  uint8_t q[12];
  for (int i = 0; i < 12; ++i) q[i] = scales[i];
  uint32_t word[3] = {0, 0, 0};
  for (int s = 0; s < 8; ++s) {
    uint32_t sc, m;
    file_scale_min(q, s, sc, m);
    const uint32_t v = sc | m << 6;
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
