// What a client gives the engine, and the stream it reads the answer from.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace ember {

struct GenerationRequest {
  std::vector<int32_t> prompt;          // token ids, used exactly as given
  SamplingParams sampling;
  int max_tokens = 128;                 // new tokens at most (the context may end generation earlier)
  std::vector<int32_t> stop_ids;        // token ids that end generation, beside the tokenizer's end-of-generation ids
  std::vector<std::string> stop;        // stop strings (text never includes them); need a tokenizer
  bool ignore_eos = false;              // keep going past end-of-generation tokens
  bool keep_logits = false;             // also deliver the logits each token was sampled from
  ConstraintFactory constraint;         // optional: which tokens may come next (JSON schema, tool-call grammar)
  // Optional: the answer the client expects (OpenAI's predicted outputs), e.g. a file an edit returns
  // mostly unchanged. Drafts come from it (engine/prediction.h): the answer is the model's own, bit for
  // bit; where it follows the prediction it comes several tokens a step.
  std::vector<int32_t> prediction;
};

enum class FinishReason : uint8_t { None, Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

// What a consumer takes out of its stream: everything that arrived since the last take.
struct RequestUpdate {
  std::vector<int32_t> tokens;  // generated ids, an end-of-generation id that ended the request included
  std::string text;             // their text, held back while it may still turn into a stop string
  std::vector<float> logits;    // with keep_logits: vocab floats per token in `tokens`, the logits it was sampled from
  bool finished = false;        // the last update of the request
  FinishReason reason = FinishReason::None;
  std::string error;            // with FinishReason::Error
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;    // prompt tokens whose KV came from the prefix cache
  // With a prediction: its tokens drafted so far that the answer took, and those it did not.
  int64_t prediction_kept = 0, prediction_dropped = 0;
};

// One request's output, shared by the engine (producer) and a client
// (consumer). The engine appends under a mutex held for a few instructions;
// the consumer swaps the buffers out, so neither waits on the other's work,
// and a consumer waiting for tokens sleeps on a condition variable.
class RequestStream {
 public:
  RequestStream(uint64_t id, std::function<void()> wake_engine) : id_(id), wake_(std::move(wake_engine)) {}
  uint64_t id() const { return id_; }

  // Consumer: blocks until there is something new; returns false once the
  // final update has been taken.
  bool next(RequestUpdate& u);
  // Consumer: waits at most `timeout` for something new; true when next() would
  // not block. Lets a server check its client between waits.
  bool wait_for(std::chrono::milliseconds timeout);
  // Consumer: stops the request; its blocks are freed at the engine's next step.
  void cancel();

  // Engine side.
  bool cancel_requested() const { return cancel_.load(std::memory_order_relaxed); }
  void reserve(size_t tokens, size_t text_bytes);
  void set_prompt(int64_t prompt_tokens, int64_t cached_tokens);
  void count_prediction(int64_t kept, int64_t dropped);  // adds to RequestUpdate::prediction_kept / _dropped
  void push(int32_t id, std::string_view text, const float* logits, int64_t vocab);
  void push_text(std::string_view text);
  void finish(FinishReason reason, std::string error = {});

 private:
  bool has_news() const {  // under mu_
    return final_taken_ || pending_.finished || !pending_.tokens.empty() || !pending_.text.empty();
  }
  const uint64_t id_;
  std::function<void()> wake_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  RequestUpdate pending_;
  bool final_taken_ = false;
};

}  // namespace ember
