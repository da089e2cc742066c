// The supported architectures, as data.
//
// Each ArchSpec says how one family differs (activation, RoPE pairing in its
// GGUF files, norms, soft-caps, which layers use a sliding window, MoE layout);
// reading a model's settings from GGUF metadata or a Hugging Face config.json
// turns a spec plus the file's numbers into a ModelDesc. Adding a family is one
// entry in the table in architectures.cpp, plus its fixtures.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/descriptor.h"

namespace ember {
namespace gguf { class Reader; class Writer; }

// Which layers attend through a sliding window (when the model has a window).
enum class WindowLayers {
  None,         // the family has no sliding window
  All,          // every layer (Mistral)
  EvenLayers,   // layers 0, 2, 4, ... local, the others global (Gemma 2)
  NthIsGlobal,  // every `window_period`-th layer global, the rest local (Gemma 3)
};

struct ArchSpec {
  std::string name;                     // GGUF general.architecture
  std::vector<std::string> hf_classes;  // config.json "architectures" entries
  Activation activation = Activation::SiLU;
  RopePairing gguf_rope_pairing = RopePairing::SplitHalves;  // Adjacent: the file's Q/K rows are permuted for it
  bool qkv_bias = false;
  bool qk_norm = false;
  bool post_norms = false;        // post-attention and post-FFN norms
  bool embed_scale_sqrt = false;  // embeddings scaled by sqrt(hidden)
  bool hf_norm_plus_one = false;  // HF stores norm weight w and applies (1 + w); GGUF stores 1 + w
  bool moe = false;
  bool leading_dense = false;     // MoE with dense leading layers
  Routing routing = Routing::SoftmaxTopK;
  bool norm_topk_default = false;
  WindowLayers window_layers = WindowLayers::None;
  int window_period = 0;          // for NthIsGlobal
  float default_eps = 1e-5f;
  float default_rope_base = 10000.0f;
  float default_local_rope_base = 0.0f;  // 0: same as the global base
};

const std::vector<ArchSpec>& architectures();
const ArchSpec& arch_by_name(const std::string& gguf_name);        // throws listing the supported ones
const ArchSpec& arch_by_hf_class(const std::string& hf_class);     // likewise
std::string supported_architectures();                             // "llama, qwen2, ..."

// Settings from a GGUF file's metadata (vocab and tied-ness are set by the binder).
ModelDesc desc_from_gguf(const gguf::Reader& r);
// Settings from a Hugging Face config.json; `spec_out` receives the matched spec.
ModelDesc desc_from_hf_config(const nlohmann::json& config, const ArchSpec** spec_out);
// Writes the `<arch>.*` metadata keys for `d` (used by convert and gen-model).
void desc_to_gguf(const ModelDesc& d, gguf::Writer& w);

// Per-frequency RoPE divisors of Llama 3's long-context scaling.
std::vector<float> llama3_rope_factors(int head_dim, float rope_base, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context);

}  // namespace ember
