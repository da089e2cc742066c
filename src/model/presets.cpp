#include "model/presets.h"

#include <algorithm>
#include <cmath>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "model/gguf_export.h"
#include "model/quant_mix.h"
#include "model/sampling_defaults.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/find_named.h"

namespace ember {

namespace {

ModelDesc shape(const std::string& arch, int layers, int hidden, int heads, int kv_heads, int head_dim, int ffn,
                int vocab, bool tied) {
  const ArchSpec& spec = arch_by_name(arch);
  ModelDesc d;
  d.arch = arch;
  d.n_layers = layers;
  d.hidden = hidden;
  d.n_heads = heads;
  d.n_kv_heads = kv_heads;
  d.head_dim = head_dim;
  d.ffn = ffn;
  d.vocab = vocab;
  d.max_context = arch == "llama" ? 131072 : 40960;
  d.norm_eps = spec.default_eps;
  d.qk_norm = spec.qk_norm;
  d.tied_embeddings = tied;
  d.layers.assign(size_t(layers), LayerDesc{false, 0, spec.default_rope_base});
  return d;
}

ModelDesc with_experts(ModelDesc d, int experts, int used, int expert_ffn, int leading_dense) {
  d.n_experts = experts;
  d.n_experts_used = used;
  d.expert_ffn = expert_ffn;
  d.norm_topk = true;
  for (int i = leading_dense; i < d.n_layers; ++i) d.layers[size_t(i)].moe = true;
  return d;
}

// Standard normal quantiles at 4096 evenly spaced probabilities (cell midpoints),
// by bisection on erf: sampling maps uniform bits through this table with linear
// interpolation, ~20x cheaper than Box-Muller, which matters for 40-billion-weight files.
const std::vector<float>& normal_quantiles() {
  static const std::vector<float> q = [] {
    std::vector<float> t(4097);
    for (int i = 0; i <= 4096; ++i) {
      const double p = (i + 0.5) / 4097.0;
      double lo = -10, hi = 10;
      for (int it = 0; it < 80; ++it) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
      }
      t[size_t(i)] = float(0.5 * (lo + hi));
    }
    return t;
  }();
  return q;
}

// Deterministic per-row random numbers, so rows can be generated in any order on any thread.
struct RowRng {
  uint64_t s;
  const float* q = normal_quantiles().data();
  explicit RowRng(uint64_t seed) : s(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // One standard normal from 32 random bits: 12 pick the quantile cell, 20 interpolate.
  float normal_from(uint32_t bits) const {
    const uint32_t cell = bits >> 20;
    const float frac = float(bits & 0xfffff) * (1.0f / 1048576.0f);
    return q[cell] + frac * (q[cell + 1] - q[cell]);
  }
  void normal2(float& a, float& b) {
    const uint64_t r = next();
    a = normal_from(uint32_t(r));
    b = normal_from(uint32_t(r >> 32));
  }
};

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = [] {
    std::vector<Preset> v;
    v.push_back({"tiny", shape("qwen3", 2, 64, 4, 2, 16, 128, 151936, true), "qwen3"});
    v.push_back({"dense-1b", shape("llama", 16, 2048, 32, 8, 64, 8192, 128256, true), "llama3"});
    v.push_back({"dense-8b", shape("llama", 32, 4096, 32, 8, 128, 14336, 128256, false), "llama3"});
    v.push_back({"moe-30b-a3b", with_experts(shape("qwen3moe", 48, 2048, 32, 4, 128, 0, 151936, false), 128, 8, 768, 0), "qwen3"});
    v.push_back({"flint-like", with_experts(shape("flint", 49, 2048, 16, 4, 128, 6144, 151936, false), 176, 6, 768, 2), "qwen3"});
    return v;
  }();
  return p;
}

const Preset& preset(const std::string& name) { return find_named(presets(), name, "preset"); }

Preset first_layers(const Preset& p, int n) {
  if (n < 1 || n > p.desc.n_layers)
    throw Error("preset " + p.name + " has " + std::to_string(p.desc.n_layers) + " layers; cannot keep " +
                std::to_string(n));
  Preset q = p;
  q.desc.n_layers = n;
  q.desc.layers.resize(size_t(n));
  return q;
}

void generate_model(const Preset& p, const std::string& mix_name, const std::string& tokenizer_dir,
                    const std::string& out_path, uint64_t seed, ThreadPool& pool, bool progress) {
  const QuantMix& mix = quant_mix(mix_name);
  const ModelDesc& d = p.desc;
  std::vector<ExportTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> ne, bool ones) {
    ExportTensor t;
    t.name = name;
    t.ne = ne;
    t.type = tensor_type(mix, tensor_role(name, d.tied_embeddings), ne[0]);
    const uint64_t tensor_seed = seed * 0x100000001b3ull + std::hash<std::string>{}(name);
    const int64_t k = ne[0];
    // Matrices: N(0, 0.02). Norm weights: 1 + N(0, 0.02), as trained norms sit near one.
    t.rows = [tensor_seed, k, ones](int64_t r0, int64_t r1, float* dst) {
      for (int64_t r = r0; r < r1; ++r) {
        RowRng rng(tensor_seed ^ (uint64_t(r) * 0xd1342543de82ef95ull));
        float* row = dst + (r - r0) * k;
        for (int64_t i = 0; i < k; i += 2) {
          float a, b;
          rng.normal2(a, b);
          row[i] = 0.02f * a + (ones ? 1.0f : 0.0f);
          if (i + 1 < k) row[i + 1] = 0.02f * b + (ones ? 1.0f : 0.0f);
        }
      }
    };
    tensors.push_back(std::move(t));
  };
  const int64_t H = d.hidden;
  add("token_embd.weight", {H, d.vocab}, false);
  for (int l = 0; l < d.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", {H}, true);
    add(b + "attn_q.weight", {H, d.q_dim()}, false);
    add(b + "attn_k.weight", {H, d.kv_dim()}, false);
    add(b + "attn_v.weight", {H, d.kv_dim()}, false);
    add(b + "attn_output.weight", {d.q_dim(), H}, false);
    if (d.qk_norm) {
      add(b + "attn_q_norm.weight", {d.head_dim}, true);
      add(b + "attn_k_norm.weight", {d.head_dim}, true);
    }
    add(b + "ffn_norm.weight", {H}, true);
    if (d.layers[size_t(l)].moe) {
      add(b + "ffn_gate_inp.weight", {H, d.n_experts}, false);
      add(b + "ffn_gate_exps.weight", {H, d.expert_ffn, d.n_experts}, false);
      add(b + "ffn_up_exps.weight", {H, d.expert_ffn, d.n_experts}, false);
      add(b + "ffn_down_exps.weight", {d.expert_ffn, H, d.n_experts}, false);
    } else {
      add(b + "ffn_gate.weight", {H, d.ffn}, false);
      add(b + "ffn_up.weight", {H, d.ffn}, false);
      add(b + "ffn_down.weight", {d.ffn, H}, false);
    }
  }
  add("output_norm.weight", {H}, true);
  if (!d.tied_embeddings) add("output.weight", {H, d.vocab}, false);

  ExportOptions opt;
  opt.name = p.name + "-" + mix.name;
  opt.progress = progress;
  if (!tokenizer_dir.empty()) {
    auto tok = std::make_shared<Tokenizer>(Tokenizer::from_hf_path(tokenizer_dir));
    if (tok->vocab_size() > d.vocab)
      throw Error("tokenizer has " + std::to_string(tok->vocab_size()) + " tokens, more than the preset's vocabulary");
    // A generation_config.json beside the tokenizer gives the model default sampling.
    opt.extra_metadata = [tok, vocab = d.vocab, sampling = sampling_defaults_in_folder(tokenizer_dir)](gguf::Writer& w) {
      tok->write_gguf(w, vocab);
      write_sampling_defaults(w, sampling);
    };
  }
  export_gguf(out_path, d, tensors, opt, pool);
}

}  // namespace ember
