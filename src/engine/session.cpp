#include "engine/session.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace ember {

Session::Session(Backend& backend, BlockAllocator& blocks) : backend_(backend), alloc_(blocks) {
  // Sized for the whole context now, so decode steps allocate nothing.
  const int64_t ctx = backend.limits().max_context;
  batch_.seqs.resize(1);
  tokens_.reserve(size_t(ctx));
  blocks_.reserve(size_t(ctx / backend.kv_config().block_size + 1));
}

Session::~Session() {
  for (int32_t b : blocks_) alloc_.release(b);
}

const float* Session::step(std::span<const int32_t> chunk, LogitsWanted want) {
  const int64_t end = length() + int64_t(chunk.size());
  if (end > max_context())
    throw Error("prompt and output need " + std::to_string(end) + " tokens, more than the context of " +
                std::to_string(max_context()) + " (raise --ctx)");
  const int bs = backend_.kv_config().block_size;
  while (int64_t(blocks_.size()) * bs < end) {
    const int b = alloc_.allocate();
    if (b < 0)
      throw Error("KV cache is full: " + std::to_string(end) + " positions need " + std::to_string((end + bs - 1) / bs) +
                  " blocks of " + std::to_string(bs) + ", the pool has " + std::to_string(alloc_.n_blocks()));
    blocks_.push_back(b);
  }
  SeqStep& s = batch_.seqs[0];
  s.tokens = chunk.data();
  s.n_tokens = int(chunk.size());
  s.pos = length();
  s.blocks = blocks_.data();
  s.n_blocks = int(blocks_.size());
  s.logits = want;
  const float* logits = backend_.forward(batch_);
  tokens_.insert(tokens_.end(), chunk.begin(), chunk.end());
  return logits;
}

const float* Session::append(std::span<const int32_t> tokens) {
  if (tokens.empty()) throw Error("nothing to append");
  const size_t chunk = size_t(backend_.limits().max_tokens);
  const float* logits = nullptr;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, chunk));
    logits = step(part, i + part.size() == tokens.size() ? LogitsWanted::Last : LogitsWanted::None);
  }
  return logits;
}

}  // namespace ember
