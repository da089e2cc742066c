#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/sampling_validation.h"
#include "util/error.h"

namespace ember {

Sampler::Sampler(const SamplingParams& p, int vocab) : Sampler(p, vocab, vocab) {}

Sampler::Sampler(const SamplingParams& p, int vocab, int valid_vocab)
    : p_(p), vocab_(vocab), valid_vocab_(valid_vocab), rng_(p.seed), scratch_(vocab) {
  if (vocab <= 0) throw Error("sampler needs a positive vocabulary size");
  check_integer("sampler valid vocabulary", valid_vocab, 1, vocab);
  validate_sampling(p);
  work_.resize(size_t(vocab));
  counts_.assign(size_t(vocab), 0);
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

  Pick pk = pick();
  if (pk.greedy()) return int32_t(std::max_element(work_.begin(), work_.begin() + valid_vocab_) - work_.begin());
  // A repetition penalty near 0 divides a positive logit into +inf: no softmax is defined then.
  if (penalises())
    for (int32_t id : recent)
      if (id >= 0 && id < valid_vocab_ && work_[size_t(id)] == INFINITY)
        throw BadLogits("a penalty pushed token " + std::to_string(id) + "'s logit out of range");
  pk.draw = draw();
  const int32_t id = pick_id(work_.data(), valid_vocab_, pk, scratch_);
  if (id == kPickAllMasked) throw BadLogits("every logit is -inf after penalties: no token can be sampled");
  if (id < 0) throw BadLogits("the logits cannot be sampled");
  return id;
}

Pick Sampler::pick() const {
  Pick pk;
  pk.temperature = p_.temperature;
  pk.top_k = p_.top_k;
  pk.top_p = p_.top_p;
  pk.min_p = p_.min_p;
  return pk;
}

double Sampler::draw() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

void Sampler::peek_draws(int n, double* out) const {
  std::mt19937_64 ahead = rng_;
  for (int i = 0; i < n; ++i) out[i] = std::uniform_real_distribution<double>(0.0, 1.0)(ahead);
}

}  // namespace ember
