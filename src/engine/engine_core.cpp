#include "engine/engine_core.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/ngram_drafter.h"
#include "engine/sampling_validation.h"
#include "model/model.h"
#include "model/vocab_check.h"
#include "util/error.h"

namespace ember {

namespace {

int step_tokens_of(const Backend& b, const EngineOptions& o) {
  const int lim = b.limits().max_tokens;
  return o.step_tokens > 0 ? std::min(o.step_tokens, lim) : lim;
}

SchedulerLimits scheduler_limits(const Backend& b, const EngineOptions& o) {
  SchedulerLimits l;
  l.max_running = o.max_running;
  l.step_tokens = step_tokens_of(b, o);
  l.prefill_step_tokens = o.prefill_step_tokens > 0 ? std::min(o.prefill_step_tokens, b.limits().max_tokens) : 0;
  l.max_logit_rows = b.limits().max_logit_rows;
  if (l.max_running > l.max_logit_rows || l.max_running > l.step_tokens)
    throw Error("engine: " + std::to_string(l.max_running) + " parallel sequences need a backend step of at least as many tokens and logit rows (" +
                std::to_string(l.step_tokens) + " tokens, " + std::to_string(l.max_logit_rows) + " rows)");
  return l;
}

}  // namespace

EngineCore::EngineCore(Backend& backend, const Tokenizer* tok, const EngineOptions& opt)
    : backend_(backend),
      tok_(tok),
      opt_(opt),
      kv_(backend.kv_config().n_blocks, backend.kv_config().block_size, opt.prefix_cache),
      sched_(kv_, scheduler_limits(backend, opt)),
      sampling_vocab_(tok ? sampling_vocab(backend.model().desc(), *tok) : backend.model().desc().vocab) {
  kv_.enable_host_tier(backend, opt.cache_host_mem);
  for (const auto& [n, what] : {std::pair{opt.draft_tokens, "draft"}, std::pair{opt.prediction_tokens, "prediction"}})
    if (n < 0 || n > EngineOptions::kMaxDraftTokens)
      throw Error(std::string("engine: ") + what + " tokens must be 0 (off) to " + std::to_string(EngineOptions::kMaxDraftTokens));
  if (opt.draft_tokens > 0 || opt.prediction_tokens > 0) {
    DraftLimits dl;
    dl.draft_tokens = opt.draft_tokens;
    dl.prediction_tokens = opt.prediction_tokens;
    dl.step_tokens = step_tokens_of(backend, opt);
    dl.max_logit_rows = backend.limits().max_logit_rows;
    dl.max_context = backend.limits().max_context;
    dl.vocab = backend.model().desc().vocab;
    std::shared_ptr<Drafter> drafter;  // none where only predictions draft
    if (opt.draft_tokens > 0) drafter = opt.drafter ? opt.drafter : std::make_shared<NgramDrafter>();
    drafts_ = std::make_unique<DraftPlanner>(std::move(drafter), kv_, dl, opt.max_running);
  }
  for (auto* plan : {&plan_, &next_plan_}) plan->reserve(size_t(opt.max_running) + 1);
  for (auto* batch : {&batch_, &next_batch_}) batch->seqs.reserve(size_t(opt.max_running) + 1);
}

EngineCore::~EngineCore() {
  drain();
  for (auto& s : live_) {
    kv_.release(*s);
    abandon(*s, FinishReason::Cancelled, "the engine stopped");
  }
}

void EngineCore::abandon(Sequence& s, FinishReason reason, const std::string& why) {
  if (s.state == Sequence::State::Finishing || s.state == Sequence::State::Done)
    s.out->finish(s.finish_reason);  // the answer was complete
  else
    finish(s, reason, false, why);
}

void EngineCore::validate(const GenerationRequest& req) const {
  const ModelDesc& d = backend_.model().desc();
  const int64_t ctx = backend_.limits().max_context;
  if (req.prompt.empty()) throw Error("the prompt is empty");
  if (int64_t(req.prompt.size()) >= ctx)
    throw Error("the prompt has " + std::to_string(req.prompt.size()) + " tokens; the context holds " + std::to_string(ctx) +
                " with room for at least one new token");
  for (const auto* ids : {&req.prompt, &req.prediction})
    for (int32_t id : *ids)
      if (id < 0 || id >= d.vocab)
        throw Error(std::string(ids == &req.prompt ? "" : "prediction: ") + "token id " + std::to_string(id) +
                    " is outside the vocabulary (0.." + std::to_string(d.vocab - 1) + ")");
  if (req.max_tokens <= 0) throw Error("max_tokens must be at least 1");
  if (!req.stop.empty() && !tok_) throw Error("stop strings need a model with a tokenizer");
  validate_sampling(req.sampling);
}

void EngineCore::cancel_all(const std::string& why) {
  while (!live_.empty()) {
    Sequence& s = *live_.back();
    abandon(s, FinishReason::Error, why);
    retire(s);
  }
  drain();
}

void EngineCore::drain() {
  // After a failed step the queue's state is unknown: each wait either returns or says none is queued.
  for (int i = 0; in_flight_ && i < Backend::kMaxQueuedSteps; ++i) {
    try {
      backend_.wait_step();
    } catch (const std::exception&) {
      break;
    }
  }
  in_flight_ = false;
}

void EngineCore::add(GenerationRequest req, std::shared_ptr<RequestStream> out) {
  validate(req);
  const ModelDesc& d = backend_.model().desc();
  const int64_t ctx = backend_.limits().max_context;

  auto s = std::make_unique<Sequence>(next_id_++, std::move(req), d.vocab, sampling_vocab_);
  s->out = std::move(out);
  s->n_prompt = int64_t(s->req.prompt.size());
  // Everything the sequence will hold, sized now: decode steps allocate nothing.
  const int64_t total = std::min<int64_t>(ctx, s->n_prompt + s->req.max_tokens);
  s->tokens.reserve(size_t(total) + 1);
  s->tokens.assign(s->req.prompt.begin(), s->req.prompt.end());
  s->blocks.reserve(size_t(total / backend_.kv_config().block_size + 2));
  s->out->reserve(size_t(s->req.max_tokens), tok_ ? size_t(s->req.max_tokens) * 8 : 0);
  if (tok_) {
    s->decoder.emplace(*tok_, /*skip_special=*/true);
    s->stop_filter.emplace(s->req.stop);
  }
  if (s->req.constraint) {
    s->constraint = s->req.constraint();
    s->masked_logits.resize(size_t(d.vocab));
  }
  if (drafts_) {
    const size_t room = size_t(drafts_->longest_draft(*s)) + 1;  // the next token, then the longest draft
    s->fed.resize(room);
    s->draws.resize(room);
  }
  sched_.add(s.get());
  live_.push_back(std::move(s));
}

bool EngineCore::step() {
  // Cancelled requests leave first, freeing their blocks for this very step.
  for (size_t i = 0; i < live_.size();) {
    Sequence& s = *live_[i];
    if (s.out->cancel_requested() && s.state != Sequence::State::Finishing) {
      finish(s, FinishReason::Cancelled, true);
      retire(s);
      continue;
    }
    ++i;
  }
  if (!in_flight_) {
    sched_.plan(plan_);
    for (size_t i = 0; i < live_.size();) {  // finished sequences the scheduler let go of
      if (live_[i]->state == Sequence::State::Done) {
        live_[i]->out->finish(live_[i]->finish_reason);  // its text went out when it finished
        retire(*live_[i]);
        continue;
      }
      ++i;
    }
    if (plan_.empty()) {
      // Every live request is always either planned or waiting behind one that is: an empty plan
      // with requests live would stall them forever, so it fails them loudly instead.
      if (!live_.empty()) throw Error("engine: no request can make progress (KV cache too small for one context?)");
      return false;
    }
    if (drafts_) draft_tokens_ += drafts_->plan(plan_);
    kv_.run_copies(backend_);

    batch_.seqs.clear();
    batch_.pick_vocab = sampling_vocab_;
    for (const PlannedSeq& p : plan_) {
      Sequence& s = *p.seq;
      SeqStep st;
      st.tokens = p.n_draft > 0 ? s.fed.data() : s.tokens.data() + s.n_computed;
      st.n_tokens = p.n_tokens;
      st.pos = s.n_computed;
      st.blocks = s.blocks.data();
      st.n_blocks = int(s.blocks.size());
      st.logits = p.logits;
      if (p.logits == LogitsWanted::Last && picks_on_backend(s)) {
        st.logits = LogitsWanted::LastPicked;
        st.pick = backend_pick(s);
      } else if (p.n_draft > 0 && picks_on_backend(s)) {
        st.logits = LogitsWanted::AllPicked;  // a draft is checked where the logits are: only ids cross
        st.pick = s.sampler.pick();
        // Sampled: row i takes the sequence's i-th next draw; verify() takes one per token delivered.
        if (!st.pick.greedy()) {
          s.sampler.peek_draws(p.n_tokens, s.draws.data());
          st.draws = s.draws.data();
        }
      }
      batch_.seqs.push_back(st);
    }
    backend_.submit(batch_);
    in_flight_ = true;
  }
  const bool ahead = opt_.overlap_steps && look_ahead();
  collect();
  in_flight_ = ahead;
  if (ahead) {
    std::swap(plan_, next_plan_);
    std::swap(batch_, next_batch_);
  }
  return true;
}

// The step in flight (t) is certain to be followed by one more token of
// each of its sequences when: every running sequence is in it with one token
// whose pick the device makes (so no prompt chunk or host sampling waits), no
// request could be admitted instead (none waiting, or no free slot), and each
// sequence gets a block for the next position without preempting anyone.
// Sequences finishing at t are in it too: with the prefix cache t + 1 feeds
// their last token, as a finishing step would; without, their part is dropped.
bool EngineCore::look_ahead() {
  if (!sched_.waiting().empty() && int(sched_.running().size()) < opt_.max_running) return false;
  next_plan_.clear();
  next_batch_.seqs.clear();
  next_batch_.pick_vocab = batch_.pick_vocab;
  size_t in_step = 0;
  int row = 0;  // picked row of step t
  for (size_t i = 0; i < plan_.size(); ++i) {
    const SeqStep& st = batch_.seqs[i];
    const bool picked = st.logits == LogitsWanted::LastPicked;
    const int r = picked ? row : -1;
    row += int(st.picked_rows());
    Sequence* s = plan_[i].seq;
    if (!s) continue;  // retired while in flight
    if (st.n_tokens != 1 || !picked) return false;
    ++in_step;
    if (s->state != Sequence::State::Running) continue;  // finishing: step t feeds its last token
    if (drafts_ && drafts_->may_draft(*s, int(sched_.running().size()))) return false;  // its next step may feed a draft, known only after t
    if (kv_.grow(*s, s->n_computed + 2) < s->n_computed + 2) return false;
    next_plan_.push_back({s, 1, LogitsWanted::Last});
    SeqStep n;
    n.n_tokens = 1;
    n.pos = s->n_computed + 1;
    n.blocks = s->blocks.data();
    n.n_blocks = int(s->blocks.size());
    n.logits = LogitsWanted::LastPicked;
    n.picked_row = r;
    next_batch_.seqs.push_back(n);
  }
  if (in_step != sched_.running().size() || next_plan_.empty()) return false;
  // Draws only for a step that is certain to run: a draw taken for a step
  // given up would shift the sequence's tokens from those of its seed.
  for (size_t i = 0; i < next_plan_.size(); ++i) next_batch_.seqs[i].pick = backend_pick(*next_plan_[i].seq);
  backend_.submit(next_batch_);
  ++steps_ahead_;
  return true;
}

void EngineCore::collect() {
  const StepOutput out = backend_.wait_step();
  ++steps_;
  const int64_t vocab = backend_.model().desc().vocab;
  int64_t row = 0, picked = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const PlannedSeq p = plan_[i];
    const LogitsWanted wanted = batch_.seqs[i].logits;
    const int64_t logit_row = row, picked_row = picked;
    row += batch_.seqs[i].logit_rows();
    picked += batch_.seqs[i].picked_rows();
    if (!p.seq) continue;  // retired while the step ran
    Sequence& s = *p.seq;
    if (p.n_draft > 0) {
      if (wanted == LogitsWanted::AllPicked)
        verify(s, p.n_draft, nullptr, out.picked_ids + picked_row);
      else
        verify(s, p.n_draft, out.logits + logit_row * vocab, nullptr);
      continue;
    }
    s.n_computed += p.n_tokens;
    if (s.state == Sequence::State::Finishing) {
      // Its last token is in the KV now: the cache keeps the whole conversation, then the client hears it ended.
      const FinishReason reason = s.finish_reason;
      auto stream = s.out;
      retire(s);
      stream->finish(reason);
      continue;
    }
    if (wanted == LogitsWanted::LastPicked) {
      deliver(s, nullptr, out.picked_ids[picked_row]);
    } else if (p.logits == LogitsWanted::Last) {
      deliver(s, out.logits + logit_row * vocab, 0);
    }
  }
}

