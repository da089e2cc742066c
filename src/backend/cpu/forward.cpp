// The CPU forward pass. Reads top to bottom like the model's math:
// embed -> for each layer: attention block, FFN block (dense or experts) -> norm -> output head.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/rope.h"
#include "quant/quant.h"
#include "util/error.h"

namespace ember {

using cpu::matmul;

namespace {

// Every matrix must be in a format this backend multiplies; say which is not, at load.
void check_formats(const Weights& w) {
  auto check = [](const Matrix& m, const std::string& what) {
    if (m.present() && !quant::can_dequantize(m.type))
      throw Error("the CPU backend has no product for " + what + " in format " + type_name(m.type));
  };
  check(w.token_embd, "the token embedding");
  check(w.output, "the output head");
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string at = " of layer " + std::to_string(l);
    for (const auto& [m, name] : {std::pair{&L.wq, "wq"}, {&L.wk, "wk"}, {&L.wv, "wv"}, {&L.wo, "wo"},
                                  {&L.ffn_gate, "ffn_gate"}, {&L.ffn_up, "ffn_up"}, {&L.ffn_down, "ffn_down"},
                                  {&L.router, "the router"}})
      check(*m, std::string(name) + at);
    for (const ExpertMatrices* e : {&L.gate_exps, &L.up_exps, &L.down_exps})
      for (const Matrix& m : e->experts) check(m, "an expert matrix" + at);
  }
}

}  // namespace

CpuBackend::CpuBackend(const Model& model, const StepLimits& limits, const KvConfig& kv, int n_threads)
    : model_(model), lim_(limits), pool_(n_threads), kv_(model.desc(), kv) {
  const ModelDesc& d = model.desc();
  const Weights& w = model.weights();
  const StepLimits& opt = lim_;
  const size_t T = size_t(opt.max_tokens), H = size_t(d.hidden);
  if (opt.max_tokens <= 0 || opt.max_logit_rows <= 0 || opt.max_context <= 0)
    throw Error("CPU backend: token, logit-row and context limits must be positive");
  check_formats(w);
  s_.x.resize(T * H);
  s_.xn.resize(T * H);
  s_.proj.resize(T * H);
  s_.q.resize(T * size_t(d.q_dim()));
  s_.attn.resize(T * size_t(d.q_dim()));
  s_.k.resize(T * size_t(d.kv_dim()));
  s_.v.resize(T * size_t(d.kv_dim()));
  s_.gate.resize(T * size_t(std::max(d.ffn, 1)));
  s_.up.resize(T * size_t(std::max(d.ffn, 1)));
  s_.logits.resize(size_t(opt.max_logit_rows) * size_t(d.vocab));
  s_.scores.resize(size_t(pool_.size()) * size_t(d.n_heads / d.n_kv_heads) * size_t(opt.max_context));
  s_.rope.resize(size_t(pool_.size()) * size_t(d.head_dim));
  s_.positions.resize(T);
  s_.seq_of.resize(T);
  s_.logit_rows.resize(T);
  s_.picked_ids.resize(size_t(opt.max_logit_rows));
  s_.pick = PickScratch(int(d.vocab));

  // Activation conversion buffer: the largest any matrix of a step needs.
  size_t act = cpu::activation_bytes(w.output, opt.max_logit_rows);
  for (const auto& L : w.layers) {
    for (const Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.router})
      if (m->present()) act = std::max(act, cpu::activation_bytes(*m, opt.max_tokens));
    for (const ExpertMatrices* e : {&L.gate_exps, &L.up_exps, &L.down_exps})
      if (e->present()) act = std::max(act, cpu::activation_bytes(e->experts[0], opt.max_tokens));
  }
  s_.act.resize(act);

  if (d.n_experts > 0) {
    const size_t K = size_t(d.n_experts_used), E = size_t(d.n_experts), EF = size_t(d.expert_ffn);
    s_.router.resize(T * E);
    s_.route_scores.resize(E);
    s_.expert_ids.resize(T * K);
    s_.expert_w.resize(T * K);
    s_.expert_count.resize(E);
    s_.expert_offset.resize(E + 1);
    s_.expert_tokens.resize(T * K);
    s_.expert_token_w.resize(T * K);
    s_.moe_in.resize(T * H);
    s_.moe_gate.resize(T * EF);
    s_.moe_up.resize(T * EF);
    s_.moe_out.resize(T * H);
  }

  inv_freq_.resize(size_t(d.n_layers));
  for (int l = 0; l < d.n_layers; ++l) inv_freq_[size_t(l)] = d.rope_inverse_frequencies(l);
}

