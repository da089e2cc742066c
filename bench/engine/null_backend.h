// A backend that computes nothing, for measuring the engine's own cost per
// step on the host (scheduling, block tables, sampling bookkeeping, delivery
// to the request streams). It borrows a real backend's model, limits and KV
// layout, answers each step at once, and never touches the KV blocks.
// A real backend's forward() blocks the engine until the device has finished,
// so on a GPU this cost adds to every step's time; it is what overlapping the
// host's work with the device's would win back.
#pragma once
#include <vector>

#include "engine/backend.h"
#include "engine/step_batch.h"
#include "model/model.h"

namespace ember::bench {

class NullBackend final : public Backend {
 public:
  explicit NullBackend(const Backend& real) : real_(real) {}
  const char* name() const override { return "null"; }
  const Model& model() const override { return real_.model(); }
  const StepLimits& limits() const override { return real_.limits(); }
  const KvConfig& kv_config() const override { return real_.kv_config(); }
  void copy_kv_block(int, int, int) override {}
  void read_kv_block(int, void*) override {}
  void write_kv_block(int, const void*) override {}

  // Greedy picks are ordinary tokens (ids 1000-1099, by position: the id after position p is 1000 + (p + 1) % 100); logit rows are zeros.
  const float* forward(const StepBatch& batch) override {
    const size_t rows = size_t(batch.logit_rows()) * size_t(model().desc().vocab);
    if (logits_.size() < rows) logits_.resize(rows, 0.0f);
    ids_.clear();
    for (const SeqStep& s : batch.seqs)  // a pick for each picked row: the last token's, or every token's (AllPicked)
      for (int64_t k = s.n_tokens - s.picked_rows(); k < s.n_tokens; ++k) ids_.push_back(int32_t(1000 + (s.pos + k + 1) % 100));
    return logits_.data();
  }
  const int32_t* picked_ids() const override { return ids_.data(); }

 private:
  const Backend& real_;
  std::vector<float> logits_;
  std::vector<int32_t> ids_;
};

}  // namespace ember::bench
