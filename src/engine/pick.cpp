#include "engine/pick.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace ember {

int32_t greedy_id(const float* logits, int n) {
  float best = -INFINITY;
  int32_t id = kPickAllMasked;
  bool bad = false;
  for (int i = 0; i < n; ++i) {
    const float l = logits[i];
    bad |= std::isnan(l) || l == INFINITY;
    if (l > best) {
      best = l;
      id = i;
    }
  }
  return bad ? kPickNonFinite : id;
}

namespace {

// Bits of a finite logit ordered as the logits are (-0 counts as +0, as equal logits do).
uint32_t order_key(float l) {
  uint32_t u;
  const float z = l + 0.0f;
  std::memcpy(&u, &z, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Candidate order: logit descending, id ascending.
bool before(const PickScratch::Cand& a, const PickScratch::Cand& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); }

// Whether candidate (l, i) is in the prefix of the order that ends with `end`.
bool up_to(float l, int i, const PickScratch::Cand& end) { return l > end.logit || (l == end.logit && i <= end.id); }

}  // namespace

// Each filter finds where the kept prefix of the candidate order ends without
// sorting the row: top-k by a histogram of the logits' leading bits, then a
// selection among the one bin's candidates; top-p by the weights summed in
// bins of d = (max - logit) / temperature, then a sort of the one bin where
// the share is reached. Every pass is over the row in id order, so the draw's
// walk needs no sort either. (A flat row, where top-p keeps most of the
// vocabulary, took 11 ms through sorting; a bin of it takes well under one.)
int32_t pick_id(const float* logits, int n, const Pick& p, PickScratch& scratch) {
  if (p.greedy()) return greedy_id(logits, n);
  float mx = -INFINITY;
  int count = 0;
  for (int i = 0; i < n; ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == INFINITY) return kPickNonFinite;
    if (l != -INFINITY) {
      ++count;
      mx = std::max(mx, l);
    }
  }
  if (count == 0) return kPickAllMasked;
  auto& c = scratch.cand_;

  // top-k: the k-th candidate, as the last of the kept prefix.
  PickScratch::Cand k_end{-INFINITY, INT32_MAX, 0.0f};  // every finite logit comes before it
  if (p.top_k > 0 && p.top_k < count) {
    auto& hist = scratch.key_hist_;
    std::fill(hist.begin(), hist.end(), 0u);
    for (int i = 0; i < n; ++i)
      if (logits[i] != -INFINITY) ++hist[order_key(logits[i]) >> PickScratch::kKeyShift];
    int b = int(hist.size()) - 1, above = 0;
    while (above + int(hist[size_t(b)]) < p.top_k) above += int(hist[size_t(b--)]);
    c.clear();
    for (int i = 0; i < n; ++i)
      if (logits[i] != -INFINITY && int(order_key(logits[i]) >> PickScratch::kKeyShift) == b) c.push_back({logits[i], i, 0.0f});
    const auto kth = c.begin() + (p.top_k - above - 1);
    std::nth_element(c.begin(), kth, c.end(), before);
    k_end = *kth;
  }

  // The weights by id (0: not a candidate, or dropped by kMinWeight or min-p), and their sum over the
  // top-k candidates (four running sums, so the additions do not wait on each other).
  auto& w = scratch.by_id_;
  w.assign(size_t(n), 0.0f);
  const float inv_t = 1.0f / p.temperature;
  auto weigh = [&](int i, double& acc) {
    const float l = logits[i];
    if (l == -INFINITY || !up_to(l, i, k_end)) return;
    const float wi = std::exp((l - mx) * inv_t);
    acc += wi;
    // Masked, not branched on: which side a weight falls is a coin toss on many rows.
    const uint32_t keep = 0u - uint32_t((wi > kMinWeight) & (wi >= p.min_p));
    w[size_t(i)] = std::bit_cast<float>(std::bit_cast<uint32_t>(wi) & keep);
  };
  double acc[4] = {0, 0, 0, 0};
  int q = 0;
  for (; q + 3 < n; q += 4) {
    weigh(q, acc[0]);
    weigh(q + 1, acc[1]);
    weigh(q + 2, acc[2]);
    weigh(q + 3, acc[3]);
  }
  for (; q < n; ++q) weigh(q, acc[0]);
  const double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);  // what top-p takes a share of

  // top-p: the shortest prefix of the kept candidates whose weights reach top_p * sum.
  PickScratch::Cand p_end{-INFINITY, INT32_MAX, 0.0f};
  if (p.top_p < 1.0f) {
    const double target = double(p.top_p) * sum;
    auto& bins = scratch.bin_mass_;
    std::fill(bins.begin(), bins.end(), 0.0);
    const int last_bin = int(bins.size()) - 1;
    // Non-decreasing in d, so each bin holds a stretch of the candidate order (-inf: the last bin).
    auto bin = [&](float l) { return int(std::min((mx - l) * inv_t * PickScratch::kBinsPerUnit, float(last_bin))); };
    for (int i = 0; i < n; ++i) bins[size_t(bin(logits[i]))] += w[size_t(i)];  // a weight of 0 adds nothing
    double cum = 0;
    int b = 0;
    while (b <= last_bin && cum + bins[size_t(b)] < target) cum += bins[size_t(b++)];
    if (b <= last_bin) {  // else rounding left the share above the total: every candidate stays
      c.clear();
      for (int i = 0; i < n; ++i)
        if (bin(logits[i]) == b && w[size_t(i)] > 0.0f) c.push_back({logits[i], i, w[size_t(i)]});
      std::sort(c.begin(), c.end(), before);
      for (const auto& e : c) {
        cum += e.w;
        p_end = e;
        if (cum >= target) break;
      }
    }
  }

  // The draw, over the kept candidates in id order (the others weigh 0 here, without a branch).
  auto kept_weight = [&](int i) {
    return up_to(logits[i], i, p_end) ? w[size_t(i)] : 0.0f;
  };
  // Sums per tile of 256 ids, then the tile where x falls, then the id, walking on past the tile
  // if rounding left x at or above its sum.
  constexpr int kTile = PickScratch::kTile;
  const int nt = (n + kTile - 1) / kTile;
  auto& tiles = scratch.tile_mass_;
  tiles.assign(size_t(nt), 0.0);
  double total = 0;
  for (int t = 0; t < nt; ++t) {
    const int lo = t * kTile, hi = std::min(n, lo + kTile);
    double a[4] = {0, 0, 0, 0};
    int i = lo;
    for (; i + 3 < hi; i += 4)
      for (int u = 0; u < 4; ++u) a[u] += kept_weight(i + u);
    for (; i < hi; ++i) a[0] += kept_weight(i);
    total += tiles[size_t(t)] = (a[0] + a[1]) + (a[2] + a[3]);
  }
  if (!(total > 0)) return kPickAllMasked;  // not expected: the largest weighs 1 and min_p <= 1
  double x = p.draw * total;
  int t = 0;
  while (t + 1 < nt && !(x < tiles[size_t(t)])) x -= tiles[size_t(t++)];
  for (int i = t * kTile; i < n; ++i) {
    const float wi = kept_weight(i);
    if (x < wi) return i;
    x -= wi;
  }
  for (int i = n - 1; i >= 0; --i)  // rounding left x at or above every weight: the last kept id
    if (kept_weight(i) > 0.0f) return i;
  return kPickAllMasked;
}

}  // namespace ember
