// The CPU backend: one forward step for a batch of sequences.
//
// All scratch memory is sized at construction for the largest step the engine
// will form (StepLimits: new tokens, logit rows, context), and the KV blocks
// are reserved once, so forward() allocates nothing.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/kv_storage.h"
#include "engine/backend.h"
#include "engine/step_batch.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace ember {

class CpuBackend final : public Backend {
 public:
  // n_threads 0: all hardware threads.
  CpuBackend(const Model& model, const StepLimits& limits, const KvConfig& kv, int n_threads = 0);

  const char* name() const override { return "cpu"; }
  const Model& model() const override { return model_; }
  const StepLimits& limits() const override { return lim_; }
  const KvConfig& kv_config() const override { return kv_.config(); }
  const float* forward(const StepBatch& batch) override;
  const int32_t* picked_ids() const override { return s_.picked_ids.data(); }
  void copy_kv_block(int src, int dst, int n_positions) override;
  void read_kv_block(int block, void* host) override;
  void write_kv_block(int block, const void* host) override;

  ThreadPool& pool() { return pool_; }

 private:
  struct Scratch {
    std::vector<float> x, xn, q, k, v, attn, proj, gate, up, logits;
    std::vector<float> scores;        // per thread: max_context per query head of a group
    std::vector<float> rope;          // per thread: cos and sin of each frequency
    std::vector<uint8_t> act;         // converted activation rows for the matmuls
    std::vector<int32_t> positions;   // per token
    std::vector<int32_t> seq_of;      // per token: index of its sequence
    std::vector<int32_t> logit_rows;  // token indices whose logits are wanted: rows that come back, then picked rows
    std::vector<int32_t> picked_ids;  // the ids picked from the picked rows (engine/pick.h)
    PickScratch pick;
    // Mixture of experts.
    std::vector<float> router, route_scores, expert_w, moe_in, moe_gate, moe_up, moe_out;
    std::vector<int32_t> expert_ids, expert_count, expert_offset, expert_tokens;
    std::vector<float> expert_token_w;
  };

  void norm_rows(const std::vector<float>& weight, int64_t n_tok);       // xn = rmsnorm(x) * weight
  void add_residual(const std::vector<float>& post_norm, int64_t n_tok); // x += [rmsnorm](proj)
  void attention_layer(int layer, const StepBatch& batch, int64_t n_tok);
  void dense_ffn(int layer, int64_t n_tok);
  void moe_ffn(int layer, int64_t n_tok);

  const Model& model_;
  StepLimits lim_;
  ThreadPool pool_;
  cpu::KvStorage kv_;
  Scratch s_;
  std::vector<std::vector<double>> inv_freq_;  // per layer: RoPE inverse frequencies
};

}  // namespace ember
