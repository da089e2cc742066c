// Hostile sampling parameters, flags and logits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cli/flag_checks.h"
#include "engine/sampler.h"
#include "engine/sampling_validation.h"
#include "expect_error.h"

using namespace ember;

namespace {

SamplingParams with(void (*f)(SamplingParams&)) {
  SamplingParams p;
  p.temperature = 0.8f;
  f(p);
  return p;
}

TEST(HostileSampling, ParametersOutsideTheirRangesAreRefusedWithTheRange) {
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.temperature = NAN; })), {"temperature", "nan"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.temperature = -1; })), {"temperature", ">= 0"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.temperature = INFINITY; })), {"temperature"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.top_k = -1; })), {"top-k", "-1", "0 .."});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.top_p = 1.5f; })), {"top-p", "1.5", "(0, 1]"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.top_p = 0; })), {"top-p", "(0, 1]"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.min_p = NAN; })), {"min-p", "[0, 1]"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.repetition_penalty = 0; })), {"repetition penalty"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.presence_penalty = NAN; })), {"presence penalty"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.frequency_penalty = -INFINITY; })), {"frequency penalty"});
  EXPECT_CLEAR_ERROR(validate_sampling(with([](SamplingParams& p) { p.penalty_last_n = -2; })), {"penalty window"});
  EXPECT_NO_THROW(validate_sampling(SamplingParams{}));
  // The sampler applies the same checks.
  EXPECT_CLEAR_ERROR(Sampler(with([](SamplingParams& p) { p.temperature = NAN; }), 10), {"temperature"});
}

TEST(HostileSampling, ThreadsAndContextFlags) {
  EXPECT_CLEAR_ERROR(validate_threads(100000), {"threads", "100000"});
  EXPECT_CLEAR_ERROR(validate_threads(-1), {"threads", "-1"});
  EXPECT_EQ(validate_threads(0), 0);
  EXPECT_EQ(validate_threads(2), 2);
  EXPECT_CLEAR_ERROR(resolve_context(0, 4096), {"context", "0", "1 .. 4096"});
  EXPECT_CLEAR_ERROR(resolve_context(-1, 4096), {"context", "-1"});
  EXPECT_CLEAR_ERROR(resolve_context(5000, 4096), {"context", "5000", "4096"});
  EXPECT_EQ(resolve_context(std::nullopt, 40960), 4096);
  EXPECT_EQ(resolve_context(std::nullopt, 512), 512);
  EXPECT_EQ(resolve_context(100, 512), 100);
  EXPECT_CLEAR_ERROR(validate_token_id(300, 256), {"token id", "300", "0 .. 255"});
}

// The CLI11 validators refuse what CLI::Range lets through (NaN).
TEST(HostileSampling, FlagValidatorsRefuseNan) {
  auto check = [](const CLI::Validator& v, std::string text) { return v(text); };
  EXPECT_NE(check(cli::real_in("temperature", 0, INFINITY), "nan"), "");
  EXPECT_NE(check(cli::real_in("top-p", 0, 1, true), "1.01"), "");
  EXPECT_NE(check(cli::real_in("top-p", 0, 1, true), "abc"), "");
  EXPECT_EQ(check(cli::real_in("top-p", 0, 1, true), "0.9"), "");
  EXPECT_NE(check(cli::integer_in("top-k", 0, 1000), "-1"), "");
  EXPECT_NE(check(cli::integer_in("threads", 0, max_threads()), "100000"), "");
  EXPECT_NE(check(cli::integer_in("threads", 0, max_threads()), "99999999999999999999"), "");
  EXPECT_EQ(check(cli::integer_in("top-k", 0, 1000), "40"), "");
}

TEST(HostileSampling, NanInfAndAllMaskedLogitsAreReportedNotSampled) {
  SamplingParams p;
  p.temperature = 0.7f;
  for (float t : {0.0f, 0.7f}) {
    p.temperature = t;
    Sampler s(p, 4);
    std::vector<float> l = {0.5f, NAN, 1.0f, 0.0f};
    EXPECT_THROW(s.sample(l.data(), {}), BadLogits);
    l = {0.5f, INFINITY, 1.0f, 0.0f};
    EXPECT_THROW(s.sample(l.data(), {}), BadLogits);
    l.assign(4, -INFINITY);
    EXPECT_CLEAR_ERROR(s.sample(l.data(), {}), {"-inf"});
  }
}

TEST(HostileSampling, MostLogitsMinusInfinityNeverPicksAMaskedToken) {
  const int vocab = 1000;
  std::vector<float> l(vocab, -INFINITY);
  l[17] = 0.0f;
  l[900] = -1.0f;
  for (auto [k, pp, minp] : {std::tuple{0, 1.0f, 0.0f}, {5, 1.0f, 0.0f}, {0, 0.5f, 0.0f}, {0, 1.0f, 0.2f}, {2000, 0.99f, 0.0f}}) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = k;
    p.top_p = pp;
    p.min_p = minp;
    p.seed = 3;
    Sampler s(p, vocab);
    int hits17 = 0;
    for (int i = 0; i < 2000; ++i) {
      const int32_t id = s.sample(l.data(), {});
      ASSERT_TRUE(id == 17 || id == 900) << id;
      hits17 += id == 17;
    }
    if (k == 0 && pp == 1.0f && minp == 0.0f) EXPECT_NEAR(hits17 / 2000.0, 1 / (1 + std::exp(-1.0)), 0.04);
  }
}

TEST(HostileSampling, IdsBeyondTheTokenizerAreMasked) {
  // 8 embedding rows, 5 tokens: the padding rows have the largest logits.
  std::vector<float> l = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 9.0f, 9.0f, 9.0f};
  SamplingParams greedy;
  Sampler g(greedy, 8, 5);
  EXPECT_EQ(g.sample(l.data(), {}), 4);
  SamplingParams p;
  p.temperature = 2.0f;
  Sampler s(p, 8, 5);
  for (int i = 0; i < 1000; ++i) ASSERT_LT(s.sample(l.data(), {}), 5);
  EXPECT_THROW(Sampler(p, 8, 9), Error);
  EXPECT_THROW(Sampler(p, 8, 0), Error);
}

}  // namespace
