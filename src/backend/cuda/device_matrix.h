// A weight matrix in device memory, in its file format (Q4_K with its scales
// re-encoded: device_layout.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ember::cuda {

struct DeviceMatrix {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;  // device pointer: rows rows of row_stride bytes
  int64_t k = 0;
  int64_t rows = 0;
  size_t row_stride = 0;
  size_t expert_stride = 0;       // experts of one layer: expert e starts at data + e * expert_stride
  bool present() const { return data != nullptr; }
};

// Codebooks of the IQ formats in device memory (uploaded once per backend).
struct IqTables {
  const uint64_t* iq2xxs = nullptr;
  const uint64_t* iq2xs = nullptr;
  const uint64_t* iq2s = nullptr;
  const uint32_t* iq3xxs = nullptr;
  const uint32_t* iq3s = nullptr;
  const uint64_t* iq1s = nullptr;
  const int8_t* iq4nl = nullptr;
  const uint8_t* ksigns = nullptr;  // 128 sign bytes
};

// True for every format whose blocks the GPU decodes (dequant.cuh).
bool device_can_decode(GgmlType t);

}  // namespace ember::cuda
