// The CPU backend: one forward step for a batch of sequences.
//
// All scratch memory is sized at construction for the largest step the caller
// will form (max_tokens new tokens, max_logit_rows logit rows, max_context
// positions), so forward() allocates nothing.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/kv_pool.h"
#include "engine/step_batch.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace ember {

struct CpuBackendOptions {
  int max_tokens = 512;      // new tokens in one step, all sequences together
  int max_logit_rows = 64;   // logit rows one step may ask for
  int max_context = 4096;    // longest sequence
  int n_threads = 0;         // 0: all hardware threads
};

class CpuBackend {
 public:
  CpuBackend(const Model& model, const CpuBackendOptions& opt);

  // Runs one step; returns logit rows (vocab floats each) in batch order:
  // for each sequence, none, its last token's, or all of its tokens'.
  const float* forward(const StepBatch& batch, KvPool& kv);

  const Model& model() const { return model_; }
  ThreadPool& pool() { return pool_; }
  const CpuBackendOptions& options() const { return opt_; }

 private:
  struct Scratch {
    std::vector<float> x, xn, q, k, v, attn, proj, gate, up, logits;
    std::vector<float> scores;        // per thread: max_context
    std::vector<uint8_t> act;         // converted activation rows for the matmuls
    std::vector<int32_t> positions;   // per token
    std::vector<int32_t> seq_of;      // per token: index of its sequence
    std::vector<int32_t> logit_rows;  // token indices whose logits are wanted
    // Mixture of experts.
    std::vector<float> router, route_scores, expert_w, moe_in, moe_gate, moe_up, moe_out;
    std::vector<int32_t> expert_ids, expert_count, expert_offset, expert_tokens;
    std::vector<float> expert_token_w;
  };

  void norm_rows(const std::vector<float>& weight, int64_t n_tok);       // xn = rmsnorm(x) * weight
  void add_residual(const std::vector<float>& post_norm, int64_t n_tok); // x += [rmsnorm](proj)
  void attention_layer(int layer, const StepBatch& batch, KvPool& kv, int64_t n_tok);
  void dense_ffn(int layer, int64_t n_tok);
  void moe_ffn(int layer, int64_t n_tok);

  const Model& model_;
  CpuBackendOptions opt_;
  ThreadPool pool_;
  Scratch s_;
  std::vector<std::vector<double>> inv_freq_;  // per layer: RoPE inverse frequencies
};

}  // namespace ember
