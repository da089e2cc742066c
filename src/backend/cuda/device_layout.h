// How a weight format is kept in device memory, where that differs from the
// file. Only Q4_K and Q5_K differ: the 12 bytes of 6-bit scales and mins
// that both keep after d and dmin are re-encoded in place so that the GPU
// reads a sub-block's pair with one funnel shift (dequant.cuh,
// q4k_scale_bits); everything else about the 144- or 176-byte block (d, dmin,
// codes, size, alignment) stays as in the file. Every kernel that reads Q4_K
// or Q5_K reads this layout, so every such matrix that goes to the device
// must pass through to_device_layout once.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ember::cuda {

// True where the device keeps format t in a layout of its own.
bool has_device_layout(GgmlType t);

// Rewrites bytes [data, data + bytes) of device memory, whole blocks of format
// t as read from a file, into the device layout (nothing for other formats).
// Queued on s.
void to_device_layout(GgmlType t, uint8_t* data, size_t bytes, cudaStream_t s);

}  // namespace ember::cuda
