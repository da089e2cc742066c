#include "engine/prediction.h"

#include <algorithm>

namespace ember {

namespace {

// Matches of at least this many tokens mark where a lost answer rejoins the
// prediction (one token matches too often by chance), and at most this many
// are compared.
constexpr int kMinRejoin = 3, kMaxRejoin = 8;
constexpr int64_t kShortestDraft = 2;  // the draft's length before a run has shown the prediction right
// A lost answer is looked for this far after and before where it left: a
// bounded cost on the engine thread each step (a few microseconds) whatever
// the prediction's length; an edit rarely moves the answer further.
constexpr int64_t kRejoinWindow = 4096;

// The prediction's position after the longest match (kMinRejoin to kMaxRejoin
// tokens) of the sequence's last tokens, the nearest at or after `from` first,
// then the nearest before it; -1 when none. `len` receives the match's length.
int64_t rejoin(std::span<const int32_t> pred, std::span<const int32_t> tokens, int64_t from, int& len_out) {
  const int64_t P = int64_t(pred.size()), n = int64_t(tokens.size());
  if (n < kMinRejoin) return -1;
  const int32_t last = tokens[size_t(n - 1)];
  int best_len = 0;
  int64_t best = -1;
  auto consider = [&](int64_t p) {  // pred[p] == last: the match ends at p
    int len = 1;
    while (len < kMaxRejoin && p - len >= 0 && n - 1 - len >= 0 && pred[size_t(p - len)] == tokens[size_t(n - 1 - len)]) ++len;
    if (len >= kMinRejoin && len > best_len) {
      best_len = len;
      best = p + 1;
    }
  };
  const int64_t start = std::clamp<int64_t>(from, 0, P);
  for (int64_t p = start; p < std::min(P, start + kRejoinWindow) && best_len < kMaxRejoin; ++p)
    if (pred[size_t(p)] == last) consider(p);
  for (int64_t p = start - 1; p >= std::max<int64_t>(0, start - kRejoinWindow) && best_len < kMaxRejoin; --p)
    if (pred[size_t(p)] == last) consider(p);
  len_out = best_len;
  return best;
}

}  // namespace

int draft_from_prediction(std::span<const int32_t> prediction, std::span<const int32_t> tokens, int64_t n_prompt,
                          PredictionCursor& c, int max_tokens, int32_t* out) {
  const int64_t P = int64_t(prediction.size()), n = int64_t(tokens.size());
  for (int64_t j = std::max(c.seen, n_prompt); j < n; ++j) {
    if (c.next >= 0 && c.next < P && prediction[size_t(c.next)] == tokens[size_t(j)]) {
      c.last = ++c.next;
      ++c.run;
    } else {
      c.next = -1;
      c.run = 0;
    }
  }
  c.seen = n;
  if (c.next < 0) {
    int len = 0;
    c.next = rejoin(prediction, tokens, c.last, len);
    c.run = len;
    if (c.next >= 0) c.last = c.next;  // a later search starts from here
  }
  if (c.next < 0 || c.next >= P || max_tokens <= 0) return 0;
  const int len = int(std::min<int64_t>({max_tokens, P - c.next, std::max(c.run, kShortestDraft)}));
  std::copy_n(prediction.begin() + c.next, len, out);
  return len;
}

}  // namespace ember
