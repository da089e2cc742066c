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

bool DraftPlanner::from_prediction(const Sequence& s) const {
  return lim_.prediction_tokens > 0 && !s.req.prediction.empty();
}

bool DraftPlanner::may_draft(const Sequence& s, int decoding) const {
  // A sequence that may draft is not queued ahead, so one whose drafts bring
  // nothing waits before it is asked again: its steps meanwhile are. One whose
  // answer has left its prediction is looked at again kLookEvery tokens later
  // (once back on the prediction it is found within kLookEvery tokens); a
  // drafter that is not costly is asked again after 2, 4, then 8 tokens while
  // its drafts bring nothing (none made, or none kept; outcome()).
  const PredictionCursor& c = s.prediction_at;
  const bool on_prediction = c.next >= 0 && c.next < int64_t(s.req.prediction.size());
  const bool via_prediction = from_prediction(s) && (on_prediction || s.generated >= s.prediction_look_at);
  const bool via_drafter = lim_.draft_tokens > 0 && s.generated >= s.draft_again_at;
  if (!via_prediction && !via_drafter) return false;
  return std::min(lim_.step_tokens, lim_.max_logit_rows) > decoding && s.state == Sequence::State::Running &&
         s.pending() == 1 && s.generated + 1 < s.req.max_tokens && int64_t(s.tokens.size()) + 1 < lim_.max_context;
}

void DraftPlanner::outcome(Sequence& s, int kept) const {
  // A costly drafter (a draft model) is asked every step as before: waits of
  // a fixed length can fall in step with a loop of the answer's text and meet
  // it always where the draft model is wrong (seen: 0 of 108 drafted tokens
  // kept where asking every step kept 168 of 344).
  if (drafter_ && drafter_->costly()) return;
  if (kept > 0) {
    s.draft_misses = 0;
    s.draft_again_at = 0;
    return;
  }
  s.draft_misses = std::min(s.draft_misses + 1, kMaxWaitDoublings);
  s.draft_again_at = s.generated + (int64_t(1) << s.draft_misses);
}

int DraftPlanner::plan(std::vector<PlannedSeq>& plan) {
  int tokens = lim_.step_tokens, rows = lim_.max_logit_rows;
  for (const PlannedSeq& p : plan) {
    tokens -= p.n_tokens;
    rows -= int(p.logits == LogitsWanted::All ? p.n_tokens : p.logits == LogitsWanted::None ? 0 : 1);
  }
  // Every decoding sequence drafts from its prediction where it has one (no
  // work beyond following it), and the drafter is asked for the others (a
  // costly drafter: those the room holds, each counted at its most); the room
  // is then shared out oldest first, as the scheduler plans, by the drafts
  // actually made.
  requests_.clear();
  entries_.clear();
  to_drafter_.clear();
  to_drafter_at_.clear();
  int room = std::min(tokens, rows);
  if (room <= 0) return 0;
  int asked = 0;
  const bool costly = drafter_ && drafter_->costly();
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedSeq& p = plan[i];
    Sequence& s = *p.seq;
    if (p.n_tokens != 1 || p.logits != LogitsWanted::Last || !may_draft(s, 0)) continue;
    // A step yields at most 1 + n tokens: no draft past max_tokens or the context.
    const int64_t left = std::min<int64_t>(s.req.max_tokens - s.generated, lim_.max_context - int64_t(s.tokens.size())) - 1;
    DraftRequest r;
    r.seq_id = s.id;
    r.tokens = s.tokens;
    r.capacity = int64_t(s.tokens.capacity());
    r.out = s.fed.data() + 1;
    r.max_tokens = int(std::min<int64_t>({lim_.prediction_tokens, left, room}));
    const bool predicted = from_prediction(s);
    r.n = predicted && r.max_tokens > 0
              ? draft_from_prediction(s.req.prediction, s.tokens, s.n_prompt, s.prediction_at, r.max_tokens, r.out)
              : 0;
    s.draft_from_prediction = r.n > 0;
    if (predicted && r.n == 0) s.prediction_look_at = s.generated + kLookEvery;
    if (r.n == 0) {
      if (s.generated < s.draft_again_at) continue;  // asked for the prediction only
      r.max_tokens = int(std::min<int64_t>({lim_.draft_tokens, left, costly ? room - asked : room}));
      if (r.max_tokens <= 0) continue;
      asked += r.max_tokens;
      to_drafter_.push_back(r);
      to_drafter_at_.push_back(requests_.size());
    }
    requests_.push_back(r);
    entries_.push_back(i);
  }
  if (requests_.empty()) return 0;
  if (!to_drafter_.empty()) drafter_->propose(to_drafter_);
  for (size_t i = 0; i < to_drafter_.size(); ++i) {
    requests_[to_drafter_at_[i]].n = to_drafter_[i].n;
    if (to_drafter_[i].n <= 0) outcome(*plan[entries_[to_drafter_at_[i]]].seq, 0);  // nothing to draft from: wait
  }
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
