#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ember {

Sampler::Sampler(const SamplingParams& p, int vocab)
    : p_(p), vocab_(vocab), rng_(p.seed), work_(size_t(vocab)), counts_(size_t(vocab), 0) {
  if (vocab <= 0) throw Error("sampler needs a positive vocabulary size");
  if (p.top_p <= 0 || p.top_p > 1) throw Error("top_p must be in (0, 1]");
  if (p.min_p < 0 || p.min_p > 1) throw Error("min_p must be in [0, 1]");
  if (p.top_k < 0) throw Error("top_k must be >= 0");
  if (p.repetition_penalty <= 0) throw Error("repetition_penalty must be > 0");
  cand_.reserve(size_t(vocab));
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> recent) {
  std::copy(logits, logits + vocab_, work_.begin());

  // Penalties over the recent window.
  const bool penalise = p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  if (penalise && !recent.empty()) {
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
    return int32_t(std::max_element(work_.begin(), work_.end()) - work_.begin());
  }

  // Candidates, cut to the top k (by logit) when asked.
  cand_.clear();
  for (int i = 0; i < vocab_; ++i) cand_.emplace_back(work_[size_t(i)], i);
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
  double total = 0;
  for (const auto& c : cand_) total += c.first;
  std::uniform_real_distribution<double> u(0.0, total);
  double x = u(rng_);
  for (const auto& c : cand_) {
    x -= c.first;
    if (x <= 0) return c.second;
  }
  return cand_.back().second;
}

}  // namespace ember
