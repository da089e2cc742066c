#include "model/architectures.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "util/error.h"

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

ModelDesc desc_from_gguf(const gguf::Reader& r) {
  const std::string arch = r.get_string("general.architecture");
  const ArchSpec& spec = arch_by_name(arch);
  const std::string p = arch + ".";
  ModelDesc d;
  d.n_layers = int(r.get_int(p + "block_count"));
  d.hidden = int(r.get_int(p + "embedding_length"));
  d.n_heads = int(r.get_int(p + "attention.head_count"));
  d.n_kv_heads = int(r.get_int(p + "attention.head_count_kv", d.n_heads));
  d.head_dim = int(r.get_int(p + "attention.key_length", d.n_heads > 0 ? d.hidden / d.n_heads : 0));
  d.ffn = int(r.get_int(p + "feed_forward_length", 0));
  d.max_context = int(r.get_int(p + "context_length", 4096));
  d.norm_eps = float(r.get_float(p + "attention.layer_norm_rms_epsilon", spec.default_eps));
  apply_common(d, spec);
  d.rope_pairing = spec.gguf_rope_pairing;
  d.attn_scale = float(r.get_float(p + "attention.scale", 0.0));
  d.attn_softcap = float(r.get_float(p + "attn_logit_softcapping", 0.0));
  d.final_softcap = float(r.get_float(p + "final_logit_softcapping", 0.0));
  if (spec.moe) {
    d.n_experts = int(r.get_int(p + "expert_count"));
    d.n_experts_used = int(r.get_int(p + "expert_used_count"));
    d.expert_ffn = int(r.get_int(p + "expert_feed_forward_length"));
    d.norm_topk = r.get_bool(p + "expert_weights_norm", spec.norm_topk_default);
    const int64_t gating = r.get_int(p + "expert_gating_func", 0);  // 1 softmax, 2 sigmoid
    if (gating == 2) d.routing = Routing::SigmoidTopK;
    if (r.get_bool(p + "expert_topk_before_softmax", false)) d.routing = Routing::TopKSoftmax;
  }
  const int leading_dense = spec.leading_dense ? int(r.get_int(p + "leading_dense_block_count")) : 0;
  const int window = int(r.get_int(p + "attention.sliding_window", 0));
  const float base = float(r.get_float(p + "rope.freq_base", spec.default_rope_base));
  const float local_base = float(r.get_float(p + "rope.freq_base_swa", spec.default_local_rope_base));
  std::vector<bool> sliding;
  if (const gguf::Value* v = r.find(p + "attention.sliding_window_pattern")) {
    if (v->type == gguf::ValueType::ARRAY) {
      if (int64_t(v->array.size()) != d.n_layers)
        throw Error(r.path() + ": " + p + "attention.sliding_window_pattern has " + std::to_string(v->array.size()) +
                    " entries for " + std::to_string(d.n_layers) + " layers");
      for (const auto& e : v->array) sliding.push_back(e.as_bool());
    } else {
      const int64_t period = v->as_int();
      if (period <= 0) throw Error(r.path() + ": " + p + "attention.sliding_window_pattern must be positive");
      for (int i = 0; i < d.n_layers; ++i) sliding.push_back((i + 1) % period != 0);
    }
  }
  if (d.n_layers <= 0 || d.n_layers > 4096) throw Error(r.path() + ": " + p + "block_count out of range");
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

}  // namespace

