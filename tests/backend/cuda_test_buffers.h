// Host vectors to and from device buffers, for the CUDA tests.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_layout.h"
#include "quant/types.h"

namespace ember::cuda::test {

using cuda::upload;  // device_buffer.h

// Weights of format t as read from a file, rows of k elements, in the layout
// the device keeps them (device_layout.h), as the backend's weight upload
// leaves them.
inline DeviceBuffer upload_in_device_layout(GgmlType t, const std::vector<uint8_t>& bytes, int64_t k) {
  DeviceBuffer b = upload(bytes);
  to_device_layout(t, b.get<uint8_t>(), bytes.size(), k, nullptr);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  return b;
}

// A counter of four zeroed bytes (the kernels that count their finished blocks on one).
inline DeviceBuffer zeroed_counter() {
  DeviceBuffer b(4);
  EMBER_CUDA_CHECK(cudaMemset(b.get(), 0, 4));
  return b;
}

template <class T>
std::vector<T> download(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  EMBER_CUDA_CHECK(cudaMemcpy(v.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace ember::cuda::test
