// ModelDesc::validate: the one check every loaded descriptor passes (GGUF,
// Hugging Face config.json, convert, gen-model) before anything is sized from
// it. Ranges come from util/limits.h; products are taken in 64 bits, so no
// later `int` arithmetic on these fields (q_dim(), kv_dim(), buffer sizes of
// a few rows) can overflow. Each message names the field, the value and the
// allowed range.
#include <cmath>
#include <string>

#include "model/descriptor.h"
#include "util/error.h"
#include "util/limits.h"

namespace ember {

namespace {

struct Checker {
  const std::string& arch;
  [[noreturn]] void bad(const std::string& what) const { throw Error(arch + " model: " + what); }
  void count(const char* name, int64_t v, int64_t lo, int64_t hi) const {
    if (v < lo || v > hi)
      bad(std::string(name) + " = " + std::to_string(v) + " is outside " + std::to_string(lo) + " .. " +
          std::to_string(hi));
  }
  void real(const char* name, double v, double lo, double hi, bool lo_open) const {
    if (!std::isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
      bad(std::string(name) + " = " + std::to_string(v) + " is not a finite number in " + (lo_open ? "(" : "[") +
          std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
};

}  // namespace

void ModelDesc::validate() const {
  using namespace limits;
  const Checker c{arch};
  c.count("layer count", n_layers, 1, kMaxLayers);
  c.count("hidden size", hidden, 1, kMaxHidden);
  c.count("attention heads", n_heads, 1, kMaxHeads);
  c.count("key/value heads", n_kv_heads, 1, n_heads);
  c.count("head size", head_dim, 2, kMaxHeadDim);
  c.count("query width (heads x head size)", int64_t(n_heads) * head_dim, 1, kMaxProjection);
  c.count("FFN width", ffn, 0, kMaxFfn);
  c.count("vocabulary", vocab, 1, kMaxVocab);
  c.count("context length", max_context, 1, kMaxContext);
  if (n_heads % n_kv_heads != 0) c.bad("query heads must be a multiple of key/value heads");
  if (head_dim % 2 != 0) c.bad("head size must be even for RoPE");
  if (int64_t(layers.size()) != n_layers) c.bad("layer table size differs from layer count");
  c.real("RMS norm epsilon", norm_eps, 0, 1, true);
  c.real("embedding scale", embed_scale, 0, 1e6, true);
  c.real("attention scale", attn_scale, 0, 1e6, false);
  c.real("attention soft-cap", attn_softcap, 0, 1e6, false);
  c.real("final soft-cap", final_softcap, 0, 1e6, false);
  bool any_moe = false;
  for (const LayerDesc& l : layers) {
    c.count("sliding window", l.sliding_window, 0, kMaxContext);
    c.real("RoPE base", l.rope_base, 0, 1e12, true);
    any_moe |= l.moe;
  }
  if (any_moe || n_experts > 0) {
    c.count("expert count", n_experts, 1, kMaxExperts);
    c.count("experts used per token", n_experts_used, 1, n_experts);
    c.count("expert FFN width", expert_ffn, 1, kMaxFfn);
  }
  if (!rope_freq_factors.empty()) {
    if (int64_t(rope_freq_factors.size()) != head_dim / 2) c.bad("rope_freqs has the wrong length");
    for (float f : rope_freq_factors) c.real("rope_freqs entry", f, 0, 1e12, true);
  }
}

}  // namespace ember
