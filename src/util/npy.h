// NumPy .npy files (format version 1.0), float32 2-D arrays: what `ember logits`
// writes and what the reference logits of the test fixtures are stored as.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // C order
};

void write_npy_f32(const std::string& path, const float* data, int64_t rows, int64_t cols);  // throws on I/O error
NpyArray read_npy_f32(const std::string& path);  // little-endian '<f4', C order; throws otherwise

}  // namespace ember
