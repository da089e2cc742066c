#include "model/architectures.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/quote.h"

namespace ember {

const std::vector<ArchSpec>& architectures() {
  static const std::vector<ArchSpec> table = [] {
    std::vector<ArchSpec> t;
    {
      ArchSpec a;  // Llama 2/3, Mistral (sliding window on every layer)
      a.name = "llama";
      a.hf_classes = {"LlamaForCausalLM", "MistralForCausalLM"};
      a.gguf_rope_pairing = RopePairing::Adjacent;
      a.window_layers = WindowLayers::All;
      t.push_back(a);
    }
    {
      ArchSpec a;
      a.name = "qwen2";
      a.hf_classes = {"Qwen2ForCausalLM"};
      a.qkv_bias = true;
      a.default_eps = 1e-6f;
      a.default_rope_base = 1e6f;
      t.push_back(a);
    }
    {
      ArchSpec a;
      a.name = "qwen3";
      a.hf_classes = {"Qwen3ForCausalLM"};
      a.qk_norm = true;
      a.default_eps = 1e-6f;
      a.default_rope_base = 1e6f;
      t.push_back(a);
    }
    {
      ArchSpec a;
      a.name = "qwen3moe";
      a.hf_classes = {"Qwen3MoeForCausalLM"};
      a.qk_norm = true;
      a.moe = true;
      a.norm_topk_default = true;
      a.default_eps = 1e-6f;
      a.default_rope_base = 1e6f;
      t.push_back(a);
    }
    {
      ArchSpec a;  // Qwen3-MoE layout whose first layers are dense (ember's own name; keys in docs/gguf-keys.md)
      a.name = "flint";
      a.hf_classes = {};  // a Qwen3MoeForCausalLM config with mlp_only_layers = [0 .. n-1]
      a.qk_norm = true;
      a.moe = true;
      a.leading_dense = true;
      a.norm_topk_default = true;
      a.default_eps = 1e-6f;
      a.default_rope_base = 1e6f;
      t.push_back(a);
    }
    {
      ArchSpec a;
      a.name = "gemma2";
      a.hf_classes = {"Gemma2ForCausalLM"};
      a.activation = Activation::GeluTanh;
      a.post_norms = true;
      a.embed_scale_sqrt = true;
      a.hf_norm_plus_one = true;
      a.window_layers = WindowLayers::EvenLayers;
      a.default_eps = 1e-6f;
      t.push_back(a);
    }
    {
      ArchSpec a;
      a.name = "gemma3";
      a.hf_classes = {"Gemma3ForCausalLM"};
      a.activation = Activation::GeluTanh;
      a.qk_norm = true;
      a.post_norms = true;
      a.embed_scale_sqrt = true;
      a.hf_norm_plus_one = true;
      a.window_layers = WindowLayers::NthIsGlobal;
      a.window_period = 6;
      a.default_eps = 1e-6f;
      a.default_rope_base = 1e6f;
      a.default_local_rope_base = 10000.0f;
      t.push_back(a);
    }
    return t;
  }();
  return table;
}

std::string supported_architectures() {
  std::string s;
  for (const auto& a : architectures()) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

const ArchSpec& arch_by_name(const std::string& name) {
  for (const auto& a : architectures())
    if (a.name == name) return a;
  throw Error("unsupported architecture '" + name + "' (supported: " + supported_architectures() + ")");
}

const ArchSpec& arch_by_hf_class(const std::string& cls) {
  for (const auto& a : architectures())
    for (const auto& c : a.hf_classes)
      if (c == cls) return a;
  std::string classes;
  for (const auto& a : architectures())
    for (const auto& c : a.hf_classes) classes += (classes.empty() ? "" : ", ") + c;
  throw Error("unsupported Hugging Face architecture '" + cls + "' (supported: " + classes + ")");
}

std::vector<float> llama3_rope_factors(int head_dim, float base, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context) {
  const double low_wavelen = original_context / low_freq_factor;
  const double high_wavelen = original_context / high_freq_factor;
  std::vector<float> f(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = std::pow(double(base), -2.0 * i / head_dim);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      f[size_t(i)] = 1.0f;
    } else if (wavelen > low_wavelen) {
      f[size_t(i)] = factor;
    } else {
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      const double scaled = (1 - smooth) * freq / factor + smooth * freq;
      f[size_t(i)] = float(freq / scaled);
    }
  }
  return f;
}

namespace {

// Per-layer windows and RoPE bases from the family's pattern (or an explicit per-layer list).
void fill_layers(ModelDesc& d, const ArchSpec& spec, int window, float rope_base, float local_base,
                 const std::vector<bool>& explicit_sliding, int leading_dense) {
  d.layers.assign(size_t(d.n_layers), LayerDesc{});
  for (int i = 0; i < d.n_layers; ++i) {
    LayerDesc& l = d.layers[size_t(i)];
    bool sliding = false;
    if (!explicit_sliding.empty()) {
      sliding = explicit_sliding[size_t(i)];
    } else {
      switch (spec.window_layers) {
        case WindowLayers::None: sliding = false; break;
        case WindowLayers::All: sliding = true; break;
        case WindowLayers::EvenLayers: sliding = i % 2 == 0; break;
        case WindowLayers::NthIsGlobal: sliding = (i + 1) % spec.window_period != 0; break;
      }
    }
    l.sliding_window = (sliding && window > 0) ? window : 0;
    l.rope_base = (l.sliding_window > 0 && local_base > 0) ? local_base : rope_base;
    l.moe = spec.moe && i >= leading_dense;
  }
}

void apply_common(ModelDesc& d, const ArchSpec& spec) {
  d.arch = spec.name;
  d.activation = spec.activation;
  d.qkv_bias = spec.qkv_bias;
  d.qk_norm = spec.qk_norm;
  d.post_attn_norm = d.post_ffn_norm = spec.post_norms;
  d.embed_scale = spec.embed_scale_sqrt ? std::sqrt(float(d.hidden)) : 1.0f;
  d.routing = spec.routing;
}

}  // namespace

namespace {

// Hyperparameters are read at the width the file declares (64-bit when it says
// so) and range-checked before they are narrowed, so a value that does not fit
// is an error naming the key, the value and the limit, never a silent wrap.
[[noreturn]] void out_of_range(const std::string& where, const std::string& key, const std::string& value,
                               const std::string& range) {
  throw Error(where + ": " + key + " = " + value + " is outside " + range);
}

std::string range_text(int64_t lo, int64_t hi) { return std::to_string(lo) + " .. " + std::to_string(hi); }

int gguf_count(const gguf::Reader& r, const std::string& key, int64_t lo, int64_t hi,
               std::optional<int64_t> fallback = std::nullopt) {
  const gguf::Value* v = r.find(key);
  if (!v && fallback) {
    if (*fallback < lo || *fallback > hi)
      out_of_range(r.path(), "metadata key '" + key + "' (absent; derived)", std::to_string(*fallback), range_text(lo, hi));
    return int(*fallback);
  }
  if (v && v->type == gguf::ValueType::U64 && v->u > uint64_t(INT64_MAX))
    out_of_range(r.path(), "metadata key '" + key + "'", std::to_string(v->u), range_text(lo, hi));
  const int64_t x = r.get_int(key);  // throws naming the key when missing or not an integer
  if (x < lo || x > hi) out_of_range(r.path(), "metadata key '" + key + "'", std::to_string(x), range_text(lo, hi));
  return int(x);
}

// A finite float in [lo, hi] (open at lo when lo_open).
float gguf_real(const gguf::Reader& r, const std::string& key, double fallback, double lo, double hi, bool lo_open) {
  const double x = r.get_float(key, fallback);
  if (!std::isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
    out_of_range(r.path(), "metadata key '" + key + "'", std::to_string(x),
                 std::string(lo_open ? "(" : "[") + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return float(x);
}

}  // namespace

ModelDesc desc_from_gguf(const gguf::Reader& r) {
  using namespace limits;
  const std::string arch = r.get_string("general.architecture");
  const ArchSpec& spec = arch_by_name(arch);
  const std::string p = arch + ".";
  ModelDesc d;
  d.n_layers = gguf_count(r, p + "block_count", 1, kMaxLayers);
  d.hidden = gguf_count(r, p + "embedding_length", 1, kMaxHidden);
  d.n_heads = gguf_count(r, p + "attention.head_count", 1, kMaxHeads);
  d.n_kv_heads = gguf_count(r, p + "attention.head_count_kv", 1, kMaxHeads, d.n_heads);
  d.head_dim = gguf_count(r, p + "attention.key_length", 1, kMaxHeadDim, d.hidden / d.n_heads);
  d.ffn = gguf_count(r, p + "feed_forward_length", 0, kMaxFfn, 0);
  d.max_context = gguf_count(r, p + "context_length", 1, kMaxContext, 4096);
  d.norm_eps = gguf_real(r, p + "attention.layer_norm_rms_epsilon", spec.default_eps, 0, 1, true);
  apply_common(d, spec);
  d.rope_pairing = spec.gguf_rope_pairing;
  d.attn_scale = gguf_real(r, p + "attention.scale", 0.0, 0, 1e6, false);
  d.attn_softcap = gguf_real(r, p + "attn_logit_softcapping", 0.0, 0, 1e6, false);
  d.final_softcap = gguf_real(r, p + "final_logit_softcapping", 0.0, 0, 1e6, false);
  if (spec.moe) {
    d.n_experts = gguf_count(r, p + "expert_count", 1, kMaxExperts);
    d.n_experts_used = gguf_count(r, p + "expert_used_count", 1, d.n_experts);
    d.expert_ffn = gguf_count(r, p + "expert_feed_forward_length", 1, kMaxFfn);
    d.norm_topk = r.get_bool(p + "expert_weights_norm", spec.norm_topk_default);
    const int gating = gguf_count(r, p + "expert_gating_func", 0, 2, 0);  // 1 softmax, 2 sigmoid
    if (gating == 2) d.routing = Routing::SigmoidTopK;
    if (r.get_bool(p + "expert_topk_before_softmax", false)) d.routing = Routing::TopKSoftmax;
  }
  const int leading_dense = spec.leading_dense ? gguf_count(r, p + "leading_dense_block_count", 0, d.n_layers) : 0;
  const int window = gguf_count(r, p + "attention.sliding_window", 0, kMaxContext, 0);
  const float base = gguf_real(r, p + "rope.freq_base", spec.default_rope_base, 0, 1e12, true);
  const float local_base = gguf_real(r, p + "rope.freq_base_swa", spec.default_local_rope_base, 0, 1e12, false);
  std::vector<bool> sliding;
  if (const gguf::Value* v = r.find(p + "attention.sliding_window_pattern")) {
    if (v->type == gguf::ValueType::ARRAY) {
      if (int64_t(v->array.size()) != d.n_layers)
        throw Error(r.path() + ": " + p + "attention.sliding_window_pattern has " + std::to_string(v->array.size()) +
                    " entries for " + std::to_string(d.n_layers) + " layers");
      for (const auto& e : v->array) sliding.push_back(e.as_bool());
    } else {
      const int period = gguf_count(r, p + "attention.sliding_window_pattern", 1, kMaxLayers);
      for (int i = 0; i < d.n_layers; ++i) sliding.push_back((i + 1) % period != 0);
    }
  }
  fill_layers(d, spec, window, base, local_base, sliding, leading_dense);
  return d;
}

namespace {

const nlohmann::json* jfind(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}
template <class T>
T jget(const nlohmann::json& j, const char* key, T fallback) {
  const nlohmann::json* v = jfind(j, key);
  return v ? v->get<T>() : fallback;
}
template <class T>
T jreq(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = jfind(j, key);
  if (!v) throw Error(std::string("config.json: missing '") + key + "'");
  return v->get<T>();
}

// An integer setting: a JSON integer (2.5 or 1e3 is refused, not truncated) within [lo, hi].
int jint(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, std::optional<int64_t> fallback = {}) {
  const nlohmann::json* v = jfind(j, key);
  int64_t x;
  if (!v) {
    if (!fallback) throw Error(std::string("config.json: missing '") + key + "'");
    x = *fallback;
  } else if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    x = u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else {
    throw Error(std::string("config.json: '") + key + "' = " + excerpt(v->dump(), 40) + " is not an integer");
  }
  if (x < lo || x > hi)
    out_of_range("config.json", std::string("'") + key + "'" + (v ? "" : " (absent; derived)"), std::to_string(x),
                 range_text(lo, hi));
  return int(x);
}

// A finite number in [lo, hi] (open at lo when lo_open).
float jreal(const nlohmann::json& j, const char* key, double fallback, double lo, double hi, bool lo_open) {
  const nlohmann::json* v = jfind(j, key);
  if (v && !v->is_number())
    throw Error(std::string("config.json: '") + key + "' = " + excerpt(v->dump(), 40) + " is not a number");
  const double x = v ? v->get<double>() : fallback;
  if (!std::isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
    out_of_range("config.json", std::string("'") + key + "'", std::to_string(x),
                 std::string(lo_open ? "(" : "[") + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return float(x);
}

}  // namespace

ModelDesc desc_from_hf_config(const nlohmann::json& c, const ArchSpec** spec_out) {
  try {
    const auto* archs = jfind(c, "architectures");
    if (!archs || !archs->is_array() || archs->empty()) throw Error("config.json: missing 'architectures'");
    const std::string cls = (*archs)[0].get<std::string>();
    const ArchSpec* spec = &arch_by_hf_class(cls);
    std::vector<int64_t> mlp_only;
    if (const auto* m = jfind(c, "mlp_only_layers")) {
      if (!m->is_array() || m->size() > size_t(limits::kMaxLayers))
        throw Error("config.json: 'mlp_only_layers' must be a list of at most " + std::to_string(limits::kMaxLayers) +
                    " layer indices");
      for (const auto& e : *m) {
        if (!e.is_number_integer()) throw Error("config.json: 'mlp_only_layers' holds a non-integer");
        mlp_only.push_back(e.get<int64_t>());
      }
    }
    int leading_dense = 0;
    if (spec->moe && !mlp_only.empty()) {
      for (size_t i = 0; i < mlp_only.size(); ++i)
        if (mlp_only[i] != int64_t(i)) throw Error("config.json: mlp_only_layers must be the leading layers 0..n-1");
      leading_dense = int(mlp_only.size());
      spec = &arch_by_name("flint");
    }
    if (spec->moe && jint(c, "decoder_sparse_step", INT32_MIN, INT32_MAX, 1) != 1)
      throw Error("config.json: decoder_sparse_step other than 1 is not supported");
    ModelDesc d;
    using namespace limits;
    d.n_layers = jint(c, "num_hidden_layers", 1, kMaxLayers);
    d.hidden = jint(c, "hidden_size", 1, kMaxHidden);
    d.n_heads = jint(c, "num_attention_heads", 1, kMaxHeads);
    d.n_kv_heads = jint(c, "num_key_value_heads", 1, kMaxHeads, d.n_heads);
    d.head_dim = jint(c, "head_dim", 1, kMaxHeadDim, d.hidden / d.n_heads);
    d.ffn = jint(c, "intermediate_size", 0, kMaxFfn, 0);
    d.vocab = jint(c, "vocab_size", 1, kMaxVocab);
    d.max_context = jint(c, "max_position_embeddings", 1, kMaxContext, 4096);
    d.norm_eps = jreal(c, "rms_norm_eps", spec->default_eps, 0, 1, true);
    apply_common(d, *spec);
    d.rope_pairing = RopePairing::SplitHalves;  // Hugging Face weights are not permuted
    d.attn_softcap = jreal(c, "attn_logit_softcapping", 0.0, 0, 1e6, false);
    d.final_softcap = jreal(c, "final_logit_softcapping", 0.0, 0, 1e6, false);
    if (jfind(c, "query_pre_attn_scalar"))
      d.attn_scale = 1.0f / std::sqrt(jreal(c, "query_pre_attn_scalar", 1.0, 0, 1e12, true));
    if (spec->moe) {
      if (!jfind(c, "num_experts") && !jfind(c, "num_local_experts"))
        throw Error("config.json: missing 'num_experts' / 'num_local_experts'");
      d.n_experts = jfind(c, "num_experts") ? jint(c, "num_experts", 1, kMaxExperts)
                                            : jint(c, "num_local_experts", 1, kMaxExperts);
      d.n_experts_used = jint(c, "num_experts_per_tok", 1, d.n_experts);
      d.expert_ffn = jint(c, "moe_intermediate_size", 1, kMaxFfn);
      d.norm_topk = jget<bool>(c, "norm_topk_prob", false);
    }

    // RoPE: transformers 5 keeps it in `rope_parameters` (per attention kind for
    // Gemma 3), older configs in `rope_theta` / `rope_scaling` / `rope_local_base_freq`.
    float base = jreal(c, "rope_theta", spec->default_rope_base, 0, 1e12, true);
    float local_base = jreal(c, "rope_local_base_freq", spec->default_local_rope_base, 0, 1e12, false);
    const nlohmann::json* scaling = jfind(c, "rope_scaling");
    if (const auto* rp = jfind(c, "rope_parameters")) {
      const nlohmann::json* global = rp;
      if (const auto* full = jfind(*rp, "full_attention")) {
        global = full;
        if (const auto* sl = jfind(*rp, "sliding_attention")) {
          local_base = jreal(*sl, "rope_theta", local_base, 0, 1e12, true);
          const std::string t = jget<std::string>(*sl, "rope_type", "default");
          if (t != "default") throw Error("config.json: rope type '" + t + "' on sliding layers is not supported");
        }
      }
      base = jreal(*global, "rope_theta", base, 0, 1e12, true);
      if (jget<std::string>(*global, "rope_type", "default") != "default") scaling = global;
    }
    if (scaling) {
      const std::string t = jget<std::string>(*scaling, "rope_type", jget<std::string>(*scaling, "type", "default"));
      if (t == "llama3") {
        const float factor = jreal(*scaling, "factor", NAN, 0, 1e6, true);
        const float low = jreal(*scaling, "low_freq_factor", NAN, 0, 1e6, true);
        const float high = jreal(*scaling, "high_freq_factor", NAN, 0, 1e6, true);
        const float original = jreal(*scaling, "original_max_position_embeddings", NAN, 0, 1e12, true);
        if (high <= low) throw Error("config.json: rope_scaling high_freq_factor must exceed low_freq_factor");
        d.rope_freq_factors = llama3_rope_factors(d.head_dim, base, factor, low, high, original);
      } else if (t != "default") {
        throw Error("config.json: rope scaling type '" + t + "' is not supported");
      }
    }

    int window = 0;
    if (spec->window_layers != WindowLayers::None) window = jint(c, "sliding_window", 0, kMaxContext, 0);
    if (jget<bool>(c, "use_sliding_window", false))
      throw Error("config.json: use_sliding_window on this architecture is not supported");
    std::vector<bool> sliding;
    if (const auto* lt = jfind(c, "layer_types"); lt && window > 0) {
      if (!lt->is_array() || lt->size() != size_t(d.n_layers))
        throw Error("config.json: layer_types length differs from num_hidden_layers");
      for (const auto& e : *lt) sliding.push_back(e.get<std::string>() == "sliding_attention");
    } else if (spec->window_layers == WindowLayers::NthIsGlobal) {
      if (const auto* pat = jfind(c, "sliding_window_pattern")) {
        (void)pat;  // a period of 0 would divide by zero
        const int period = jint(c, "sliding_window_pattern", 1, kMaxLayers);
        for (int i = 0; i < d.n_layers; ++i) sliding.push_back((i + 1) % period != 0);
      }
    }
    fill_layers(d, *spec, window, base, local_base, sliding, leading_dense);
    if (spec_out) *spec_out = spec;
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("config.json: ") + e.what());
  }
}

void desc_to_gguf(const ModelDesc& d, gguf::Writer& w) {
  using gguf::Value;
  const std::string p = d.arch + ".";
  w.set("general.architecture", Value::str(d.arch));
  w.set(p + "block_count", Value::u32(uint32_t(d.n_layers)));
  w.set(p + "context_length", Value::u32(uint32_t(d.max_context)));
  w.set(p + "embedding_length", Value::u32(uint32_t(d.hidden)));
  if (d.ffn > 0) w.set(p + "feed_forward_length", Value::u32(uint32_t(d.ffn)));
  w.set(p + "attention.head_count", Value::u32(uint32_t(d.n_heads)));
  w.set(p + "attention.head_count_kv", Value::u32(uint32_t(d.n_kv_heads)));
  w.set(p + "attention.key_length", Value::u32(uint32_t(d.head_dim)));
  w.set(p + "attention.value_length", Value::u32(uint32_t(d.head_dim)));
  w.set(p + "attention.layer_norm_rms_epsilon", Value::f32(d.norm_eps));
  if (d.attn_scale != 0) w.set(p + "attention.scale", Value::f32(d.attn_scale));
  if (d.attn_softcap != 0) w.set(p + "attn_logit_softcapping", Value::f32(d.attn_softcap));
  if (d.final_softcap != 0) w.set(p + "final_logit_softcapping", Value::f32(d.final_softcap));

  // Global RoPE base from the first global layer; a local base when windows use another.
  float base = d.layers.empty() ? 10000.0f : d.layers[0].rope_base;
  float local_base = 0;
  int window = 0;
  bool any_sliding = false;
  for (const auto& l : d.layers) {
    if (l.sliding_window > 0) { window = l.sliding_window; local_base = l.rope_base; any_sliding = true; }
  }
  for (const auto& l : d.layers)
    if (l.sliding_window == 0) { base = l.rope_base; break; }
  w.set(p + "rope.freq_base", Value::f32(base));
  if (any_sliding) {
    w.set(p + "attention.sliding_window", Value::u32(uint32_t(window)));
    if (local_base != base) w.set(p + "rope.freq_base_swa", Value::f32(local_base));
    std::vector<gguf::Value> pattern;
    for (const auto& l : d.layers) pattern.push_back(Value::boolean(l.sliding_window > 0));
    w.set(p + "attention.sliding_window_pattern", Value::arr(gguf::ValueType::BOOL, std::move(pattern)));
  }
  if (d.n_experts > 0) {
    w.set(p + "expert_count", Value::u32(uint32_t(d.n_experts)));
    w.set(p + "expert_used_count", Value::u32(uint32_t(d.n_experts_used)));
    w.set(p + "expert_feed_forward_length", Value::u32(uint32_t(d.expert_ffn)));
    w.set(p + "expert_weights_norm", Value::boolean(d.norm_topk));
    w.set(p + "expert_gating_func", Value::u32(d.routing == Routing::SigmoidTopK ? 2u : 1u));
    if (d.routing == Routing::TopKSoftmax) w.set(p + "expert_topk_before_softmax", Value::boolean(true));
    int leading = 0;
    while (leading < d.n_layers && !d.layers[size_t(leading)].moe) ++leading;
    if (leading > 0) w.set(p + "leading_dense_block_count", Value::u32(uint32_t(leading)));
  }
}

std::vector<double> ModelDesc::rope_inverse_frequencies(int layer) const {
  std::vector<double> f(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    f[size_t(i)] = std::pow(double(layers[size_t(layer)].rope_base), -2.0 * i / head_dim);
    if (!rope_freq_factors.empty()) f[size_t(i)] /= rope_freq_factors[size_t(i)];
  }
  return f;
}

float ModelDesc::attention_scale() const {
  return attn_scale != 0 ? attn_scale : 1.0f / std::sqrt(float(head_dim));
}

}  // namespace ember
