// Drafts from a second, smaller model with the same tokenizer (the "draft
// model"): it decodes a few tokens greedily ahead of the model being served,
// which then checks them all in one step (engine/drafter.h).
//
// The draft model runs on a backend of its own, through the same interface as
// the engine's, with its own KV blocks: each drafting sequence keeps its
// positions there from one step to the next, so a step's draft costs the
// draft model a catch-up over the tokens it has not seen (the prompt the first
// time; then the tokens kept and the new one) and one step per further draft
// token, all sequences batched together. Positions past the tokens kept are
// simply computed again. A sequence longer than the draft model's context, or
// one for which no block is free even after dropping sequences not drafting
// now, gets no draft.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/backend.h"
#include "engine/block_allocator.h"
#include "engine/drafter.h"

namespace ember {

class ModelDrafter final : public Drafter {
 public:
  // `backend` runs the draft model (which it references: keep `model` alive
  // with it; both are owned here). vocab: the served model's vocabulary,
  // which the draft model's must equal (throws ember::Error otherwise).
  ModelDrafter(std::unique_ptr<Model> model, std::unique_ptr<Backend> backend, int vocab);
  ~ModelDrafter() override;
  const char* name() const override { return "model"; }
  void propose(std::span<DraftRequest> requests) override;
  void forget(uint64_t seq_id) override;
  bool costly() const override { return true; }
  // Sequences whose positions were dropped to make room for another's, and
  // drafts not made for want of a free block.
  int64_t dropped() const { return dropped_; }
  int64_t starved() const { return starved_; }

 private:
  struct SeqState {
    std::vector<int32_t> tokens;  // what the draft model has computed, position by position
    std::vector<int32_t> blocks;  // its block table in the draft backend
    uint64_t used = 0;            // the propose() call that used it last
  };
  void release(SeqState& s);
  bool grow(SeqState& s, int64_t positions);

  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> backend_;
  BlockAllocator blocks_;
  std::unordered_map<uint64_t, SeqState> seqs_;
  uint64_t calls_ = 0;
  int64_t dropped_ = 0, starved_ = 0;
  StepBatch batch_;
  std::vector<size_t> in_batch_;  // the request of each batch entry
  std::vector<SeqState*> states_;  // of each request (null: no draft)
  std::vector<int> limits_;        // of each request: its draft's length at most
};

}  // namespace ember