ModelDesc desc_from_hf_config(const nlohmann::json& c, const ArchSpec** spec_out) {
  try {
    const auto* archs = jfind(c, "architectures");
    if (!archs || !archs->is_array() || archs->empty()) throw Error("config.json: missing 'architectures'");
    const std::string cls = (*archs)[0].get<std::string>();
    const ArchSpec* spec = &arch_by_hf_class(cls);
    std::vector<int> mlp_only = jget<std::vector<int>>(c, "mlp_only_layers", {});
    int leading_dense = 0;
    if (spec->moe && !mlp_only.empty()) {
      for (size_t i = 0; i < mlp_only.size(); ++i)
        if (mlp_only[i] != int(i)) throw Error("config.json: mlp_only_layers must be the leading layers 0..n-1");
      leading_dense = int(mlp_only.size());
      spec = &arch_by_name("flint");
    }
    if (spec->moe && jget<int>(c, "decoder_sparse_step", 1) != 1)
      throw Error("config.json: decoder_sparse_step other than 1 is not supported");
    ModelDesc d;
    d.n_layers = jreq<int>(c, "num_hidden_layers");
    d.hidden = jreq<int>(c, "hidden_size");
    d.n_heads = jreq<int>(c, "num_attention_heads");
    d.n_kv_heads = jget<int>(c, "num_key_value_heads", d.n_heads);
    d.head_dim = jget<int>(c, "head_dim", d.n_heads ? d.hidden / d.n_heads : 0);
    d.ffn = jget<int>(c, "intermediate_size", 0);
    d.vocab = jreq<int>(c, "vocab_size");
    d.max_context = jget<int>(c, "max_position_embeddings", 4096);
    d.norm_eps = jget<float>(c, "rms_norm_eps", spec->default_eps);
    apply_common(d, *spec);
    d.rope_pairing = RopePairing::SplitHalves;  // Hugging Face weights are not permuted
    d.attn_softcap = jget<float>(c, "attn_logit_softcapping", 0.0f);
    d.final_softcap = jget<float>(c, "final_logit_softcapping", 0.0f);
    if (const auto* s = jfind(c, "query_pre_attn_scalar")) d.attn_scale = 1.0f / std::sqrt(s->get<float>());
    if (spec->moe) {
      d.n_experts = jget<int>(c, "num_experts", jget<int>(c, "num_local_experts", 0));
      if (d.n_experts <= 0) throw Error("config.json: missing 'num_experts' / 'num_local_experts'");
      d.n_experts_used = jreq<int>(c, "num_experts_per_tok");
      d.expert_ffn = jreq<int>(c, "moe_intermediate_size");
      d.norm_topk = jget<bool>(c, "norm_topk_prob", false);
    }

    // RoPE: transformers 5 keeps it in `rope_parameters` (per attention kind for
    // Gemma 3), older configs in `rope_theta` / `rope_scaling` / `rope_local_base_freq`.
    float base = jget<float>(c, "rope_theta", spec->default_rope_base);
    float local_base = jget<float>(c, "rope_local_base_freq", spec->default_local_rope_base);
    const nlohmann::json* scaling = jfind(c, "rope_scaling");
    if (const auto* rp = jfind(c, "rope_parameters")) {
      const nlohmann::json* global = rp;
      if (const auto* full = jfind(*rp, "full_attention")) {
        global = full;
        if (const auto* sl = jfind(*rp, "sliding_attention")) {
          local_base = jget<float>(*sl, "rope_theta", local_base);
          const std::string t = jget<std::string>(*sl, "rope_type", "default");
          if (t != "default") throw Error("config.json: rope type '" + t + "' on sliding layers is not supported");
        }
      }
      base = jget<float>(*global, "rope_theta", base);
      if (jget<std::string>(*global, "rope_type", "default") != "default") scaling = global;
    }
    if (scaling) {
      const std::string t = jget<std::string>(*scaling, "rope_type", jget<std::string>(*scaling, "type", "default"));
      if (t == "llama3") {
        d.rope_freq_factors = llama3_rope_factors(
            d.head_dim, base, jreq<float>(*scaling, "factor"), jreq<float>(*scaling, "low_freq_factor"),
            jreq<float>(*scaling, "high_freq_factor"), jreq<float>(*scaling, "original_max_position_embeddings"));
      } else if (t != "default") {
        throw Error("config.json: rope scaling type '" + t + "' is not supported");
      }
    }

    int window = 0;
    if (spec->window_layers != WindowLayers::None) window = jget<int>(c, "sliding_window", 0);
    if (jget<bool>(c, "use_sliding_window", false))
      throw Error("config.json: use_sliding_window on this architecture is not supported");
    std::vector<bool> sliding;
    if (const auto* lt = jfind(c, "layer_types"); lt && window > 0) {
      if (int(lt->size()) != d.n_layers) throw Error("config.json: layer_types length differs from num_hidden_layers");
      for (const auto& e : *lt) sliding.push_back(e.get<std::string>() == "sliding_attention");
    } else if (spec->window_layers == WindowLayers::NthIsGlobal) {
      if (const auto* pat = jfind(c, "sliding_window_pattern")) {
        const int period = pat->get<int>();
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

float ModelDesc::attention_scale() const {
  return attn_scale != 0 ? attn_scale : 1.0f / std::sqrt(float(head_dim));
}

void ModelDesc::validate() const {
  auto bad = [&](const std::string& what) { throw Error(arch + " model: " + what); };
  if (n_layers <= 0 || hidden <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || vocab <= 0)
    bad("layer count, hidden size, heads, head size and vocabulary must all be positive");
  if (n_heads % n_kv_heads != 0) bad("query heads must be a multiple of key/value heads");
  if (head_dim % 2 != 0) bad("head size must be even for RoPE");
  if (int(layers.size()) != n_layers) bad("layer table size differs from layer count");
  if (n_experts > 0 && (n_experts_used <= 0 || n_experts_used > n_experts)) bad("experts used must be in 1..expert count");
  if (!rope_freq_factors.empty() && int(rope_freq_factors.size()) != head_dim / 2)
    bad("rope_freqs has the wrong length");
}

}  // namespace ember
