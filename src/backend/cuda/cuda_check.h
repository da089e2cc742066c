// Every CUDA runtime call of the backend goes through EMBER_CUDA_CHECK (and
// every kernel launch through launch() in launch.cuh, which uses it): a failure
// becomes an ember::Error naming the call, never a silent bad result.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "util/error.h"

namespace ember::cuda {

[[noreturn]] inline void fail(cudaError_t e, const char* what, const char* file, int line) {
  throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorString(e) + " (" + file + ":" +
              std::to_string(line) + ")");
}

}  // namespace ember::cuda

#define EMBER_CUDA_CHECK(call)                                                   \
  do {                                                                           \
    const cudaError_t ember_cuda_err_ = (call);                                  \
    if (ember_cuda_err_ != cudaSuccess) ::ember::cuda::fail(ember_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
