#include "engine/backend.h"

#include <cmath>

#include "model/model.h"
#include "util/error.h"

namespace ember {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F16: return "f16";
    case KvType::BF16: return "bf16";
    case KvType::F32: return "f32";
  }
  return "?";
}

KvType parse_kv_type(const std::string& name) {
  if (name == "f16" || name == "F16") return KvType::F16;
  if (name == "bf16" || name == "BF16") return KvType::BF16;
  if (name == "f32" || name == "F32") return KvType::F32;
  throw Error("unknown KV type '" + name.substr(0, 16) + "' (f16, bf16 or f32)");
}

size_t kv_type_bytes(KvType t) { return t == KvType::F32 ? 4 : 2; }

size_t kv_block_bytes(const ModelDesc& d, int block_size, KvType type) {
  return size_t(d.n_layers) * 2 * size_t(block_size) * size_t(d.kv_dim()) * kv_type_bytes(type);
}

void check_step_batch(const StepBatch& batch, const StepLimits& lim, const KvConfig& kv, int vocab) {
  const int64_t n_tok = batch.total_tokens();
  const int64_t n_rows = batch.logit_rows() + batch.picked_rows();
  if (n_tok <= 0) throw Error("forward step with no tokens");
  if (batch.pick_vocab < 0 || batch.pick_vocab > vocab)
    throw Error("forward step's pick vocabulary of " + std::to_string(batch.pick_vocab) + " ids is outside 0.." +
                std::to_string(vocab));
  if (n_tok > lim.max_tokens)
    throw Error("forward step of " + std::to_string(n_tok) + " tokens exceeds the backend's limit of " +
                std::to_string(lim.max_tokens));
  if (n_rows > lim.max_logit_rows)
    throw Error("forward step asks for " + std::to_string(n_rows) + " logit rows, limit " +
                std::to_string(lim.max_logit_rows));
  const int bs = kv.block_size;
  for (const SeqStep& s : batch.seqs) {
    // A sequence with no tokens would still count a "last" logit row and shift every row after it.
    if (s.n_tokens <= 0) throw Error("a sequence in the step has no tokens");
    const int64_t end = s.pos + s.n_tokens;
    if (s.pos < 0 || end > lim.max_context)
      throw Error("sequence of " + std::to_string(end) + " positions exceeds the context of " +
                  std::to_string(lim.max_context));
    if ((end + bs - 1) / bs > s.n_blocks) throw Error("sequence's block table does not cover its positions");
    for (int b = 0; b < s.n_blocks; ++b)
      if (s.blocks[b] < 0 || s.blocks[b] >= kv.n_blocks) throw Error("block table names a block outside the KV pool");
    if (s.logits == LogitsWanted::AllPicked && !s.pick.greedy() && !s.draws)
      throw Error("a sequence asks for every token's sampled pick without a draw for each token");
    if (s.picked_row >= 0) continue;  // the device's pick (check_picked_rows)
    for (int i = 0; i < s.n_tokens; ++i)
      if (s.tokens[i] < 0 || s.tokens[i] >= vocab)
        throw Error("token id " + std::to_string(s.tokens[i]) + " is outside the vocabulary (0.." +
                    std::to_string(vocab - 1) + ")");
  }
}

void check_picked_rows(const StepBatch& batch, int64_t previous_picked_rows) {
  for (const SeqStep& s : batch.seqs) {
    if (s.picked_row < 0) continue;
    if (s.n_tokens != 1) throw Error("a sequence fed by the step before must have exactly one new token");
    if (s.picked_row >= previous_picked_rows)
      throw Error("a sequence is fed by picked row " + std::to_string(s.picked_row) + " of a step that picked " +
                  std::to_string(previous_picked_rows));
  }
}

int StepQueue::next_slot() const {
  if (n_ == kSlots) throw Error("backend: a step submitted while " + std::to_string(n_) + " are queued");
  if (n_ > 0 && logit_rows_[last_] > 0) throw Error("backend: a step queued behind one that returns logit rows (wait for it first)");
  return (head_ + n_) % kSlots;
}

void StepQueue::push(int slot, int64_t logit_rows, int64_t picked_rows) {
  logit_rows_[slot] = logit_rows;
  picked_rows_[slot] = picked_rows;
  ++n_;
  last_ = slot;
}

int StepQueue::pop() {
  if (n_ == 0) throw Error("backend: waiting for a step when none is queued");
  const int slot = head_;
  head_ = (head_ + 1) % kSlots;
  --n_;
  return slot;
}

void Backend::submit(const StepBatch& batch) {
  if (picked_tokens_.capacity() == 0) {  // at the first step: a step queued ahead later allocates nothing
    picked_tokens_.reserve(size_t(limits().max_tokens));  // a step holds at most one sequence per token
    resolved_.seqs.reserve(size_t(limits().max_tokens));
  }
  const int slot = queue_.next_slot();
  const StepBatch* run = &batch;
  bool picked = false;
  for (const SeqStep& s : batch.seqs) picked |= s.picked_row >= 0;
  if (picked) {
    check_picked_rows(batch, queue_.last_picked_rows());
    const std::vector<int32_t>& ids = queued_[queue_.last()].ids;
    picked_tokens_.resize(batch.seqs.size());
    resolved_ = batch;
    const int vocab = model().desc().vocab;
    for (size_t i = 0; i < batch.seqs.size(); ++i) {
      SeqStep& s = resolved_.seqs[i];
      if (s.picked_row < 0) continue;
      const int32_t id = ids[size_t(s.picked_row)];
      picked_tokens_[i] = id >= 0 && id < vocab ? id : 0;
      s.tokens = &picked_tokens_[i];
      s.picked_row = -1;
    }
    run = &resolved_;
  }
  const float* logits = forward(*run);
  Queued& q = queued_[slot];
  q.ids.reserve(size_t(limits().max_logit_rows));  // once: a step's picks never need more
  const int32_t* ids = picked_ids();
  q.ids.assign(ids, ids + run->picked_rows());
  q.logits = logits;
  queue_.push(slot, run->logit_rows(), run->picked_rows());
}

StepOutput Backend::wait_step() {
  const Queued& q = queued_[queue_.pop()];
  return {q.logits, q.ids.data()};
}

size_t Backend::block_bytes() const { return kv_block_bytes(model().desc(), kv_config().block_size, kv_config().type); }

}  // namespace ember
