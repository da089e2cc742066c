#include "model/model.h"

#include <filesystem>

#include "model/architectures.h"
#include "model/loaders.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/limits.h"

namespace ember {

namespace {

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Binds tensors by GGUF name to the roles of the forward pass, checking shapes.
class Binder {
 public:
  Binder(const TensorSource& src, const std::string& file) : src_(src), file_(file) {}

  const SourceTensor* get(const std::string& name, bool required) const {
    const SourceTensor* t = src_.find(name);
    if (!t && required) throw Error(file_ + ": missing tensor '" + name + "'");
    return t;
  }

  void expect_shape(const SourceTensor& t, std::vector<int64_t> ne) const {
    if (t.ne != ne)
      throw Error(file_ + ": tensor '" + t.name + "' has shape " + shape_str(t.ne) + ", expected " + shape_str(ne));
  }

  Matrix matrix(const std::string& name, int64_t k, int64_t rows, bool required = true) const {
    const SourceTensor* t = get(name, required);
    if (!t) return {};
    expect_shape(*t, {k, rows});
    return to_matrix(*t, 0);
  }

  ExpertMatrices experts(const std::string& name, int64_t k, int64_t rows, int64_t n) const {
    const SourceTensor* t = get(name, true);
    expect_shape(*t, {k, rows, n});
    ExpertMatrices e;
    for (int64_t i = 0; i < n; ++i) e.experts.push_back(to_matrix(*t, size_t(i)));
    return e;
  }

  std::vector<float> vec(const std::string& name, int64_t n, bool required = true) const {
    const SourceTensor* t = get(name, required);
    if (!t) return {};
    expect_shape(*t, {n});
    if (!quant::can_dequantize(t->type) || n % type_info(t->type).block_elems != 0)
      throw Error(file_ + ": tensor '" + t->name + "' has type " + type_name(t->type) + ", which ember cannot read as a vector");
    std::vector<float> v(static_cast<size_t>(n));
    quant::dequantize_row(t->type, t->parts[0], v.data(), n);
    return v;
  }

 private:
  Matrix to_matrix(const SourceTensor& t, size_t part) const {
    const TypeInfo ti = type_info(t.type);
    if (!ti.known || t.ne[0] % ti.block_elems != 0)
      throw Error(file_ + ": tensor '" + t.name + "' row length " + std::to_string(t.ne[0]) +
                  " is not a multiple of its type's block size");
    if (!quant::can_dequantize(t.type))
      throw Error(file_ + ": tensor '" + t.name + "' has type " + type_name(t.type) + ", which ember cannot compute with");
    Matrix m;
    m.type = t.type;
    m.data = t.parts[part];
    m.k = t.ne[0];
    m.rows = t.ne.size() > 1 ? t.ne[1] : 1;
    m.row_stride = row_bytes(t.type, m.k);
    return m;
  }

