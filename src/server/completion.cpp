#include "server/completion.h"

#include <algorithm>
#include <cmath>

namespace ember::server {

TokenLogprob token_logprob(const float* logits, int64_t vocab, int32_t chosen, int top) {
  float max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  const float log_z = float(max + std::log(sum));
  TokenLogprob t;
  t.id = chosen;
  t.logprob = logits[chosen] - log_z;
  top = int(std::min<int64_t>(top, vocab));
  if (top > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) ids[size_t(i)] = int32_t(i);
    std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int i = 0; i < top; ++i) t.top.emplace_back(ids[size_t(i)], logits[ids[size_t(i)]] - log_z);
  }
  return t;
}

void absorb(Completion& c, const RequestUpdate& u, int64_t vocab, int top_logprobs) {
  if (top_logprobs >= 0 && u.logits.size() == u.tokens.size() * size_t(vocab))
    for (size_t i = 0; i < u.tokens.size(); ++i)
      c.logprobs.push_back(token_logprob(u.logits.data() + i * size_t(vocab), vocab, u.tokens[i], top_logprobs));
  c.tokens.insert(c.tokens.end(), u.tokens.begin(), u.tokens.end());
  c.text += u.text;
  if (u.finished) {
    c.reason = u.reason;
    c.error = u.error;
    c.prompt_tokens = u.prompt_tokens;
    c.cached_tokens = u.cached_tokens;
    c.prediction_kept = u.prediction_kept;
    c.prediction_dropped = u.prediction_dropped;
  }
}

std::string matched_stop(const Tokenizer& tok, const Completion& c, const std::vector<std::string>& stops) {
  if (c.reason != FinishReason::Stop || stops.empty() || c.tokens.empty()) return {};
  if (tok.is_end_of_generation(c.tokens.back())) return {};
  std::string full;
  try {
    full = tok.decode(c.tokens, /*skip_special=*/true);
  } catch (const Error&) {
    return {};
  }
  if (!full.starts_with(c.text)) return {};
  const std::string_view after = std::string_view(full).substr(c.text.size());
  for (const std::string& s : stops)
    if (after.starts_with(s)) return s;
  return {};
}

}  // namespace ember::server
