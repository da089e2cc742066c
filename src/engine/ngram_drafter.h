// Drafts by looking the sequence's last tokens up in its own context (prompt
// lookup): where the last n tokens occurred before, guess that what followed
// them then follows them now. No second model; strong where an answer repeats
// its input (editing code, quoting a document, filling a template), silent
// where nothing repeats.
//
// A scan of the whole context each step would cost the engine thread about a
// nanosecond per token of every drafting sequence (tens of microseconds at
// 32K tokens, on the critical path: a drafting step is not queued ahead). So
// each sequence keeps an index of where each pair of tokens ended (a hash
// table of the latest ends, each end linking to the one before with the same
// hash), extended by the tokens added since its last draft; a draft walks the
// chain of the last pair's earlier ends, at most kMaxCandidates of them.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/drafter.h"

namespace ember {

class NgramDrafter final : public Drafter {
 public:
  // Matches of min_match (2 or more) to max_match tokens; the longest wins,
  // then the one with more tokens after it, then the most recent.
  explicit NgramDrafter(int min_match = 2, int max_match = 4);
  const char* name() const override { return "ngram"; }
  void propose(std::span<DraftRequest> requests) override;
  void forget(uint64_t seq_id) override { index_.erase(seq_id); }
  // One draft by a scan of every earlier position (no index): the reference
  // the indexed lookup gives the same drafts as (up to kMaxCandidates ends of a pair).
  int draft(std::span<const int32_t> tokens, int max_tokens, int32_t* out) const;

  static constexpr int kMaxCandidates = 64;

 private:
  struct Index {
    std::vector<int32_t> head;  // per hash of a pair: the latest position where such a pair ended; -1
    std::vector<int32_t> prev;  // per position: the pair ending there's previous end with the same hash; -1
  };
  // Considers the earlier end j of the last pair: longer matches, then more tokens after, win.
  struct Best {
    int len = 0, follow = 0;
    int64_t j = -1;
  };
  void consider(const int32_t* t, int64_t n, int64_t j, int max_tokens, Best& best) const;
  static int take(const int32_t* t, const Best& best, int32_t* out);  // the tokens after the best match: its length
  int indexed_draft(Index& ix, std::span<const int32_t> tokens, int64_t capacity, int max_tokens, int32_t* out) const;

  int min_match_, max_match_;
  std::unordered_map<uint64_t, Index> index_;
};

}  // namespace ember