// Nothing that needs the logits on the host (penalties, a grammar, logits kept
// for the client): the backend picks the token where the logits are, greedy or
// sampled by the same rules as the host sampler (engine/pick.h).
bool EngineCore::picks_on_backend(const Sequence& s) const {
  if (s.constraint || s.req.keep_logits || s.sampler.penalises()) return false;
  return opt_.sample_on_backend || s.sampler.plain_greedy();
}

// The draw is taken when the step is planned, from the sequence's own
// generator, one per token as the host sampler takes it: the same seed gives
// the same tokens whichever side picks.
Pick EngineCore::backend_pick(Sequence& s) {
  Pick p = s.sampler.pick();
  if (!p.greedy()) p.draw = s.sampler.draw();
  return p;
}

// The step fed the sequence's next token and a draft of n_draft more; row i
// holds the logits after fed token i (or, where the backend picks, ids[i] its
// pick from them, sampled with the draw that token takes here). Each row's token is picked as a step
// of its own would pick it (deliver: the same sampler, draws, constraint and
// stop rules, in order); while that token is the draft's next one, the next
// row's logits are the ones a step of its own would have computed, so they
// are read too. The keys and values of the positions dropped stay in the
// blocks past n_computed, where the next steps overwrite them.
void EngineCore::verify(Sequence& s, int n_draft, const float* rows, const int32_t* ids) {
  const int64_t vocab = backend_.model().desc().vocab;
  const int64_t pos = s.n_computed;
  int kept_here = 0;
  const bool backend_sampled = ids && !s.sampler.pick().greedy();  // each row picked with a draw taken here
  // A prediction's draft counts as dropped until deliver() finds a token of it taken.
  if (s.draft_from_prediction) s.out->count_prediction(0, n_draft);
  for (int i = 0; i <= n_draft; ++i) {
    s.n_computed = pos + i + 1;  // the fed tokens up to i are in the KV
    const bool drafted = i < n_draft;
    const int32_t guess = drafted ? s.fed[size_t(i) + 1] : -1;
    int32_t took = -1;
    if (backend_sampled) s.sampler.draw();  // the draw the backend picked row i with
    const bool goes_on = rows ? deliver(s, rows + i * vocab, 0, &took, guess) : deliver(s, nullptr, ids[i], &took, guess);  // false: ended
    const bool kept = drafted && took == guess;
    accepted_tokens_ += kept;
    kept_here += kept;
    if (!goes_on) return;
    if (!kept) break;
  }
  if (!s.draft_from_prediction) drafts_->outcome(s, kept_here);
  // Blocks grown for positions dropped go back at once: the next step needs one more position.
  kv_.trim(s, s.n_computed + 1);
}

