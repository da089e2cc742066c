#include "server/generation.h"

#include "server/api_error.h"

namespace ember::server {

Generation::Generation(ServerContext& ctx, const GenerationRequest& req, int n, int top_logprobs)
    : ctx_(ctx), top_logprobs_(top_logprobs), vocab_(ctx.model.tok->vocab_size()), start_(Clock::now()) {
  if (!ctx.admit()) throw ApiError(429, "too many requests are waiting; retry shortly");
  try {
    for (int i = 0; i < n; ++i) {
      GenerationRequest r = req;
      r.sampling.seed += uint64_t(i);
      streams_.push_back(ctx.engine->submit(std::move(r)));
      ctx.track(streams_.back());
    }
  } catch (const Error& e) {
    for (auto& s : streams_) s->cancel();
    ctx.leave();
    throw ApiError(400, e.what());
  } catch (...) {
    for (auto& s : streams_) s->cancel();
    ctx.leave();
    throw;
  }
  results_.resize(streams_.size());
  done_.assign(streams_.size(), false);
}

Generation::~Generation() {
  int64_t prompt = 0, cached = 0, generated = 0;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!done_[i]) streams_[i]->cancel();  // its blocks go back at the engine's next step
    generated += int64_t(results_[i].tokens.size());
  }
  if (!results_.empty()) {
    prompt = results_[0].prompt_tokens;
    cached = results_[0].cached_tokens;
  }
  ctx_.metrics.count_tokens(prompt, cached, generated);
  ctx_.leave();
}

bool Generation::next(size_t i, RequestUpdate& u, const std::function<bool()>& still_wanted) {
  if (done_[i]) return false;
  while (!streams_[i]->wait_for(std::chrono::milliseconds(100))) {
    if (!still_wanted()) {
      streams_[i]->cancel();
      return false;
    }
  }
  if (!streams_[i]->next(u)) {
    done_[i] = true;
    return false;
  }
  if (!u.tokens.empty()) {
    const auto now = Clock::now();
    if (last_token_ == Clock::time_point{}) {
      ctx_.metrics.observe_first_token(std::chrono::duration<double>(now - start_).count());
    } else {
      ctx_.metrics.observe_between_tokens(std::chrono::duration<double>(now - last_token_).count() / double(u.tokens.size()));
    }
    last_token_ = now;
  }
  absorb(results_[i], u, vocab_, top_logprobs_);
  if (u.finished) done_[i] = true;
  return true;
}

bool Generation::run_all(const std::function<bool()>& still_wanted) {
  RequestUpdate u;
  for (size_t i = 0; i < streams_.size(); ++i) {
    while (next(i, u, still_wanted)) {
    }
    if (!done_[i]) return false;
  }
  return true;
}

void Generation::cancel() {
  for (size_t i = 0; i < streams_.size(); ++i)
    if (!done_[i]) streams_[i]->cancel();
}

std::string Generation::error() const {
  for (const Completion& c : results_)
    if (c.reason == FinishReason::Error) return c.error.empty() ? "generation failed" : c.error;
  return {};
}

}  // namespace ember::server
