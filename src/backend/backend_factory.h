// Picks and builds a backend by name: the one place that knows the concrete backends.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend.h"

namespace ember {

struct BackendOptions {
  std::string kind = "auto";  // "cpu", "cuda", or "auto": CUDA where this build has it and a device is present
  StepLimits limits;
  KvType kv_type = KvType::F16;
  int block_size = 16;
  uint64_t kv_mem = 0;        // bytes for KV blocks; 0: a quarter of the memory available now
  int n_threads = 0;          // CPU threads (0: all hardware threads)
};

// The backend, its KV block storage sized from kv_mem (never less than one full context).
std::unique_ptr<Backend> make_backend(const Model& model, const BackendOptions& opt);

// The backend with exactly this KV pool (tests, benchmarks).
std::unique_ptr<Backend> make_backend(const Model& model, const std::string& kind, const StepLimits& limits,
                                      const KvConfig& kv, int n_threads = 0);

// "cpu" or "cuda" for a kind of "cpu", "cuda" or "auto"; throws for "cuda" in a build without it.
std::string resolve_backend_kind(const std::string& kind);
// The tokens of an engine step that holds only prompts (EngineOptions::prefill_step_tokens)
// by default on a backend kind: 2,048 on CUDA, where a MoE prompt of 8,192 tokens prefills
// 1.6x faster than in steps of 256 (bench/RESULTS.md, session 27); 0 (the step's own) on the
// CPU, where longer steps were not measured to gain.
int default_prefill_step_tokens(const std::string& resolved_kind);
bool cuda_backend_built();

// Bytes of KV blocks that hold `positions` positions (whole blocks) in the options' block size and type.
uint64_t kv_bytes_for(const ModelDesc& d, const BackendOptions& opt, int64_t positions);

// Blocks that fit in `bytes` (at least enough for one sequence of max_context positions).
int kv_blocks_for(const ModelDesc& d, const BackendOptions& opt, uint64_t bytes);

}  // namespace ember
