// The pick rules of engine/pick.h: pick_id against a reference that follows
// their text with a full sort, on rows with masks, ties and flat or peaked
// distributions, and the filters' effect on what can be drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/pick.h"

using namespace ember;

namespace {

// The rules written out plainly: every candidate sorted, the prefix cut by
// each filter, the kept ones walked in id order.
int32_t reference_pick(const std::vector<float>& l, const Pick& p) {
  const int n = int(l.size());
  if (p.greedy()) return greedy_id(l.data(), n);
  std::vector<int32_t> order;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(l[size_t(i)]) || l[size_t(i)] == INFINITY) return kPickNonFinite;
    if (l[size_t(i)] != -INFINITY) order.push_back(i);
  }
  if (order.empty()) return kPickAllMasked;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b); });
  if (p.top_k > 0 && size_t(p.top_k) < order.size()) order.resize(size_t(p.top_k));
  const float mx = l[size_t(order[0])];
  std::vector<float> w(size_t(n), 0.0f);
  double sum = 0;
  for (int32_t i : order) sum += w[size_t(i)] = std::exp((l[size_t(i)] - mx) * (1.0f / p.temperature));
  std::erase_if(order, [&](int32_t i) { return !(w[size_t(i)] > kMinWeight) || w[size_t(i)] < p.min_p; });
  if (p.top_p < 1.0f) {
    double cum = 0;
    size_t keep = 0;
    while (keep < order.size() && cum < double(p.top_p) * sum) cum += w[size_t(order[keep++])];
    order.resize(keep);
  }
  std::sort(order.begin(), order.end());
  double total = 0;
  for (int32_t i : order) total += w[size_t(i)];
  double x = p.draw * total;
  for (int32_t i : order) {
    if (x < w[size_t(i)]) return i;
    x -= w[size_t(i)];
  }
  return order.back();
}

std::vector<float> row(std::mt19937& g, int n, int kind) {
  std::normal_distribution<float> nd(0.0f, kind == 0 ? 1.0f : 6.0f);
  std::vector<float> l(static_cast<size_t>(n));
  for (auto& v : l) v = nd(g);
  if (kind == 2)  // ties: values on a coarse grid
    for (auto& v : l) v = std::round(v);
  if (kind == 3)  // masked, as a grammar masks
    for (size_t i = 0; i < l.size(); ++i)
      if (i % 3 != 0) l[i] = -INFINITY;
  return l;
}

