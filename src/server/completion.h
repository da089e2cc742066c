// One generation's result gathered from its engine stream, and the pieces
// both APIs report about it: why it stopped, which stop string ended it, the
// log-probabilities of its tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::server {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely tokens, best first
};

struct Completion {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;  // with logprobs asked for
  FinishReason reason = FinishReason::None;
  std::string error;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  int64_t prediction_kept = 0, prediction_dropped = 0;  // with a prediction (RequestUpdate)
};

// Log-softmax of one row of logits at `chosen`, and the `top` best tokens.
TokenLogprob token_logprob(const float* logits, int64_t vocab, int32_t chosen, int top);

// Adds an update to the result; with `top_logprobs` >= 0 (and keep_logits on
// the request), the update's logits become logprobs.
void absorb(Completion& c, const RequestUpdate& u, int64_t vocab, int top_logprobs);

// The stop string that ended generation, or "" when none did: the text the
// engine released stops just before it, so the full decode continues with it.
std::string matched_stop(const Tokenizer& tok, const Completion& c, const std::vector<std::string>& stops);

}  // namespace ember::server