  const TensorSource& src_;
  std::string file_;
};

}  // namespace

Weights bind_weights(ModelDesc& d, const TensorSource& src, const std::string& path) {
  const Binder b(src, path);
  const SourceTensor* embd = b.get("token_embd.weight", true);
  if (embd->ne.size() != 2 || embd->ne[0] != d.hidden)
    throw Error(path + ": tensor 'token_embd.weight' has shape " + shape_str(embd->ne) + ", expected [" +
                std::to_string(d.hidden) + ", vocab]");
  if (embd->ne[1] < 1 || embd->ne[1] > limits::kMaxVocab)
    throw Error(path + ": tensor 'token_embd.weight' has " + std::to_string(embd->ne[1]) +
                " rows (vocabulary), outside 1 .. " + std::to_string(limits::kMaxVocab));
  if (d.vocab != 0 && d.vocab != embd->ne[1])
    throw Error(path + ": vocabulary size " + std::to_string(d.vocab) + " differs from token_embd rows " +
                std::to_string(embd->ne[1]));
  d.vocab = int(embd->ne[1]);
  d.validate();  // before anything below is sized from the descriptor
  if (const SourceTensor* rf = src.find("rope_freqs.weight")) {
    b.expect_shape(*rf, {d.head_dim / 2});
    d.rope_freq_factors = b.vec("rope_freqs.weight", d.head_dim / 2);
    d.validate();
  }
  d.tied_embeddings = !src.find("output.weight");

  Weights w;
  w.token_embd = b.matrix("token_embd.weight", d.hidden, d.vocab);
  w.output = d.tied_embeddings ? w.token_embd : b.matrix("output.weight", d.hidden, d.vocab);
  w.output_norm = b.vec("output_norm.weight", d.hidden);
  w.layers.resize(size_t(d.n_layers));
  for (int i = 0; i < d.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& L = w.layers[size_t(i)];
    const LayerDesc& ld = d.layers[size_t(i)];
    L.attn_norm = b.vec(p + "attn_norm.weight", d.hidden);
    L.wq = b.matrix(p + "attn_q.weight", d.hidden, d.q_dim());
    L.wk = b.matrix(p + "attn_k.weight", d.hidden, d.kv_dim());
    L.wv = b.matrix(p + "attn_v.weight", d.hidden, d.kv_dim());
    L.wo = b.matrix(p + "attn_output.weight", d.q_dim(), d.hidden);
    if (d.qkv_bias) {
      L.bq = b.vec(p + "attn_q.bias", d.q_dim());
      L.bk = b.vec(p + "attn_k.bias", d.kv_dim());
      L.bv = b.vec(p + "attn_v.bias", d.kv_dim());
    }
    if (d.qk_norm) {
      L.q_norm = b.vec(p + "attn_q_norm.weight", d.head_dim);
      L.k_norm = b.vec(p + "attn_k_norm.weight", d.head_dim);
    }
    if (d.post_attn_norm) L.post_attn_norm = b.vec(p + "post_attention_norm.weight", d.hidden);
    if (d.post_ffn_norm) L.post_ffn_norm = b.vec(p + "post_ffw_norm.weight", d.hidden);
    L.ffn_norm = b.vec(p + "ffn_norm.weight", d.hidden);
    if (ld.moe) {
      L.router = b.matrix(p + "ffn_gate_inp.weight", d.hidden, d.n_experts);
      L.gate_exps = b.experts(p + "ffn_gate_exps.weight", d.hidden, d.expert_ffn, d.n_experts);
      L.up_exps = b.experts(p + "ffn_up_exps.weight", d.hidden, d.expert_ffn, d.n_experts);
      L.down_exps = b.experts(p + "ffn_down_exps.weight", d.expert_ffn, d.hidden, d.n_experts);
    } else {
      if (d.ffn <= 0) throw Error(path + ": dense FFN width (feed_forward_length) is missing");
      L.ffn_gate = b.matrix(p + "ffn_gate.weight", d.hidden, d.ffn);
      L.ffn_up = b.matrix(p + "ffn_up.weight", d.hidden, d.ffn);
      L.ffn_down = b.matrix(p + "ffn_down.weight", d.ffn, d.hidden);
    }
  }
  return w;
}

std::unique_ptr<Model> Model::load(const std::string& path) {
  return from_files(std::filesystem::is_directory(path) ? load_hf_folder(path) : load_gguf_files(path), path);
}

std::unique_ptr<Model> Model::from_files(LoadedFiles files, const std::string& path) {
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  m->desc_ = std::move(files.desc);
  m->source_ = std::move(files.source);
  m->gguf_ = std::move(files.gguf);
  m->weights_ = bind_weights(m->desc_, *m->source_, path);
  return m;
}

uint64_t Model::weight_bytes_per_token() const {
  const ModelDesc& d = desc_;
  uint64_t n = weights_.output.bytes() + weights_.token_embd.row_stride;
  for (int i = 0; i < d.n_layers; ++i) {
    const LayerWeights& L = weights_.layers[size_t(i)];
    n += L.wq.bytes() + L.wk.bytes() + L.wv.bytes() + L.wo.bytes();
    n += L.ffn_gate.bytes() + L.ffn_up.bytes() + L.ffn_down.bytes() + L.router.bytes();
    if (L.gate_exps.present())
      n += uint64_t(d.n_experts_used) *
           (L.gate_exps.experts[0].bytes() + L.up_exps.experts[0].bytes() + L.down_exps.experts[0].bytes());
  }
  return n;
}

uint64_t Model::total_weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : source_->tensors()) n += t.nbytes();
  return n;
}

}  // namespace ember