TEST(Pick, FollowsTheRulesOnRandomRows) {
  std::mt19937 g(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const Pick filters[] = {{1.0f, 0, 1.0f, 0.0f}, {0.7f, 40, 1.0f, 0.0f}, {0.8f, 0, 0.9f, 0.0f}, {1.0f, 0, 1.0f, 0.05f},
                          {0.6f, 20, 0.8f, 0.02f}, {2.0f, 0, 0.99f, 0.0f}, {0.5f, 1, 1.0f, 0.0f}, {1.5f, 5000, 0.5f, 0.0f}};
  PickScratch scratch(70000);
  int checked = 0;
  for (const int n : {1, 7, 1000, 50257, 70000})
    for (int kind = 0; kind < 4; ++kind) {
      const auto l = row(g, n, kind);
      for (Pick p : filters)
        for (int d = 0; d < 8; ++d) {
          p.draw = d == 0 ? 0.0 : d == 1 ? std::nextafter(1.0, 0.0) : u(g);
          ASSERT_EQ(pick_id(l.data(), n, p, scratch), reference_pick(l, p))
              << "n " << n << " kind " << kind << " T " << p.temperature << " k " << p.top_k << " p " << p.top_p
              << " min_p " << p.min_p << " draw " << p.draw;
          ++checked;
        }
    }
  EXPECT_EQ(checked, 5 * 4 * 8 * 8);
}

TEST(Pick, TopPOverAFlatRowKeepsThousands) {
  // The head pick_id sorts first (64 candidates) falls far short here.
  std::vector<float> l(20000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = 0.001f * float(i % 97);
  Pick p{1.0f, 0, 0.9f, 0.0f, 0.0};
  PickScratch scratch(20000);
  std::vector<int32_t> seen;
  for (int d = 0; d < 200; ++d) {
    p.draw = (d + 0.5) / 200.0;
    const int32_t id = pick_id(l.data(), int(l.size()), p, scratch);
    ASSERT_EQ(id, reference_pick(l, p)) << p.draw;
    seen.push_back(id);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_GT(std::unique(seen.begin(), seen.end()) - seen.begin(), 150);
}

TEST(Pick, FiltersDecideWhatCanBeDrawn) {
  // Weights at temperature 1: 1, e^-1, e^-2, e^-3 (0.64, 0.24, 0.09, 0.03 of the mass).
  const std::vector<float> l = {-2.0f, 0.0f, -1.0f, -3.0f};
  PickScratch scratch(4);
  auto reachable = [&](Pick p) {
    std::vector<int32_t> ids;
    for (int d = 0; d < 1000; ++d) {
      p.draw = d / 1000.0;
      ids.push_back(pick_id(l.data(), 4, p, scratch));
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  };
  EXPECT_EQ(reachable({1.0f, 0, 1.0f, 0.0f}), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(reachable({1.0f, 2, 1.0f, 0.0f}), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(reachable({1.0f, 0, 0.8f, 0.0f}), (std::vector<int32_t>{1, 2}));   // 0.64 < 0.8 <= 0.88
  EXPECT_EQ(reachable({1.0f, 0, 0.9f, 0.0f}), (std::vector<int32_t>{0, 1, 2})); // 0.88 < 0.9
  EXPECT_EQ(reachable({1.0f, 0, 1.0f, 0.2f}), (std::vector<int32_t>{1, 2}));  // e^-2 = 0.135 < 0.2 < e^-1
  EXPECT_EQ(reachable({1.0f, 3, 0.5f, 0.0f}), (std::vector<int32_t>{1}));
  // A weight at or below kMinWeight (2^-41, about e^-28.4) is never drawn, even by a draw of 0.
  const std::vector<float> far = {-30.0f, 0.0f}, near = {-28.0f, 0.0f};
  EXPECT_EQ(pick_id(far.data(), 2, Pick{1.0f, 0, 1.0f, 0.0f, 0.0}, scratch), 1);
  EXPECT_EQ(pick_id(near.data(), 2, Pick{1.0f, 0, 1.0f, 0.0f, 0.0}, scratch), 0);
  // Drawing in id order: the lowest draws give the lowest kept id.
  Pick p{1.0f, 0, 1.0f, 0.0f, 0.0};
  EXPECT_EQ(pick_id(l.data(), 4, p, scratch), 0);
  p.draw = std::nextafter(1.0, 0.0);
  EXPECT_EQ(pick_id(l.data(), 4, p, scratch), 3);
}

TEST(Pick, TemperaturesTooSmallToInvertPickGreedily) {
  // 1 / 5e-40 overflows: weighed by it, the largest logit would get 0 * inf = NaN and nothing would be kept.
  const std::vector<float> l = {0.5f, 2.0f, 1.0f, 2.0f};
  PickScratch scratch(4);
  for (const float t : {5e-40f, 1e-35f, 0.0f}) {
    const Pick p{t, 0, 0.9f, 0.1f, 0.7};
    EXPECT_TRUE(p.greedy()) << t;
    EXPECT_EQ(pick_id(l.data(), 4, p, scratch), 1) << t;
  }
  EXPECT_FALSE((Pick{1e-30f, 0, 1.0f, 0.0f, 0.0}).greedy());
  EXPECT_EQ(pick_id(l.data(), 4, Pick{1e-30f, 0, 1.0f, 0.0f, 0.99}, scratch), 3) << "the two largest share the draw";
  EXPECT_EQ(pick_id(l.data(), 4, Pick{1e-30f, 0, 1.0f, 0.0f, 0.99}, scratch), reference_pick(l, Pick{1e-30f, 0, 1.0f, 0.0f, 0.99}));
}

TEST(Pick, BadRowsGiveTheirCodes) {
  PickScratch scratch(3);
  const Pick p{1.0f, 0, 1.0f, 0.0f, 0.5};
  std::vector<float> l = {0.0f, NAN, 1.0f};
  EXPECT_EQ(pick_id(l.data(), 3, p, scratch), kPickNonFinite);
  l = {0.0f, INFINITY, 1.0f};
  EXPECT_EQ(pick_id(l.data(), 3, p, scratch), kPickNonFinite);
  l = {-INFINITY, -INFINITY, -INFINITY};
  EXPECT_EQ(pick_id(l.data(), 3, p, scratch), kPickAllMasked);
  l = {-INFINITY, 2.0f, NAN};
  EXPECT_EQ(pick_id(l.data(), 2, p, scratch), 1) << "only the first n logits count";
}

}  // namespace
