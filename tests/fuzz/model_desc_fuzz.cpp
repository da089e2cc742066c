// libFuzzer target: GGUF bytes -> reader -> model descriptor -> tensor binding
// (what comes after the file reader: hyperparameter validation, shape checks,
// expert stacking). Seeded with a tiny valid qwen3 model whose values the
// fuzzer mutates. Any input must load or fail with ember::Error.
// (One forward step of the loaded model is left out until the CPU backend's
// new interface lands.)
#include <cstdint>
#include <memory>

#include "gguf/gguf.h"
#include "model/loaders.h"
#include "model/weights.h"
#include "util/error.h"
#include "util/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto reader = std::make_shared<ember::gguf::Reader>(ember::gguf::Reader::from_memory(data, size, "fuzz.gguf"));
    ember::LoadedFiles f = ember::load_gguf_reader(reader);
    ember::Weights w = ember::bind_weights(f.desc, *f.source, "fuzz.gguf");
    // What the binder accepted must satisfy the documented limits.
    if (f.desc.n_layers > ember::limits::kMaxLayers || f.desc.head_dim > ember::limits::kMaxHeadDim ||
        int64_t(w.layers.size()) != f.desc.n_layers)
      __builtin_trap();
  } catch (const ember::Error&) {
  }
  return 0;
}
