#include "engine/speculation.h"

#include <algorithm>

#include "engine/prediction.h"
#include "util/error.h"

namespace ember {

DraftPlanner::DraftPlanner(std::shared_ptr<Drafter> drafter, KvManager& kv, const DraftLimits& lim, int max_running)
    : drafter_(std::move(drafter)), kv_(kv), lim_(lim) {
  if (lim.draft_tokens <= 0 && lim.prediction_tokens <= 0)
    throw Error("speculative decoding needs at least one draft token a step");
  if (lim.draft_tokens > 0 && !drafter_) throw Error("speculative decoding needs a drafter");
  for (auto* v : {&requests_, &to_drafter_}) v->reserve(size_t(max_running));
  for (auto* v : {&entries_, &to_drafter_at_}) v->reserve(size_t(max_running));
}

bool DraftPlanner::may_draft(const Sequence& s, int decoding) const {
  return longest_draft(s) > 0 && std::min(lim_.step_tokens, lim_.max_logit_rows) > decoding &&
         s.state == Sequence::State::Running &&
         s.pending() == 1 && s.generated + 1 < s.req.max_tokens && int64_t(s.tokens.size()) + 1 < lim_.max_context;
}

int DraftPlanner::plan(std::vector<PlannedSeq>& plan) {
  int tokens = lim_.step_tokens, rows = lim_.max_logit_rows;
  for (const PlannedSeq& p : plan) {
    tokens -= p.n_tokens;
    rows -= int(p.logits == LogitsWanted::All ? p.n_tokens : p.logits == LogitsWanted::None ? 0 : 1);
  }
  // Every decoding sequence asks (a costly drafter: those the room holds,
  // each counted at its most); the room is then shared out oldest first, as
  // the scheduler plans, by the drafts actually made.
  requests_.clear();
  entries_.clear();
  int room = std::min(tokens, rows);
  if (room <= 0) return 0;
  int asked = 0;
  const bool costly = drafter_ && drafter_->costly();
  for (size_t i = 0; i < plan.size() && !(costly && asked >= room); ++i) {
    const PlannedSeq& p = plan[i];
    Sequence& s = *p.seq;
    if (p.n_tokens != 1 || p.logits != LogitsWanted::Last || !may_draft(s, 0)) continue;
    // A step yields at most 1 + n tokens: no draft past max_tokens or the context.
    const int64_t left = std::min<int64_t>(s.req.max_tokens - s.generated, lim_.max_context - int64_t(s.tokens.size())) - 1;
    const int max = int(std::min<int64_t>({longest_draft(s), left, costly ? room - asked : room}));
    if (max <= 0) continue;
    DraftRequest r;
    r.seq_id = s.id;
    r.tokens = s.tokens;
    r.capacity = int64_t(s.tokens.capacity());
    r.max_tokens = max;
    r.out = s.fed.data() + 1;
    requests_.push_back(r);
    entries_.push_back(i);
    asked += max;
  }
  if (requests_.empty()) return 0;
  // Predictions first; the drafter drafts for the rest.
  to_drafter_.clear();
  to_drafter_at_.clear();
  for (size_t k = 0; k < requests_.size(); ++k) {
    DraftRequest& r = requests_[k];
    Sequence& s = *plan[entries_[k]].seq;
    r.n = s.req.prediction.empty() ? 0
                                   : draft_from_prediction(s.req.prediction, s.tokens, s.n_prompt, s.prediction_at,
                                                           std::min(r.max_tokens, lim_.prediction_tokens), r.out);
    s.draft_from_prediction = r.n > 0;
    if (r.n == 0 && lim_.draft_tokens > 0) {
      to_drafter_.push_back(r);
      to_drafter_.back().max_tokens = std::min(r.max_tokens, lim_.draft_tokens);
      to_drafter_at_.push_back(k);
    }
  }
  if (!to_drafter_.empty()) drafter_->propose(to_drafter_);
  for (size_t i = 0; i < to_drafter_.size(); ++i) requests_[to_drafter_at_[i]].n = to_drafter_[i].n;
  int planned = 0;
  for (size_t k = 0; k < requests_.size() && room > 0; ++k) {
    PlannedSeq& p = plan[entries_[k]];
    Sequence& s = *p.seq;
    int n = std::clamp(requests_[k].n, 0, std::min(requests_[k].max_tokens, room));
    // A drafter's id outside the vocabulary would fail the whole step: the draft ends before it.
    for (int i = 0; i < n; ++i)
      if (s.fed[size_t(i) + 1] < 0 || s.fed[size_t(i) + 1] >= lim_.vocab) n = i;
    // Positions for the draft from free blocks only: a guess is not worth a cached prefix.
    const int64_t covered = kv_.grow(s, s.n_computed + 1 + n, /*evict=*/false);
    n = int(std::min<int64_t>(n, covered - s.n_computed - 1));
    if (n <= 0) continue;
    s.fed[0] = s.tokens.back();
    p.n_draft = n;
    p.n_tokens = 1 + n;
    p.logits = LogitsWanted::All;
    planned += n;
    room -= n;
  }
  return planned;
}

}  // namespace ember
