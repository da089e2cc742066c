#include "engine/sampler.h"

#include "engine/backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace ember;

namespace {

std::vector<float> log_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> h(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++h[size_t(s.sample(logits.data(), {}))];
  return h;
}

TEST(Sampler, GreedyPicksArgmax) {
  Sampler s(SamplingParams{}, 5);
  const std::vector<float> l = {0.1f, -2.0f, 3.5f, 3.4f, 0.0f};
  EXPECT_EQ(s.sample(l.data(), {}), 2);
}

// plain_greedy() is what lets the engine take the backend's argmax instead:
// only greedy without penalties, and then the sampler's pick is greedy_id()'s.
TEST(Sampler, PlainGreedyIsTheBackendsArgmax) {
  const std::vector<float> l = {0.1f, 3.5f, -2.0f, 3.5f, 0.0f};
  Sampler plain(SamplingParams{}, 5);
  EXPECT_TRUE(plain.plain_greedy());
  EXPECT_EQ(plain.sample(l.data(), {}), greedy_id(l.data(), 5));
  SamplingParams p;
  p.temperature = 0.5f;
  EXPECT_FALSE(Sampler(p, 5).plain_greedy());
  for (int which = 0; which < 3; ++which) {
    SamplingParams q;
    if (which == 0) q.repetition_penalty = 1.1f;
    if (which == 1) q.presence_penalty = 0.5f;
    if (which == 2) q.frequency_penalty = 0.5f;
    const Sampler s(q, 5);
    EXPECT_TRUE(s.penalises()) << which;
    EXPECT_FALSE(s.plain_greedy()) << which;
  }
}

TEST(Sampler, TemperatureFollowsTheDistribution) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 7;
  Sampler s(p, 3);
  const auto h = histogram(s, log_probs({0.2, 0.5, 0.3}), 20000);
  EXPECT_NEAR(h[0] / 20000.0, 0.2, 0.015);
  EXPECT_NEAR(h[1] / 20000.0, 0.5, 0.015);
  EXPECT_NEAR(h[2] / 20000.0, 0.3, 0.015);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  Sampler a(p, 4), b(p, 4);
  p.seed = 43;
  Sampler c(p, 4);
  const auto l = log_probs({0.25, 0.25, 0.25, 0.25});
  std::vector<int> sa, sb, sc;
  for (int i = 0; i < 64; ++i) {
    sa.push_back(a.sample(l.data(), {}));
    sb.push_back(b.sample(l.data(), {}));
    sc.push_back(c.sample(l.data(), {}));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(Sampler, TopKKeepsOnlyTheBest) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  Sampler s(p, 4);
  const auto h = histogram(s, log_probs({0.1, 0.4, 0.15, 0.35}), 5000);
  EXPECT_EQ(h[0], 0);
  EXPECT_EQ(h[2], 0);
  EXPECT_NEAR(h[1] / 5000.0, 0.4 / 0.75, 0.03);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.6f;
  Sampler s(p, 3);
  const auto h = histogram(s, log_probs({0.5, 0.3, 0.2}), 5000);
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[1], 0);
  EXPECT_EQ(h[2], 0);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = 0.5f;  // keep p >= 0.25
  Sampler s(p, 3);
  const auto h = histogram(s, log_probs({0.5, 0.3, 0.2}), 5000);
  EXPECT_GT(h[1], 0);
  EXPECT_EQ(h[2], 0);
}

TEST(Sampler, RepetitionPenaltyDemotesRecentTokens) {
  SamplingParams p;
  p.repetition_penalty = 1.1f;
  Sampler s(p, 2);
  const std::vector<float> l = {2.0f, 1.9f};
  const std::vector<int32_t> recent = {0};
  EXPECT_EQ(s.sample(l.data(), recent), 1);
  EXPECT_EQ(s.sample(l.data(), {}), 0);
}

TEST(Sampler, FrequencyPenaltyCountsOccurrences) {
  SamplingParams p;
  p.frequency_penalty = 0.3f;
  Sampler s(p, 2);
  const std::vector<float> l = {2.0f, 1.5f};
  const std::vector<int32_t> once = {0}, twice = {0, 0};
  EXPECT_EQ(s.sample(l.data(), once), 0);   // 2.0 - 0.3 > 1.5
  EXPECT_EQ(s.sample(l.data(), twice), 1);  // 2.0 - 0.6 < 1.5
}

TEST(Sampler, RejectsBadParameters) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_THROW(Sampler(p, 4), std::exception);
}

}  // namespace

// A repetition penalty near 0 divides a positive logit into +inf; the sampler
// must refuse the step cleanly instead of indexing an empty candidate list.
TEST(Sampler, PenaltyPushingALogitToInfinityIsACleanError) {
  ember::SamplingParams p;
  p.temperature = 0.8f;
  p.repetition_penalty = 1e-30f;
  ember::Sampler s(p, 4);
  const float logits[4] = {1e10f, 1.0f, -1.0f, 0.5f};  // 1e10 / 1e-30 overflows a float
  const int32_t recent[1] = {0};
  EXPECT_THROW(s.sample(logits, recent), ember::BadLogits);
}
