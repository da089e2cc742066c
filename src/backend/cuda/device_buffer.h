// Memory owned by one object and freed when it goes; sized once at load.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_check.h"

namespace ember::cuda {

inline cudaError_t device_alloc(void** p, size_t n) { return cudaMalloc(p, n); }
inline cudaError_t pinned_alloc(void** p, size_t n) { return cudaMallocHost(p, n); }

template <cudaError_t (*Alloc)(void**, size_t), cudaError_t (*Free)(void*)>
class OwnedMemory {
 public:
  OwnedMemory() = default;
  explicit OwnedMemory(size_t bytes) : bytes_(bytes) {
    if (bytes) EMBER_CUDA_CHECK(Alloc(&p_, bytes));
  }
  ~OwnedMemory() {
    if (p_) Free(p_);
  }
  OwnedMemory(OwnedMemory&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedMemory& operator=(OwnedMemory&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  template <class T = void>
  T* get() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory.
using DeviceBuffer = OwnedMemory<device_alloc, cudaFree>;
// Page-locked host memory: the staging area for uploads and the landing place of logits.
using PinnedBuffer = OwnedMemory<pinned_alloc, cudaFreeHost>;

// A device buffer holding v (one element's room when v is empty, so the
// pointer is valid): tests' and benchmarks' inputs.
template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b((v.empty() ? 1 : v.size()) * sizeof(T));
  if (!v.empty()) EMBER_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

}  // namespace ember::cuda
