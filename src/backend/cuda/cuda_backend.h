// The CUDA backend: the whole forward step on one GPU. Weights go up once at
// load in their file formats; KV blocks live in device memory in the layout
// the engine's block tables address; only the wanted logit rows come back.
//
// This header has no CUDA types, so the backend factory (built by the host
// compiler) can include it.
#pragma once
#include <cstdint>
#include <memory>

#include "engine/backend.h"

namespace ember {

class Model;

// A CUDA device is present and usable (the driver answers and counts at least one).
bool cuda_device_available();

// Device memory left for KV blocks once this model's weights and a step's
// scratch for these limits are in place (most of what is free now).
uint64_t cuda_kv_budget(const Model& model, const StepLimits& limits);

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const StepLimits& limits, const KvConfig& kv);

}  // namespace ember
