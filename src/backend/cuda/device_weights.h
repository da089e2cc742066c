// The model's weights in device memory: every matrix in its file format (Q4_K
// with its scales re-encoded for the GPU, device_layout.h), the
// experts of a layer packed one after another, norms and biases as floats,
// RoPE frequencies and the IQ codebooks. One allocation, filled once at load
// through pinned staging buffers with the copies overlapped.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_matrix.h"
#include "backend/cuda/iq_tables_device.h"
#include "model/model.h"

namespace ember::cuda {

struct DeviceLayer {
  DeviceMatrix wq, wk, wv, wo, ffn_gate, ffn_up, ffn_down, router, gate_exps, up_exps, down_exps;
  const float *attn_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr, *post_attn_norm = nullptr,
              *ffn_norm = nullptr, *post_ffn_norm = nullptr, *bq = nullptr, *bk = nullptr, *bv = nullptr;
  const double* inv_freq = nullptr;  // head_dim / 2 RoPE inverse frequencies
};

struct DeviceWeights {
  DeviceMatrix token_embd, output;
  const float* output_norm = nullptr;
  std::vector<DeviceLayer> layers;
  IqTables iq;  // views into iq_storage
  DeviceIqTables iq_storage;
  DeviceBuffer storage;
};

// Bytes the device copy of this model takes (what upload_weights allocates).
uint64_t device_weight_bytes(const Model& model);

// Copies the weights up; throws ember::Error naming a matrix whose format the GPU cannot decode.
DeviceWeights upload_weights(const Model& model, cudaStream_t stream);

}  // namespace ember::cuda
