// How a weight format is kept in device memory, where that differs from the
// file, always in the file's bytes (sizes and strides stay):
// - Q4_K and Q5_K: the 12 bytes of 6-bit scales and mins that both keep after
//   d and dmin are re-encoded in place so that the GPU reads a sub-block's
//   pair with one funnel shift (dequant.cuh, q4k_scale_bits); everything else
//   about the 144- or 176-byte block (d, dmin, codes, alignment) stays.
// - Q8_0, Q4_0 and IQ4_NL: each row's blocks in groups of eight, codes first,
//   then scales, so that codes and scales are aligned words
//   (block32_layout.cuh).
// Every kernel that reads these formats reads this layout, so every such
// matrix that goes to the device must pass through to_device_layout once.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ember::cuda {

// True where the device keeps format t in a layout of its own.
bool has_device_layout(GgmlType t);

// Rewrites bytes [data, data + bytes) of device memory, whole rows of k
// elements of format t as read from a file, into the device layout (nothing
// for other formats). Queued on s.
void to_device_layout(GgmlType t, uint8_t* data, size_t bytes, int64_t k, cudaStream_t s);

}  // namespace ember::cuda
