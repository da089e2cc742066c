#include "engine/scheduler.h"

#include <algorithm>

#include "util/error.h"

namespace ember {

Scheduler::Scheduler(KvManager& kv, const SchedulerLimits& lim) : kv_(kv), lim_(lim) {
  if (lim.max_running <= 0 || lim.step_tokens < lim.max_running || lim.max_logit_rows < lim.max_running)
    throw Error("scheduler: the step must hold at least one token and one logit row per running sequence");
  if (lim.prefill_step_tokens < 0) throw Error("scheduler: a prefill step budget of 0 (the step's) or more tokens");
  running_.reserve(size_t(lim.max_running));
}

void Scheduler::enqueue_waiting(Sequence* s) {
  s->state = Sequence::State::Waiting;
  auto it = std::lower_bound(waiting_.begin(), waiting_.end(), s, [](Sequence* a, Sequence* b) { return a->id < b->id; });
  waiting_.insert(it, s);
}

void Scheduler::add(Sequence* s) { enqueue_waiting(s); }

void Scheduler::remove(Sequence* s) {
  std::erase(running_, s);
  std::erase(waiting_, s);
}

void Scheduler::preempt(Sequence* s, std::vector<PlannedSeq>& plan) {
  std::erase_if(plan, [&](const PlannedSeq& p) { return p.seq == s; });
  kv_.release(*s);
  std::erase(running_, s);
  ++preemptions_;
  if (s->state == Sequence::State::Finishing) {  // its answer is complete: nothing to resume
    s->state = Sequence::State::Done;
    return;
  }
  enqueue_waiting(s);
}

void Scheduler::plan(std::vector<PlannedSeq>& plan) {
  plan.clear();
  int budget = lim_.step_tokens, rows = lim_.max_logit_rows;

  // 1. One token for each sequence that has exactly one to feed.
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence* s = running_[i];
    if (s->pending() != 1) continue;
    bool preempted_self = false;
    while (kv_.grow(*s, s->n_computed + 1) < s->n_computed + 1) {
      Sequence* victim = running_.back();
      if (victim == s) preempted_self = true;
      preempt(victim, plan);
      if (preempted_self) break;
    }
    if (preempted_self) break;  // s was the newest: everything after it is gone too
    const bool finishing = s->state == Sequence::State::Finishing;
    plan.push_back({s, 1, finishing ? LogitsWanted::None : LogitsWanted::Last});
    --budget;
    if (!finishing) --rows;
  }

  // 2. Prompts: running sequences still prefilling, then waiting ones, in chunks of what fits;
  // with no one decoding, in the larger prefill budget.
  if (plan.empty()) budget = std::max(lim_.step_tokens, lim_.prefill_step_tokens);
  auto add_chunk = [&](Sequence* s) -> bool {
    const int64_t pending = s->pending();
    int64_t chunk = std::min<int64_t>(pending, budget);
    if (chunk <= 0) return false;
    if (chunk == pending && rows == 0) --chunk;  // the last token needs a logit row; leave it for the next step
    const int64_t covered = kv_.grow(*s, s->n_computed + chunk);
    chunk = std::min(chunk, covered - s->n_computed);
    if (chunk <= 0) return false;
    const bool last = chunk == pending;
    plan.push_back({s, int(chunk), last ? LogitsWanted::Last : LogitsWanted::None});
    budget -= int(chunk);
    if (last) --rows;
    return true;
  };
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* s = running_[i];
    if (s->pending() <= 1) continue;
    while (!add_chunk(s) && budget > 0 && running_.back() != s) preempt(running_.back(), plan);
  }
  while (!waiting_.empty() && budget > 0 && int(running_.size()) < lim_.max_running) {
    Sequence* s = waiting_.front();
    kv_.admit(*s);
    s->state = Sequence::State::Running;
    running_.push_back(s);
    waiting_.pop_front();
    if (s->cached_tokens < 0) {
      s->cached_tokens = std::min(s->n_computed, s->n_prompt);
      s->out->set_prompt(s->n_prompt, s->cached_tokens);
    }
    if (!add_chunk(s)) {  // no block for it now: back to the front of the queue
      running_.pop_back();
      kv_.release(*s);
      enqueue_waiting(s);
      break;
    }
  }
}

}  // namespace ember
