// One forward step's work: several sequences, each with its new tokens.
//
// A sequence's new tokens occupy positions [pos, pos + n_tokens); its KV for
// earlier positions is already in the blocks of its table, which must cover
// pos + n_tokens positions. Prefill chunks (many tokens) and decode steps (one
// token) can be mixed in one batch.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/pick.h"

namespace ember {

// Last/All: those logit rows come back from the step. LastPicked: only the id
// picked from the last token's logits comes back (SeqStep::pick, greedy or
// sampled by the rules of engine/pick.h, made where the logits are, so no
// logit row crosses to the host). AllPicked: the pick of every token's logits
// (a drafting step's, engine/speculation.h), token i's with draws[i] where the
// pick is sampled.
enum class LogitsWanted : uint8_t { None, Last, All, LastPicked, AllPicked };

struct SeqStep {
  const int32_t* tokens = nullptr;
  int n_tokens = 0;
  int64_t pos = 0;
  const int32_t* blocks = nullptr;
  int n_blocks = 0;
  LogitsWanted logits = LogitsWanted::Last;
  // >= 0: the sequence's one new token is the id that the step queued just
  // before this one picked for its row picked_row (LastPicked rows
  // counted in batch order; Backend::submit), and `tokens` is not read.
  int picked_row = -1;
  Pick pick;  // how a LastPicked or AllPicked row is picked
  // AllPicked with a sampled pick: token i's row is picked with draws[i] (n_tokens of them) instead of pick.draw.
  const double* draws = nullptr;
  // Logit rows this sequence's part of the step returns (Last: one, All: one per token).
  int64_t logit_rows() const { return logits == LogitsWanted::All ? n_tokens : logits == LogitsWanted::Last ? 1 : 0; }
  // Ids picked for it (LastPicked: one, AllPicked: one per token).
  int64_t picked_rows() const { return logits == LogitsWanted::AllPicked ? n_tokens : logits == LogitsWanted::LastPicked ? 1 : 0; }
  // Whether its token i's logit row comes back, or is picked from (each backend lists the rows so).
  bool returns_row(int i) const { return logits == LogitsWanted::All || (logits == LogitsWanted::Last && i == n_tokens - 1); }
  // How token i's row is picked (picks_row(i)).
  Pick pick_of_row(int i) const {
    Pick p = pick;
    if (draws) p.draw = draws[i];
    return p;
  }
  bool picks_row(int i) const {
    return logits == LogitsWanted::AllPicked || (logits == LogitsWanted::LastPicked && i == n_tokens - 1);
  }
};

struct StepBatch {
  std::vector<SeqStep> seqs;
  int pick_vocab = 0;  // LastPicked rows pick among the ids below this (0: the whole vocabulary)
  int64_t total_tokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.n_tokens;
    return n;
  }
  // Logit rows the step returns.
  int64_t logit_rows() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.logit_rows();
    return n;
  }
  int64_t picked_rows() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.picked_rows();
    return n;
  }
};

}  // namespace ember
