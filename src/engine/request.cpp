#include "engine/request.h"

namespace ember {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "?";
}

bool RequestStream::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return has_news(); });
}

bool RequestStream::next(RequestUpdate& u) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return has_news(); });
  if (final_taken_) return false;
  u.tokens.clear();
  u.text.clear();
  u.logits.clear();
  std::swap(u.tokens, pending_.tokens);
  std::swap(u.text, pending_.text);
  std::swap(u.logits, pending_.logits);
  u.finished = pending_.finished;
  u.reason = pending_.reason;
  u.error = pending_.error;
  u.prompt_tokens = pending_.prompt_tokens;
  u.cached_tokens = pending_.cached_tokens;
  u.prediction_kept = pending_.prediction_kept;
  u.prediction_dropped = pending_.prediction_dropped;
  if (u.finished) final_taken_ = true;
  return true;
}

void RequestStream::cancel() {
  cancel_.store(true, std::memory_order_relaxed);
  if (wake_) wake_();
}

void RequestStream::reserve(size_t tokens, size_t text_bytes) {
  std::lock_guard lk(mu_);
  pending_.tokens.reserve(tokens);
  pending_.text.reserve(text_bytes);
}

void RequestStream::set_prompt(int64_t prompt_tokens, int64_t cached_tokens) {
  std::lock_guard lk(mu_);
  pending_.prompt_tokens = prompt_tokens;
  pending_.cached_tokens = cached_tokens;
}

void RequestStream::count_prediction(int64_t kept, int64_t dropped) {
  std::lock_guard lk(mu_);
  pending_.prediction_kept += kept;
  pending_.prediction_dropped += dropped;
}

void RequestStream::push(int32_t id, std::string_view text, const float* logits, int64_t vocab) {
  {
    std::lock_guard lk(mu_);
    pending_.tokens.push_back(id);
    pending_.text.append(text);
    if (logits) pending_.logits.insert(pending_.logits.end(), logits, logits + vocab);
  }
  cv_.notify_one();
}

void RequestStream::push_text(std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard lk(mu_);
    pending_.text.append(text);
  }
  cv_.notify_one();
}

void RequestStream::finish(FinishReason reason, std::string error) {
  {
    std::lock_guard lk(mu_);
    pending_.finished = true;
    pending_.reason = reason;
    pending_.error = std::move(error);
  }
  cv_.notify_all();
}

}  // namespace ember