void CpuBackend::copy_kv_block(int src, int dst, int n_positions) { kv_.copy_block(src, dst, n_positions); }
void CpuBackend::read_kv_block(int block, void* host) { kv_.read_block(block, host); }
void CpuBackend::write_kv_block(int block, const void* host) { kv_.write_block(block, host); }

const float* CpuBackend::forward(const StepBatch& batch) {
  const ModelDesc& d = model_.desc();
  const Weights& w = model_.weights();
  const int64_t H = d.hidden;
  check_step_batch(batch, lim_, kv_.config(), d.vocab);
  const int64_t n_tok = batch.total_tokens();
  // The rows that come back first, then those only picked from (LastPicked, AllPicked).
  const int64_t n_back = batch.logit_rows(), n_rows = n_back + batch.picked_rows();

  // Per-token bookkeeping.
  int64_t t = 0, r = 0, ra = n_back;
  for (size_t si = 0; si < batch.seqs.size(); ++si) {
    const SeqStep& s = batch.seqs[si];
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      s_.positions[size_t(t)] = int32_t(s.pos + i);
      s_.seq_of[size_t(t)] = int32_t(si);
      if (s.returns_row(i)) s_.logit_rows[size_t(r++)] = int32_t(t);
      if (s.picks_row(i)) s_.logit_rows[size_t(ra++)] = int32_t(t);
    }
  }

  // Embedding lookup (rows dequantised from the file's format), scaled where the family scales it.
  {
    int64_t tt = 0;
    for (const SeqStep& s : batch.seqs)
      for (int i = 0; i < s.n_tokens; ++i, ++tt) {
        float* xr = s_.x.data() + tt * H;
        quant::dequantize_row(w.token_embd.type, w.token_embd.row(s.tokens[i]), xr, H);
        if (d.embed_scale != 1.0f)
          for (int64_t j = 0; j < H; ++j) xr[j] *= d.embed_scale;
      }
  }

  for (int l = 0; l < d.n_layers; ++l) {
    attention_layer(l, batch, n_tok);
    if (d.layers[size_t(l)].moe) {
      moe_ffn(l, n_tok);
    } else {
      dense_ffn(l, n_tok);
    }
  }

  // Final norm on the rows whose logits are wanted, then the output head.
  for (int64_t i = 0; i < n_rows; ++i)
    cpu::rmsnorm(s_.x.data() + int64_t(s_.logit_rows[size_t(i)]) * H, w.output_norm.data(), s_.xn.data() + i * H, H,
                 d.norm_eps);
  matmul(pool_, w.output, s_.xn.data(), n_rows, s_.logits.data(), d.vocab, s_.act.data());
  if (d.final_softcap > 0)
    for (int64_t i = 0; i < n_rows * d.vocab; ++i) s_.logits[size_t(i)] = cpu::softcap(s_.logits[size_t(i)], d.final_softcap);
  const int pick_vocab = batch.pick_vocab > 0 ? batch.pick_vocab : int(d.vocab);
  int64_t i = n_back;
  for (const SeqStep& s : batch.seqs)
    for (int64_t k = 0; k < s.picked_rows(); ++k, ++i)
      s_.picked_ids[size_t(i - n_back)] = pick_id(s_.logits.data() + i * d.vocab, pick_vocab, s.pick_of_row(int(k)), s_.pick);
  return s_.logits.data();
}

void CpuBackend::norm_rows(const std::vector<float>& weight, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const int64_t H = d.hidden;
  pool_.parallel_for(n_tok, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) cpu::rmsnorm(s_.x.data() + t * H, weight.data(), s_.xn.data() + t * H, H, d.norm_eps);
  }, 16);
}

void CpuBackend::add_residual(const std::vector<float>& post_norm, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const int64_t H = d.hidden;
  pool_.parallel_for(n_tok, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      float* p = s_.proj.data() + t * H;
      if (!post_norm.empty()) cpu::rmsnorm(p, post_norm.data(), p, H, d.norm_eps);
      float* x = s_.x.data() + t * H;
      for (int64_t j = 0; j < H; ++j) x[j] += p[j];
    }
  }, 16);
}

