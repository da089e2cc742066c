#include "engine/session.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace ember {

Session::Session(CpuBackend& backend, KvPool& kv) : backend_(backend), kv_(kv) {
  // Sized for the whole context now, so decode steps allocate nothing.
  batch_.seqs.resize(1);
  tokens_.reserve(size_t(backend.options().max_context));
  blocks_.reserve(size_t(backend.options().max_context / kv.block_size() + 1));
}

Session::~Session() {
  for (int32_t b : blocks_) kv_.release(b);
}

const float* Session::step(std::span<const int32_t> chunk, LogitsWanted want) {
  const int64_t end = length() + int64_t(chunk.size());
  if (end > max_context())
    throw Error("prompt and output need " + std::to_string(end) + " tokens, more than the context of " +
                std::to_string(max_context()) + " (raise --ctx)");
  kv_.reserve(blocks_, end);
  SeqStep& s = batch_.seqs[0];
  s.tokens = chunk.data();
  s.n_tokens = int(chunk.size());
  s.pos = length();
  s.blocks = blocks_.data();
  s.n_blocks = int(blocks_.size());
  s.logits = want;
  const float* logits = backend_.forward(batch_, kv_);
  tokens_.insert(tokens_.end(), chunk.begin(), chunk.end());
  return logits;
}

const float* Session::append(std::span<const int32_t> tokens) {
  if (tokens.empty()) throw Error("nothing to append");
  const size_t chunk = size_t(backend_.options().max_tokens);
  const float* logits = nullptr;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, chunk));
    logits = step(part, i + part.size() == tokens.size() ? LogitsWanted::Last : LogitsWanted::None);
  }
  return logits;
}

}  // namespace ember
