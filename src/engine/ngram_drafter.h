// Drafts by looking the sequence's last tokens up in its own context (prompt
// lookup): where the last n tokens occurred before, guess that what followed
// them then follows them now. No second model; strong where an answer repeats
// its input (editing code, quoting a document, filling a template), silent
// where nothing repeats.
#pragma once
#include "engine/drafter.h"

namespace ember {

class NgramDrafter final : public Drafter {
 public:
  // Matches of min_match to max_match tokens; the longest wins, then the one with
  // more tokens after it, then the most recent.
  explicit NgramDrafter(int min_match = 2, int max_match = 4);
  const char* name() const override { return "ngram"; }
  void propose(std::span<DraftRequest> requests) override;
  // One request's draft (what propose() does for each): its length.
  int draft(std::span<const int32_t> tokens, int max_tokens, int32_t* out) const;

 private:
  int min_match_, max_match_;
};

}  // namespace ember
