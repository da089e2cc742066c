// Turning logits into the next token: penalties, then greedy or
// temperature / top-k / min-p / top-p sampling from a seeded generator.
//
// All buffers are sized for the vocabulary at construction; sample()
// allocates nothing.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace ember {

struct SamplingParams {
  float temperature = 0.0f;         // <= 0: greedy (argmax)
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off; drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  // 1: off; divides positive / multiplies negative logits of recent tokens
  float presence_penalty = 0.0f;    // subtracted once from each recent token's logit
  float frequency_penalty = 0.0f;   // subtracted per occurrence
  int penalty_last_n = 64;          // how many recent tokens the penalties look at; -1: all
  uint64_t seed = 0;
};

class Sampler {
 public:
  Sampler(const SamplingParams& p, int vocab);
  // `recent`: the tokens so far (prompt and generated); only the last penalty_last_n count.
  int32_t sample(const float* logits, std::span<const int32_t> recent);
  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  int vocab_;
  std::mt19937_64 rng_;
  std::vector<float> work_;                      // penalised logits
  std::vector<int32_t> counts_;                  // occurrences of each token in the window
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id) candidates
};

}  // namespace ember
