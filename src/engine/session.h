// One sequence fed straight to a backend, token by token or in chunks, with
// the logits of every position available: `ember logits`, perplexity and the
// tests that compare logits with a reference. (Generation goes through the
// Engine, which schedules many sequences at once; see engine/engine.h.)
//
// The session owns the blocks of its table in the given allocator and
// releases them when it ends. Long inputs go in chunks of at most the
// backend's step size.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "engine/block_allocator.h"
#include "model/model.h"

namespace ember {

class Session {
 public:
  Session(Backend& backend, BlockAllocator& blocks);
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
  int64_t max_context() const { return backend_.limits().max_context; }

 private:
  const float* step(std::span<const int32_t> chunk, LogitsWanted want);
  Backend& backend_;
  BlockAllocator& alloc_;
  std::vector<int32_t> blocks_;
  std::vector<int32_t> tokens_;
  StepBatch batch_;
};

template <class F>
void Session::append_all_logits(std::span<const int32_t> tokens, F&& on_logits) {
  const int64_t vocab = backend_.model().desc().vocab;
  const int64_t chunk = std::min(backend_.limits().max_tokens, backend_.limits().max_logit_rows);
  for (size_t i = 0; i < tokens.size(); i += size_t(chunk)) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, size_t(chunk)));
    const float* logits = step(part, LogitsWanted::All);
    for (size_t j = 0; j < part.size(); ++j) on_logits(int64_t(i + j), logits + int64_t(j) * vocab);
  }
}

}  // namespace ember
