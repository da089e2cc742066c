#include "backend/cuda/device_layout.h"

#include "backend/cuda/block32_layout.cuh"

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

// One thread per group of eight blocks (fewer at a row's end) of rows of nb
// blocks: the group's blocks as the file keeps them (scale, codes) become
// their codes, then their scales (block32_layout.cuh).
template <GgmlType T>
__global__ void k_block32_to_device_layout(uint8_t* data, int64_t rows, int64_t nb) {
  using L = Block32Layout<T>;
  constexpr int kBlock = L::kCodeBytes + 2;
  const int64_t groups = (nb + 7) / 8;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * groups) return;
  const int64_t r = i / groups, g = i % groups;
  const int n = int(nb - 8 * g < 8 ? nb - 8 * g : 8);
  uint8_t* row = data + size_t(r) * size_t(nb) * kBlock;
  uint8_t* group = row + size_t(g) * L::kGroupBytes;
  uint8_t file[L::kGroupBytes];
  for (int j = 0; j < n * kBlock; ++j) file[j] = group[j];
  for (int b = 0; b < n; ++b) {
    const int64_t blk = 8 * g + b;
    const uint8_t* in = file + b * kBlock;
    for (int j = 0; j < L::kCodeBytes; ++j) row[L::codes_at(blk) + j] = in[2 + j];
    row[L::scale_at(blk, nb)] = in[0];
    row[L::scale_at(blk, nb) + 1] = in[1];
  }
}

bool is_block32(GgmlType t) { return t == GgmlType::Q8_0 || t == GgmlType::Q4_0 || t == GgmlType::IQ4_NL; }

}  // namespace

// Q4_K and Q5_K share their first 16 bytes: d, dmin and the 12 packed bytes.
static_assert(offsetof(quant::BlockQ4_K, scales) == 4 && offsetof(quant::BlockQ5_K, scales) == 4);

static_assert(sizeof(quant::BlockQ8_0) == 34 && sizeof(quant::BlockQ4_0) == 18 && sizeof(quant::BlockIQ4_NL) == 18);
static_assert(offsetof(quant::BlockQ8_0, qs) == 2 && offsetof(quant::BlockQ4_0, qs) == 2 && offsetof(quant::BlockIQ4_NL, qs) == 2);

bool has_device_layout(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K || is_block32(t); }

void to_device_layout(GgmlType t, uint8_t* data, size_t bytes, int64_t k, cudaStream_t s) {
  if (!has_device_layout(t) || bytes == 0) return;
  constexpr unsigned kThreads = 256;
  if (is_block32(t)) {
    const size_t row = row_bytes(t, k);
    if (k <= 0 || k % 32 != 0 || bytes % row != 0)
      throw Error("CUDA backend: " + std::to_string(bytes) + " bytes are not whole rows of " + std::to_string(k) + " " +
                  type_name(t) + " elements");
    const int64_t rows = int64_t(bytes / row), nb = k / 32, threads = rows * ((nb + 7) / 8);
    const unsigned grid = unsigned((threads + kThreads - 1) / kThreads);
    if (t == GgmlType::Q8_0) k_block32_to_device_layout<GgmlType::Q8_0><<<grid, kThreads, 0, s>>>(data, rows, nb);
    else if (t == GgmlType::Q4_0) k_block32_to_device_layout<GgmlType::Q4_0><<<grid, kThreads, 0, s>>>(data, rows, nb);
    else k_block32_to_device_layout<GgmlType::IQ4_NL><<<grid, kThreads, 0, s>>>(data, rows, nb);
    EMBER_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const size_t block = t == GgmlType::Q4_K ? sizeof(quant::BlockQ4_K) : sizeof(quant::BlockQ5_K);
  if (bytes % block != 0)
    throw Error("CUDA backend: " + std::to_string(bytes) + " bytes are not whole " + type_name(t) + " blocks");
  const size_t blocks = bytes / block;
  k_scales_to_device_layout<<<unsigned((blocks + kThreads - 1) / kThreads), kThreads, 0, s>>>(data, blocks, block);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ember::cuda
