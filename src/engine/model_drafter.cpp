#include "engine/model_drafter.h"

#include <algorithm>
#include <string>

#include "model/model.h"
#include "util/error.h"

namespace ember {

ModelDrafter::ModelDrafter(std::unique_ptr<Model> model, std::unique_ptr<Backend> backend, int vocab)
    : model_(std::move(model)), backend_(std::move(backend)), blocks_(backend_->kv_config().n_blocks) {
  if (backend_->model().desc().vocab != vocab)
    throw Error("the draft model's vocabulary has " + std::to_string(backend_->model().desc().vocab) + " tokens, the model's " +
                std::to_string(vocab) + ": a draft model must share the model's tokenizer");
  batch_.seqs.reserve(size_t(backend_->limits().max_tokens));
  in_batch_.reserve(size_t(backend_->limits().max_tokens));
}

ModelDrafter::~ModelDrafter() = default;

void ModelDrafter::release(SeqState& s) {
  for (int32_t b : s.blocks) blocks_.release(b);
  s.blocks.clear();
  s.tokens.clear();
}

void ModelDrafter::forget(uint64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return;
  release(it->second);
  seqs_.erase(it);
}

// Blocks for `positions` positions; when none is free, the sequence drafted
// least recently (and not in this call) gives up its blocks first.
bool ModelDrafter::grow(SeqState& s, int64_t positions) {
  const int bs = backend_->kv_config().block_size;
  while (int64_t(s.blocks.size()) * bs < positions) {
    int b = blocks_.allocate();
    while (b < 0) {
      SeqState* victim = nullptr;
      for (auto& [id, o] : seqs_)
        if (o.used != calls_ && !o.blocks.empty() && (!victim || o.used < victim->used)) victim = &o;
      if (!victim) return false;
      release(*victim);
      ++dropped_;
      b = blocks_.allocate();
    }
    s.blocks.push_back(b);
  }
  return true;
}

void ModelDrafter::propose(std::span<DraftRequest> requests) {
  ++calls_;
  const int64_t ctx = backend_->limits().max_context;
  const int step_tokens = backend_->limits().max_tokens, step_rows = backend_->limits().max_logit_rows;
  const int vocab = backend_->model().desc().vocab;
  states_.assign(requests.size(), nullptr);
  limits_.assign(requests.size(), 0);

  // Which requests draft, and what the draft model already holds of each.
  // Every one of them is marked first, so that none gives its positions up to another's.
  for (const DraftRequest& r : requests)
    if (auto it = seqs_.find(r.seq_id); it != seqs_.end()) it->second.used = calls_;
  for (size_t i = 0; i < requests.size(); ++i) {
    DraftRequest& r = requests[i];
    r.n = 0;
    const int64_t len = int64_t(r.tokens.size());
    // Positions it computes: the tokens, then every draft token but the last.
    const int limit = int(std::min<int64_t>(r.max_tokens, ctx - len + 1));
    if (len == 0 || limit <= 0) continue;
    SeqState& s = seqs_[r.seq_id];
    if (s.tokens.capacity() == 0) {
      s.tokens.reserve(size_t(ctx));
      s.blocks.reserve(size_t(ctx / backend_->kv_config().block_size + 1));
    }
    s.used = calls_;
    const auto mismatch = std::mismatch(s.tokens.begin(), s.tokens.end(), r.tokens.begin(), r.tokens.end());
    const int64_t kept = std::min<int64_t>(mismatch.first - s.tokens.begin(), len - 1);  // the last token is fed again
    s.tokens.resize(size_t(kept));
    if (!grow(s, len + limit - 1)) {
      ++starved_;
      continue;
    }
    states_[i] = &s;
    limits_[i] = limit;
  }

  // Each step feeds every drafting request what the draft model has not
  // computed yet: the sequence's own tokens (a catch-up, several steps when
  // long), then its draft's last token; the pick after the last token fed is
  // the draft's next token.
  for (;;) {
    batch_.seqs.clear();
    batch_.pick_vocab = vocab;
    in_batch_.clear();
    int budget = step_tokens, rows = step_rows;
    for (size_t i = 0; i < requests.size() && budget > 0 && rows > 0; ++i) {
      SeqState* s = states_[i];
      const DraftRequest& r = requests[i];
      if (!s || r.n >= limits_[i]) continue;
      const int64_t done = int64_t(s->tokens.size()), len = int64_t(r.tokens.size());
      const int32_t* from = done < len ? r.tokens.data() + done : r.out + r.n - 1;
      const int64_t left = done < len ? len - done : 1;
      const int n = int(std::min<int64_t>(left, budget));
      SeqStep st;
      st.tokens = from;
      st.n_tokens = n;
      st.pos = done;
      st.blocks = s->blocks.data();
      st.n_blocks = int(s->blocks.size());
      st.logits = n == left ? LogitsWanted::LastPicked : LogitsWanted::None;
      batch_.seqs.push_back(st);
      in_batch_.push_back(i);
      budget -= n;
      rows -= n == left;
    }
    if (batch_.seqs.empty()) break;
    backend_->forward(batch_);
    const int32_t* picked = backend_->picked_ids();
    int row = 0;
    for (size_t k = 0; k < batch_.seqs.size(); ++k) {
      const SeqStep& st = batch_.seqs[k];
      DraftRequest& r = requests[in_batch_[k]];
      std::vector<int32_t>& computed = states_[in_batch_[k]]->tokens;
      computed.insert(computed.end(), st.tokens, st.tokens + st.n_tokens);
      if (st.logits != LogitsWanted::LastPicked) continue;
      const int32_t id = picked[row++];
      if (id < 0 || id >= vocab) {
        states_[in_batch_[k]] = nullptr;  // no draft from broken logits
        continue;
      }
      r.out[r.n++] = id;
    }
  }
}

}  // namespace ember
