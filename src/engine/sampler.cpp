#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/sampling_validation.h"
#include "util/error.h"

namespace ember {

Sampler::Sampler(const SamplingParams& p, int vocab) : Sampler(p, vocab, vocab) {}

Sampler::Sampler(const SamplingParams& p, int vocab, int valid_vocab)
    : p_(p), vocab_(vocab), valid_vocab_(valid_vocab), rng_(p.seed) {
  if (vocab <= 0) throw Error("sampler needs a positive vocabulary size");
  check_integer("sampler valid vocabulary", valid_vocab, 1, vocab);
  validate_sampling(p);
  work_.resize(size_t(vocab));
  counts_.assign(size_t(vocab), 0);
  cand_.reserve(size_t(vocab));
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> recent) {
  // Only the ids the tokenizer has are candidates; the rest stay at -inf.
  std::copy(logits, logits + valid_vocab_, work_.begin());
  std::fill(work_.begin() + valid_vocab_, work_.end(), -INFINITY);
  bool any_finite = false;
  for (int i = 0; i < valid_vocab_; ++i) {
    const float l = work_[size_t(i)];
    if (std::isnan(l) || l == INFINITY)
      throw BadLogits("the model produced a " + std::string(std::isnan(l) ? "NaN" : "+inf") + " logit (token " +
                      std::to_string(i) + "): the sequence cannot continue");
    any_finite |= l != -INFINITY;
  }
  if (!any_finite) throw BadLogits("every logit is -inf: no token can be sampled");

  // Penalties over the recent window.
  if (penalises() && !recent.empty()) {
    const size_t n = p_.penalty_last_n < 0 ? recent.size() : std::min(recent.size(), size_t(p_.penalty_last_n));
    const auto window = recent.subspan(recent.size() - n);
    for (int32_t id : window)
      if (id >= 0 && id < vocab_) ++counts_[size_t(id)];
    for (int32_t id : window) {
      if (id < 0 || id >= vocab_ || counts_[size_t(id)] == 0) continue;
      float& l = work_[size_t(id)];
      if (p_.repetition_penalty != 1.0f) l = l > 0 ? l / p_.repetition_penalty : l * p_.repetition_penalty;
      l -= p_.presence_penalty + p_.frequency_penalty * float(counts_[size_t(id)]);
      counts_[size_t(id)] = 0;  // each token penalised once; also resets the counts for the next call
    }
  }

  if (p_.temperature <= 0.0f) {
    return int32_t(std::max_element(work_.begin(), work_.begin() + valid_vocab_) - work_.begin());
  }

  // Candidates, cut to the top k (by logit) when asked.
  // -inf (masked) tokens have probability 0: they are not candidates at all.
  cand_.clear();
  for (int i = 0; i < valid_vocab_; ++i) {
    const float l = work_[size_t(i)];
    if (l == -INFINITY) continue;
    // A repetition penalty near 0 divides a positive logit into +inf: no softmax is defined then.
    if (!std::isfinite(l)) throw BadLogits("a penalty pushed token " + std::to_string(i) + "'s logit out of range");
    cand_.emplace_back(l, i);
  }
  if (cand_.empty()) throw BadLogits("every logit is -inf after penalties: no token can be sampled");
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  if (p_.top_k > 0 && size_t(p_.top_k) < cand_.size()) {
    std::nth_element(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    cand_.resize(size_t(p_.top_k));
  }
  // Softmax at the temperature (in place: first becomes probability).
  float mx = -INFINITY;
  for (const auto& c : cand_) mx = std::max(mx, c.first);
  double sum = 0;
  for (auto& c : cand_) {
    c.first = std::exp((c.first - mx) / p_.temperature);
    sum += c.first;
  }
  for (auto& c : cand_) c.first = float(c.first / sum);
  // A finite logit far below the maximum underflows to probability 0: drop it
  // too, so that no draw (u may be exactly 0) can land on it.
  std::erase_if(cand_, [](const auto& c) { return !(c.first > 0); });
  // min-p: relative to the most likely token (whose probability is exp(0)/sum).
  if (p_.min_p > 0) {
    const float floor = p_.min_p * float(1.0 / sum);
    std::erase_if(cand_, [&](const auto& c) { return c.first < floor; });
  }
  // top-p: the smallest most-likely set whose mass reaches top_p.
  if (p_.top_p < 1.0f) {
    std::sort(cand_.begin(), cand_.end(), by_logit);
    double cum = 0;
    size_t keep = 0;
    while (keep < cand_.size()) {
      cum += cand_[keep++].first;
      if (cum >= p_.top_p) break;
    }
    cand_.resize(keep);
  }
  if (cand_.empty()) throw BadLogits("no token is left after the sampling filters");
  double total = 0;
  for (const auto& c : cand_) total += c.first;
  std::uniform_real_distribution<double> u(0.0, total);
  double x = u(rng_);
  for (const auto& c : cand_) {
    if (x < c.first) return c.second;
    x -= c.first;
  }
  return cand_.back().second;  // rounding left x >= the last probability
}

}  // namespace ember
