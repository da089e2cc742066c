// Speculative decoding's policy: which sequences of a planned step feed a
// draft beside their next token, and how long a draft may be (the engine's
// verify() in engine_core.cpp is the mechanism that keeps or drops it).
//
// Drafts take only what the planned step leaves: tokens of the step's budget
// and logit rows that no decoding token or prompt chunk took, and KV blocks
// that are free (a draft never evicts a cached prefix or preempts anyone). A
// sequence drafts when it decodes one token this step (not its prompt, not
// its finishing step), at most opt.draft_tokens, and never past what it may
// still generate or past the context.
//
// A request with a predicted output drafts from it first (engine/prediction.h,
// up to opt.prediction_tokens, also where drafts are otherwise off); where the
// answer is not on its prediction, the drafter is asked as for any other.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/drafter.h"
#include "engine/kv_manager.h"
#include "engine/scheduler.h"

namespace ember {

struct DraftLimits {
  int draft_tokens = 0;       // at most this many a sequence and step from the drafter (0: off)
  int prediction_tokens = 0;  // at most this many from a request's prediction (0: predictions not used)
  int step_tokens = 0;     // the step's token budget
  int max_logit_rows = 0;  // the step's logit rows
  int64_t max_context = 0;
  int vocab = 0;           // draft ids must be below it
};

class DraftPlanner {
 public:
  // `drafter` may be null where lim.draft_tokens is 0 (only predictions draft).
  DraftPlanner(std::shared_ptr<Drafter> drafter, KvManager& kv, const DraftLimits& lim, int max_running);
  // Whether the sequence drafts from a prediction (it has one, and they are used).
  bool from_prediction(const Sequence& s) const;
  // The longest draft the sequence may feed a step.
  int longest_draft(const Sequence& s) const {
    return std::max(lim_.draft_tokens, from_prediction(s) ? lim_.prediction_tokens : 0);
  }
  // Whether the sequence would be offered a draft when it next decodes in a
  // step of `decoding` sequences decoding one token each (which leave room or not).
  bool may_draft(const Sequence& s, int decoding) const;
  // What the drafter's verified draft brought: `kept` of its tokens (the waits of may_draft).
  void outcome(Sequence& s, int kept) const;
  // Lengthens the planned step's decoding entries by their drafts: sets
  // n_draft, n_tokens = 1 + n_draft, logits All, and the sequence's `fed`
  // (its next token, then the draft). Returns the draft tokens planned.
  int plan(std::vector<PlannedSeq>& plan);
  // The sequence left the engine: the drafter forgets it.
  void forget(const Sequence& s) {
    if (drafter_) drafter_->forget(s.id);
  }

 private:
  std::shared_ptr<Drafter> drafter_;
  KvManager& kv_;
  DraftLimits lim_;
  std::vector<DraftRequest> requests_;  // sized at construction: planning allocates nothing
  std::vector<size_t> entries_;         // the plan entry of each request
  std::vector<DraftRequest> to_drafter_;  // the requests no prediction drafted
  std::vector<size_t> to_drafter_at_;     // their index in requests_
  static constexpr int kLookEvery = 4;    // tokens between looks for an answer that left its prediction
  static constexpr int kMaxWaitDoublings = 3;  // a drafter without results waits at most 2^3 = 8 tokens
};

}  // namespace ember
