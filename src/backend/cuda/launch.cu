#include <cstdlib>
#include <cstring>

#include "backend/cuda/launch.cuh"

namespace ember::cuda {

bool overlapped_launches() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_CUDA_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace ember::cuda