bool EngineCore::deliver(Sequence& s, const float* logits, int32_t picked_id, int32_t* took, int32_t guess) {
  const int64_t vocab = backend_.model().desc().vocab;
  int32_t id;
  std::string piece;
  bool stopped = false;
  try {
    if (!logits) {  // the backend's pick (picks_on_backend)
      if (picked_id == kPickNonFinite) throw BadLogits("the model produced a NaN or +inf logit: the sequence cannot continue");
      if (picked_id < 0) throw BadLogits("every logit is -inf: no token can be sampled");
      if (picked_id >= sampling_vocab_) throw Error("backend picked token " + std::to_string(picked_id) + ", outside the vocabulary");
      id = picked_id;
    } else if (s.constraint) {  // sampled from a masked copy; the stream still gets the model's own logits
      std::copy(logits, logits + vocab, s.masked_logits.begin());
      s.constraint->mask(s.masked_logits.data(), vocab);
      id = s.sampler.sample(s.masked_logits.data(), s.tokens);
      s.constraint->accept(id);
    } else {
      id = s.sampler.sample(logits, s.tokens);
    }
    s.tokens.push_back(id);
    if (took) *took = id;
    if (guess >= 0 && id == guess && s.draft_from_prediction) s.out->count_prediction(1, -1);
    ++s.generated;
    const bool eog = !s.req.ignore_eos && ((tok_ && tok_->is_end_of_generation(id)) ||
                                           std::find(s.req.stop_ids.begin(), s.req.stop_ids.end(), id) != s.req.stop_ids.end());
    if (s.decoder && !eog) piece = s.stop_filter->push(s.decoder->feed(id), stopped);
    s.out->push(id, piece, s.req.keep_logits ? logits : nullptr, vocab);
    if (eog || stopped) {
      s.finish_reason = FinishReason::Stop;
      s.finish_flush = !stopped;
    } else if (s.generated >= s.req.max_tokens || int64_t(s.tokens.size()) >= backend_.limits().max_context) {
      s.finish_reason = FinishReason::Length;
    } else {
      return true;
    }
  } catch (const std::exception& e) {  // NaN or infinite logits (BadLogits), an id the tokenizer lacks: this sequence only
    finish(s, FinishReason::Error, false, e.what());
    retire(s);
    return false;
  }
  // Done. With the cache on, the last token is fed once more so the next turn
  // finds all of this one; the stream hears it ended after that step.
  if (opt_.prefix_cache) {
    if (s.decoder && s.finish_flush) flush_held_text(s);
    s.state = Sequence::State::Finishing;
  } else {
    finish(s, s.finish_reason, s.finish_flush);
    retire(s);
  }
  return false;
}

