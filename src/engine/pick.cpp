#include "engine/pick.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

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

int32_t pick_id(const float* logits, int n, const Pick& p, PickScratch& scratch) {
  if (p.greedy()) return greedy_id(logits, n);
  auto& c = scratch.cand_;
  c.clear();
  for (int i = 0; i < n; ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == INFINITY) return kPickNonFinite;
    if (l != -INFINITY) c.push_back({l, i, 0.0f});
  }
  if (c.empty()) return kPickAllMasked;
  auto before = [](const PickScratch::Cand& a, const PickScratch::Cand& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  bool id_order = true;  // c stays in id order until a cut reorders it
  if (p.top_k > 0 && size_t(p.top_k) < c.size()) {
    std::nth_element(c.begin(), c.begin() + p.top_k, c.end(), before);
    c.resize(size_t(p.top_k));
    id_order = false;
  }
  float mx = -INFINITY;
  for (const auto& e : c) mx = std::max(mx, e.logit);
  const float inv_t = 1.0f / p.temperature;
  double sum = 0;  // over the top-k candidates: what top-p is a share of
  for (auto& e : c) {
    e.w = std::exp((e.logit - mx) * inv_t);
    sum += e.w;
  }
  std::erase_if(c, [&](const auto& e) { return !(e.w > kMinWeight) || e.w < p.min_p; });
  if (c.empty()) return kPickAllMasked;  // not expected: the largest weighs 1 and min_p <= 1
  if (p.top_p < 1.0f) {
    // The shortest prefix in candidate order reaching top_p * sum. Usually a
    // few dozen tokens: sort a head of the candidates, widening it only when it
    // falls short, instead of sorting the whole vocabulary.
    // (A head past an eighth of them is not worth narrowing: all are sorted.)
    const double target = double(p.top_p) * sum;
    size_t head = std::min(c.size(), size_t(64));
    for (;;) {
      if (head < c.size()) std::nth_element(c.begin(), c.begin() + std::ptrdiff_t(head), c.end(), before);
      std::sort(c.begin(), c.begin() + std::ptrdiff_t(head), before);
      double cum = 0;
      size_t keep = 0;
      while (keep < head && cum < target) cum += c[keep++].w;
      if (cum >= target || head == c.size()) {
        c.resize(keep);
        break;
      }
      head = head * 16 > c.size() / 8 ? c.size() : head * 16;
    }
    id_order = false;
  }
  double total = 0;
  for (const auto& e : c) total += e.w;
  double x = p.draw * total;
  if (!id_order) {
    if (c.size() > size_t(n) / 16) {
      // Many kept (a flat row): walk the ids through a table of weights rather than sort them.
      auto& by_id = scratch.by_id_;
      by_id.assign(size_t(n), 0.0f);
      for (const auto& e : c) by_id[size_t(e.id)] = e.w;
      int32_t last = -1;
      for (int i = 0; i < n; ++i) {
        const float w = by_id[size_t(i)];
        if (w == 0.0f) continue;
        if (x < w) return i;
        x -= w;
        last = i;
      }
      return last;  // rounding left x at or above the last weight
    }
    std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  }
  for (const auto& e : c) {
    if (x < e.w) return e.id;
    x -= e.w;
  }
  return c.back().id;  // rounding left x at or above the last weight
}

}  // namespace ember
