// Turning logits into the next token: penalties, then greedy or
// temperature / top-k / min-p / top-p sampling from a seeded generator, by the
// pick rules every backend shares (engine/pick.h).
//
// All buffers are sized for the vocabulary at construction; sample()
// allocates nothing.
//
// Robustness: the parameters are validated at construction
// (engine/sampling_validation.h); ids at or above `valid_vocab` (embedding
// padding rows the tokenizer has no token for) are never chosen; logits that
// are NaN or +inf, or that leave no token with a finite logit, raise
// BadLogits instead of undefined behaviour, so the engine can end that one
// sequence and let the others continue. Most logits at -inf (grammar masks)
// is a normal case: a token of probability 0 is never picked.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/pick.h"
#include "util/error.h"

namespace ember {

struct SamplingParams {
  float temperature = 0.0f;         // 0: greedy (argmax); so is anything below kMinTemperature (engine/pick.h)
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off; drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  // 1: off; divides positive / multiplies negative logits of recent tokens
  float presence_penalty = 0.0f;    // subtracted once from each recent token's logit
  float frequency_penalty = 0.0f;   // subtracted per occurrence
  int penalty_last_n = 64;          // how many recent tokens the penalties look at; -1: all
  uint64_t seed = 0;
};

// The logits of one sequence cannot be sampled (NaN, +inf, or every token masked).
class BadLogits : public Error {
 public:
  using Error::Error;
};

class Sampler {
 public:
  // Throws ember::Error for parameters outside their ranges (message names the range).
  Sampler(const SamplingParams& p, int vocab);
  // valid_vocab: ids >= valid_vocab are masked (the tokenizer has fewer tokens
  // than the embedding has rows, as in Qwen checkpoints). 1 <= valid_vocab <= vocab.
  Sampler(const SamplingParams& p, int vocab, int valid_vocab);
  // `recent`: the tokens so far (prompt and generated); only the last penalty_last_n count.
  // Throws BadLogits (see above).
  int32_t sample(const float* logits, std::span<const int32_t> recent);
  const SamplingParams& params() const { return p_; }
  // Whether any penalty changes the logits before the pick.
  bool penalises() const {
    return p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  }
  // The pick is the plain argmax of the logits (greedy, no penalty): what greedy_id() of engine/backend.h gives.
  bool plain_greedy() const { return pick().greedy() && !penalises(); }
  int valid_vocab() const { return valid_vocab_; }
  // The pick rules of these parameters (engine/pick.h), without a draw.
  Pick pick() const;
  // The next uniform number in [0, 1) of the seeded generator: one per sampled token,
  // whether the host picks it (sample()) or the backend does (Pick::draw).
  double draw();
  // The next n draws, without taking them: a drafting step's picks (each
  // delivered token then takes its draw()).
  void peek_draws(int n, double* out) const;

 private:
  SamplingParams p_;
  int vocab_;
  int valid_vocab_;
  std::mt19937_64 rng_;
  std::vector<float> work_;                      // penalised logits
  std::vector<int32_t> counts_;                  // occurrences of each token in the window
  PickScratch scratch_;
};

}  // namespace ember
