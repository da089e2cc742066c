#include "engine/ngram_drafter.h"

#include <algorithm>

#include "util/error.h"

namespace ember {

NgramDrafter::NgramDrafter(int min_match, int max_match) : min_match_(min_match), max_match_(max_match) {
  if (min_match < 1 || max_match < min_match) throw Error("n-gram drafter: matches of 1 or more tokens, min <= max");
}

void NgramDrafter::propose(std::span<DraftRequest> requests) {
  for (DraftRequest& r : requests) r.n = draft(r.tokens, r.max_tokens, r.out);
}

int NgramDrafter::draft(std::span<const int32_t> tokens, int max_tokens, int32_t* out) const {
  const int64_t n = int64_t(tokens.size());
  if (max_tokens <= 0 || n < min_match_ + 1) return 0;
  const int32_t* t = tokens.data();
  const int32_t last = t[n - 1];
  // Every earlier position j holding the last token ends a candidate match:
  // t[j - i] == t[n - 1 - i] for i < length. What may be drafted is t[j + 1 ..
  // n), at most max_tokens of it.
  int best_len = 0, best_follow = 0;
  int64_t best_j = -1;
  for (int64_t j = n - 2; j >= 0; --j) {
    if (t[j] != last) continue;
    int len = 1;
    while (len < max_match_ && j - len >= 0 && t[j - len] == t[n - 1 - len]) ++len;
    if (len < min_match_) continue;
    const int follow = int(std::min<int64_t>(max_tokens, n - 1 - j));
    if (len > best_len || (len == best_len && follow > best_follow)) {
      best_len = len;
      best_follow = follow;
      best_j = j;
      if (len == max_match_ && follow == max_tokens) break;  // nothing earlier can do better
    }
  }
  if (best_j < 0) return 0;
  std::copy(t + best_j + 1, t + best_j + 1 + best_follow, out);
  return best_follow;
}

}  // namespace ember