void CpuBackend::attention_layer(int l, const StepBatch& batch, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const LayerWeights& L = model_.weights().layers[size_t(l)];
  const LayerDesc& ld = d.layers[size_t(l)];
  const int64_t H = d.hidden, QD = d.q_dim(), KVD = d.kv_dim(), hd = d.head_dim;

  norm_rows(L.attn_norm, n_tok);
  cpu::matmul_many(pool_, {{&L.wq, s_.q.data(), QD}, {&L.wk, s_.k.data(), KVD}, {&L.wv, s_.v.data(), KVD}},
                   s_.xn.data(), n_tok, s_.act.data());

  // Per token: biases, q/k norms, RoPE, then store k and v in the sequence's KV blocks.
  const int bs = kv_.config().block_size;
  pool_.parallel_for(n_tok, [&](int64_t b, int64_t e, int thread) {
    float* cos_a = s_.rope.data() + size_t(thread) * size_t(hd);
    float* sin_a = cos_a + hd / 2;
    for (int64_t t = b; t < e; ++t) {
      float* q = s_.q.data() + t * QD;
      float* k = s_.k.data() + t * KVD;
      float* v = s_.v.data() + t * KVD;
      if (d.qkv_bias) {
        for (int64_t i = 0; i < QD; ++i) q[i] += L.bq[size_t(i)];
        for (int64_t i = 0; i < KVD; ++i) { k[i] += L.bk[size_t(i)]; v[i] += L.bv[size_t(i)]; }
      }
      if (d.qk_norm) {
        for (int h = 0; h < d.n_heads; ++h) cpu::rmsnorm(q + h * hd, L.q_norm.data(), q + h * hd, hd, d.norm_eps);
        for (int h = 0; h < d.n_kv_heads; ++h) cpu::rmsnorm(k + h * hd, L.k_norm.data(), k + h * hd, hd, d.norm_eps);
      }
      const int64_t pos = s_.positions[size_t(t)];
      cpu::rope_angles(pos, inv_freq_[size_t(l)].data(), int(hd / 2), cos_a, sin_a);
      for (int h = 0; h < d.n_heads; ++h) cpu::rope_head(q + h * hd, int(hd / 2), cos_a, sin_a, d.rope_pairing);
      for (int h = 0; h < d.n_kv_heads; ++h) cpu::rope_head(k + h * hd, int(hd / 2), cos_a, sin_a, d.rope_pairing);
      const SeqStep& s = batch.seqs[size_t(s_.seq_of[size_t(t)])];
      const int block = s.blocks[pos / bs];
      kv_.store(l, block, int(pos % bs), k, v);
    }
  }, 4);

  // Attention: one task per (token, key/value head), covering the query heads that share it.
  const int group = d.n_heads / d.n_kv_heads;
  const float scale = d.attention_scale();
  pool_.parallel_for(n_tok * d.n_kv_heads, [&](int64_t b, int64_t e, int thread) {
    float* scores = s_.scores.data() + size_t(thread) * size_t(group) * size_t(lim_.max_context);
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / d.n_kv_heads;
      const int g = int(i % d.n_kv_heads);
      const SeqStep& s = batch.seqs[size_t(s_.seq_of[size_t(t)])];
      const int64_t pos = s_.positions[size_t(t)];
      cpu::AttentionArgs a;
      a.kv = &kv_;
      a.layer = l;
      a.blocks = s.blocks;
      a.kv_head = g;
      a.n_q = group;
      a.head_dim = int(hd);
      a.last = pos;
      a.first = ld.sliding_window > 0 ? std::max<int64_t>(0, pos - ld.sliding_window + 1) : 0;
      a.scale = scale;
      a.softcap = d.attn_softcap;
      const int64_t off = t * QD + int64_t(g) * group * hd;
      cpu::attend_group(a, s_.q.data() + off, s_.attn.data() + off, scores);
    }
  }, 1);

  matmul(pool_, L.wo, s_.attn.data(), n_tok, s_.proj.data(), H, s_.act.data());
  add_residual(L.post_attn_norm, n_tok);
}

void CpuBackend::dense_ffn(int l, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const LayerWeights& L = model_.weights().layers[size_t(l)];
  const int64_t H = d.hidden, F = d.ffn;
  norm_rows(L.ffn_norm, n_tok);
  cpu::matmul_many(pool_, {{&L.ffn_gate, s_.gate.data(), F}, {&L.ffn_up, s_.up.data(), F}}, s_.xn.data(), n_tok,
                   s_.act.data());
  // gate and up are n_tok rows of F with no gap, so the activation runs over
  // the flat range, split across threads even for a single decode token.
  pool_.parallel_for(n_tok * F, [&](int64_t b, int64_t e, int) {
    cpu::gated_activation(d.activation, s_.gate.data() + b, s_.up.data() + b, s_.gate.data() + b, e - b);
  }, 4096);
  matmul(pool_, L.ffn_down, s_.gate.data(), n_tok, s_.proj.data(), H, s_.act.data());
  add_residual(L.post_ffn_norm, n_tok);
}

}  // namespace ember