void EngineCore::finish(Sequence& s, FinishReason reason, bool flush_text, std::string error) {
  if (s.decoder && flush_text) flush_held_text(s);
  if (s.cached_tokens < 0) s.out->set_prompt(s.n_prompt, 0);
  s.out->finish(reason, std::move(error));
}

void EngineCore::flush_held_text(Sequence& s) {
  bool stopped = false;
  std::string rest = s.stop_filter->push(s.decoder->finish(), stopped);
  if (!stopped) rest += s.stop_filter->flush();
  s.out->push_text(rest);
}

void EngineCore::retire(Sequence& s) {
  // The device may still write this sequence's next position into its blocks:
  // it runs before any later step that could reuse them.
  for (auto* plan : {&plan_, &next_plan_})
    for (PlannedSeq& p : *plan)
      if (p.seq == &s) p.seq = nullptr;
  kv_.release(s);
  sched_.remove(&s);
  if (drafts_) drafts_->forget(s);
  auto it = std::find_if(live_.begin(), live_.end(), [&](auto& p) { return p.get() == &s; });
  live_.erase(it);
}

EngineStats EngineCore::stats() const {
  EngineStats st;
  st.running = int(sched_.running().size());
  st.waiting = int(sched_.waiting().size());
  st.blocks_total = kv_.allocator().n_blocks();
  st.blocks_free = kv_.allocator().free_blocks();
  if (live_.empty()) st.blocks_cached = kv_.cached_blocks();
  st.cached_tokens = kv_.cache() ? kv_.cache()->cached_tokens() : 0;
  st.host_slots = kv_.host_slots();
  st.host_slots_used = kv_.host_slots_used();
  st.restored_blocks = kv_.cache() ? kv_.cache()->restored_blocks() : 0;
  st.steps = steps_;
  st.steps_ahead = steps_ahead_;
  st.draft_tokens = draft_tokens_;
  st.accepted_tokens = accepted_tokens_;
  st.preemptions = sched_.preemptions();
  return st;
}

void EngineCore::check_accounting() const {
  std::vector<const Sequence*> holders;
  for (auto& s : live_) holders.push_back(s.get());
  kv_.check_accounting(holders);
}

}  // namespace ember
