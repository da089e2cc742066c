// Q8_0, Q4_0 and IQ4_NL as the GPU keeps them (device_layout.h). In a file
// each 32-element block is a half-precision scale and then its code bytes (32
// for Q8_0, 16 for the nibble formats): 34 or 18 bytes, so a block's codes are
// only 2-byte aligned and every 32-bit word of them is two 16-bit loads. On
// the device each row's blocks are taken in groups of eight, and a group keeps
// its eight blocks' code bytes first, block after block, then their eight
// scales: in the same bytes (a group is 272 or 144, both multiples of 16), so
// in rows of whole groups (lengths a multiple of 256, every row the integer
// products take) a block's codes are 16-byte aligned and a group's scales one
// 16-byte word. The last group of a row whose length is not a multiple of 256
// holds its n < 8 blocks the same way (n blocks' codes, then n scales); such
// rows start only 2-byte aligned, and their readers load accordingly. Rows
// keep their file size, so row strides and expert strides do not change.
#pragma once
#include <cstdint>

#include "quant/types.h"

namespace ember::cuda {

template <GgmlType T>
struct Block32Layout {
  static_assert(T == GgmlType::Q8_0 || T == GgmlType::Q4_0 || T == GgmlType::IQ4_NL);
  static constexpr int kCodeBytes = T == GgmlType::Q8_0 ? 32 : 16;
  static constexpr int kGroupBytes = 8 * (kCodeBytes + 2);

  // The code bytes of block b of a row.
  __host__ __device__ static constexpr size_t codes_at(int64_t b) {
    return size_t(b >> 3) * kGroupBytes + size_t(b & 7) * kCodeBytes;
  }
  // The scale of block b of a row of nb blocks (its group may be the row's short last one).
  __host__ __device__ static constexpr size_t scale_at(int64_t b, int64_t nb) {
    const int64_t g = b >> 3, n = nb - 8 * g < 8 ? nb - 8 * g : 8;
    return size_t(g) * kGroupBytes + size_t(n) * kCodeBytes + 2 * size_t(b & 7);
  }
  // Where a whole group g holds its eight scales (rows of whole 256-element super-blocks).
  __host__ __device__ static constexpr size_t group_scales_at(int64_t g) { return size_t(g) * kGroupBytes + 8 * kCodeBytes; }
};

}  // namespace ember::cuda
