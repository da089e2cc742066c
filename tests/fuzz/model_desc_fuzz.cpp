// libFuzzer target: GGUF bytes -> reader -> model descriptor -> tensor binding
// -> one CPU forward step of two tokens with a pool of two KV blocks (what
// comes after the file reader: hyperparameter validation, shape checks, expert
// stacking, and the kernels sized by what validation let through). Seeded with
// a tiny valid qwen3 model whose values the fuzzer mutates. Any input must load
// and run, or fail with ember::Error.
#include <cstdint>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "gguf/gguf.h"
#include "model/loaders.h"
#include "model/model.h"
#include "util/error.h"
#include "util/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto reader = std::make_shared<ember::gguf::Reader>(ember::gguf::Reader::from_memory(data, size, "fuzz.gguf"));
    const auto model = ember::Model::from_files(ember::load_gguf_reader(reader), "fuzz.gguf");
    const ember::ModelDesc& d = model->desc();
    // What the binder accepted must satisfy the documented limits.
    if (d.n_layers > ember::limits::kMaxLayers || d.head_dim > ember::limits::kMaxHeadDim ||
        int64_t(model->weights().layers.size()) != d.n_layers)
      __builtin_trap();

    ember::StepLimits lim;
    lim.max_tokens = 2;
    lim.max_logit_rows = 2;
    lim.max_context = 32;
    ember::KvConfig kv;
    kv.n_blocks = 2;
    kv.block_size = 16;
    kv.type = ember::KvType::F32;
    ember::CpuBackend backend(*model, lim, kv, /*n_threads=*/1);
    const int32_t tokens[2] = {0, d.vocab > 1 ? 1 : 0};
    const int32_t blocks[1] = {1};
    ember::StepBatch batch;
    batch.seqs.push_back(ember::SeqStep{tokens, 2, 0, blocks, 1, ember::LogitsWanted::All});
    const float* logits = backend.forward(batch);
    volatile float sink = logits[0] + logits[2 * size_t(d.vocab) - 1];  // both rows exist
    (void)sink;
  } catch (const ember::Error&) {
  }
  return 0;
}
