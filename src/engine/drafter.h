// Where speculative decoding's draft tokens come from.
//
// A decoding sequence may feed, beside its next token, a few tokens guessed
// to follow it (a draft). One step computes the logits of all of them; the
// engine then picks each position's token from its own logits, exactly as it
// would have one step at a time, and keeps the draft up to the first token
// that differs from the pick (engine_core.cpp, verify()). So a draft changes
// how many tokens a step yields, never which: a wrong guess costs only the
// compute of its positions, whose keys and values the next steps overwrite.
//
// A Drafter proposes drafts for every drafting sequence of a step at once, so
// that one that runs a model can batch them.
#pragma once
#include <cstdint>
#include <span>

namespace ember {

struct DraftRequest {
  uint64_t seq_id = 0;                // the sequence, stable while it lives
  std::span<const int32_t> tokens;    // its tokens so far: prompt, then generated; the last is the one it feeds next
                                      // (for one seq_id they only ever grow: what was there stays)
  int64_t capacity = 0;               // the most tokens the sequence may reach (room a drafter may size for once)
  int max_tokens = 0;                 // a draft of at most this many tokens
  int32_t* out = nullptr;             // room for max_tokens ids
  int n = 0;                          // propose() sets: the draft's length (0: none)
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const char* name() const = 0;
  // Fills each request's out[0, n) with the tokens guessed to follow its tokens.
  virtual void propose(std::span<DraftRequest> requests) = 0;
  // The sequence has left the engine: forget whatever is kept about it.
  virtual void forget(uint64_t /*seq_id*/) {}
  // Whether a draft costs real work (a model's steps): then only the sequences
  // the step has room for are asked, rather than every one that may draft.
  virtual bool costly() const { return false; }
};

}  // namespace ember
