// One sequence running on a backend: feed tokens in, get logits out.
//
// A Session owns its KV block table in a shared KvPool. Long inputs are
// prefilled in chunks of at most the backend's step size. `ember run`,
// `ember logits` and the tests drive the model through this.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/kv_pool.h"

namespace ember {

class Session {
 public:
  Session(CpuBackend& backend, KvPool& kv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Appends tokens; returns the logits after the last one (vocab floats, valid until the next call).
  const float* append(std::span<const int32_t> tokens);
  // Appends tokens and calls on_logits(index, logits) for every one of them.
  template <class F>
  void append_all_logits(std::span<const int32_t> tokens, F&& on_logits);

  int64_t length() const { return int64_t(tokens_.size()); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t max_context() const { return backend_.options().max_context; }

 private:
  const float* step(std::span<const int32_t> chunk, LogitsWanted want);
  CpuBackend& backend_;
  KvPool& kv_;
  std::vector<int32_t> blocks_;
  std::vector<int32_t> tokens_;
  StepBatch batch_;
};

template <class F>
void Session::append_all_logits(std::span<const int32_t> tokens, F&& on_logits) {
  const int64_t vocab = backend_.model().desc().vocab;
  const int64_t chunk = std::min(backend_.options().max_tokens, backend_.options().max_logit_rows);
  for (size_t i = 0; i < tokens.size(); i += size_t(chunk)) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, size_t(chunk)));
    const float* logits = step(part, LogitsWanted::All);
    for (size_t j = 0; j < part.size(); ++j) on_logits(int64_t(i + j), logits + int64_t(j) * vocab);
  }
}

}  // namespace ember
