#include "engine/ngram_drafter.h"

#include <algorithm>

#include "util/error.h"

namespace ember {

namespace {

constexpr int kHashBits = 14;

// The hash of the pair of tokens ending at position j (j >= 1).
inline uint32_t pair_hash(const int32_t* t, int64_t j) {
  const uint64_t k = (uint64_t(uint32_t(t[j - 1])) << 32) | uint32_t(t[j]);
  return uint32_t((k * 0x9E3779B97F4A7C15ull) >> (64 - kHashBits));
}

}  // namespace

int NgramDrafter::take(const int32_t* t, const Best& best, int32_t* out) {
  if (best.j < 0) return 0;
  std::copy(t + best.j + 1, t + best.j + 1 + best.follow, out);
  return best.follow;
}

NgramDrafter::NgramDrafter(int min_match, int max_match) : min_match_(min_match), max_match_(max_match) {
  if (min_match < 2 || max_match < min_match) throw Error("n-gram drafter: matches of 2 or more tokens, min <= max");
}

void NgramDrafter::consider(const int32_t* t, int64_t n, int64_t j, int max_tokens, Best& best) const {
  if (t[j] != t[n - 1]) return;
  int len = 1;
  while (len < max_match_ && j - len >= 0 && t[j - len] == t[n - 1 - len]) ++len;
  if (len < min_match_) return;
  const int follow = int(std::min<int64_t>(max_tokens, n - 1 - j));
  if (len > best.len || (len == best.len && follow > best.follow)) best = {len, follow, j};
}

int NgramDrafter::draft(std::span<const int32_t> tokens, int max_tokens, int32_t* out) const {
  const int64_t n = int64_t(tokens.size());
  if (max_tokens <= 0 || n < min_match_ + 1) return 0;
  const int32_t* t = tokens.data();
  // Every earlier position j holding the last token ends a candidate match:
  // t[j - i] == t[n - 1 - i] for i < length. What may be drafted is t[j + 1 ..
  // n), at most max_tokens of it.
  Best best;
  for (int64_t j = n - 2; j >= 0; --j) {
    consider(t, n, j, max_tokens, best);
    if (best.len == max_match_ && best.follow == max_tokens) break;  // nothing earlier can do better
  }
  return take(t, best, out);
}

int NgramDrafter::indexed_draft(Index& ix, std::span<const int32_t> tokens, int64_t capacity, int max_tokens,
                                int32_t* out) const {
  const int64_t n = int64_t(tokens.size());
  const int32_t* t = tokens.data();
  if (ix.head.empty()) {  // a sequence seen for the first time: sized once for all it may hold
    ix.head.assign(size_t(1) << kHashBits, -1);
    ix.prev.reserve(size_t(std::max(capacity, n)));
    ix.prev.push_back(-1);  // position 0 ends no pair
  }
  if (int64_t(ix.prev.size()) > n) {  // tokens are only ever added; anything else starts the index again
    ix.head.assign(ix.head.size(), -1);
    ix.prev.assign(1, -1);
  }
  // Index the pairs ending before the last position (the last pair is the one looked up).
  for (int64_t j = int64_t(ix.prev.size()); j < n - 1; ++j) {
    int32_t& h = ix.head[pair_hash(t, j)];
    ix.prev.push_back(h);
    h = int32_t(j);
  }
  if (max_tokens <= 0 || n < min_match_ + 1) return 0;
  Best best;
  int candidates = 0;
  for (int64_t j = ix.head[pair_hash(t, n - 1)]; j >= 0 && candidates < kMaxCandidates; j = ix.prev[size_t(j)], ++candidates) {
    consider(t, n, j, max_tokens, best);
    if (best.len == max_match_ && best.follow == max_tokens) break;
  }
  return take(t, best, out);
}

void NgramDrafter::propose(std::span<DraftRequest> requests) {
  for (DraftRequest& r : requests) r.n = indexed_draft(index_[r.seq_id], r.tokens, r.capacity, r.max_tokens, r.out);
}

}  // namespace ember
