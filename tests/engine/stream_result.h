// What a request's stream delivered, read to its end: the tokens, a hash of
// each logit row they were picked from (with keep_logits), and how it ended.
// Two results compare equal only when the tokens and every logit bit are equal.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/request.h"

struct StreamResult {
  std::vector<int32_t> ids;
  std::vector<uint64_t> logit_hashes;  // one per generated token
  std::string text;                    // with a tokenizer
  int64_t cached = -1;
  int64_t prediction_kept = 0, prediction_dropped = 0;  // with a prediction
  ember::FinishReason reason = ember::FinishReason::None;
  std::string error;
};

inline uint64_t hash_row(const float* p, int64_t n) {  // FNV-1a over the bytes: equal only if bit-identical
  uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (int64_t i = 0; i < n * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Reads the stream to its end; with cancel_after >= 0, cancels it once that many tokens arrived.
inline StreamResult drain(ember::RequestStream& s, int64_t vocab, int cancel_after = -1) {
  StreamResult r;
  ember::RequestUpdate u;
  while (s.next(u)) {
    for (size_t i = 0; i < u.tokens.size(); ++i) {
      r.ids.push_back(u.tokens[i]);
      if (!u.logits.empty()) r.logit_hashes.push_back(hash_row(u.logits.data() + int64_t(i) * vocab, vocab));
    }
    r.text += u.text;
    if (cancel_after >= 0 && int(r.ids.size()) >= cancel_after) s.cancel();
    if (u.finished) {
      r.cached = u.cached_tokens;
      r.prediction_kept = u.prediction_kept;
      r.prediction_dropped = u.prediction_dropped;
      r.reason = u.reason;
      r.error = u.error;
    }
  }
  return r;
}

// Each request alone on a fresh engine without a prefix cache: the reference the engine tests compare with.
inline std::vector<StreamResult> each_alone(ember::Backend& b, const std::vector<ember::GenerationRequest>& reqs) {
  ember::EngineOptions o;
  o.max_running = 1;
  o.prefix_cache = false;
  std::vector<StreamResult> out;
  for (const auto& r : reqs) {
    ember::Engine e(b, nullptr, o);
    out.push_back(drain(*e.submit(r), b.model().desc().vocab));
  }
  return out;
}

// All requests at once, each drained on its own thread; with cancel_every > 0,
// every cancel_every-th request is cancelled after its second token.
inline std::vector<StreamResult> all_at_once(ember::Engine& e, int64_t vocab, const std::vector<ember::GenerationRequest>& reqs,
                                             int cancel_every = 0) {
  std::vector<std::shared_ptr<ember::RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back(e.submit(r));
  std::vector<StreamResult> out(reqs.size());
  std::vector<std::thread> th;
  for (size_t i = 0; i < reqs.size(); ++i)
    th.emplace_back([&, i] {
      const bool cancel = cancel_every > 0 && i % size_t(cancel_every) == 0;
      out[i] = drain(*streams[i], vocab, cancel ? 2 : -1);
    });
  for (auto& t : th) t.join();
  return out;
}
