// One request inside the engine: its tokens, where its KV lives, and how far it got.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/prediction.h"
#include "engine/prefix_cache.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct Sequence {
  enum class State : uint8_t {
    Waiting,    // not admitted, or preempted: holds no blocks
    Running,    // admitted: prefilling its pending tokens or decoding
    Finishing,  // answer complete; its last token is fed once more so the cache holds all of it,
                // then the stream is told it finished (so a next turn sent at once finds it all)
    Done,       // answer complete, blocks released (preempted while finishing): to be retired
  };

  Sequence(uint64_t id, GenerationRequest r, int vocab, int valid_vocab)
      : id(id), req(std::move(r)), sampler(req.sampling, vocab, valid_vocab) {}

  const uint64_t id;             // arrival order: first come, first served
  GenerationRequest req;
  std::shared_ptr<RequestStream> out;
  State state = State::Waiting;

  std::vector<int32_t> tokens;   // the prompt, then every generated token
  int64_t n_prompt = 0;
  int64_t n_computed = 0;        // leading tokens whose keys/values are in `blocks`
  std::vector<int32_t> blocks;   // block table: block i holds positions [i * block_size, (i + 1) * block_size)
  PrefixCache::Node* cache_lock = nullptr;
  int64_t cached_tokens = -1;    // prompt tokens found in the cache at first admission; -1 before it
  int generated = 0;
  FinishReason finish_reason = FinishReason::None;  // set when the answer is complete (Finishing, Done)
  bool finish_flush = true;                         // release text held back for stop strings when finishing

  Sampler sampler;
  std::optional<StreamDecoder> decoder;
  std::optional<StopStringFilter> stop_filter;
  std::unique_ptr<TokenConstraint> constraint;  // with req.constraint
  std::vector<float> masked_logits;             // the constraint's copy of this sequence's logits
  std::vector<int32_t> fed;                     // a drafting step's tokens: the next one, then the draft (speculation.h)
  std::vector<double> draws;                    // a sampled drafting step's draw for each fed token's pick (SeqStep::draws)
  PredictionCursor prediction_at;               // where the answer stands along req.prediction
  int prediction_look_at = 0;                   // where it has left it: looked for again at this many generated tokens
  int draft_misses = 0;                         // the drafter's drafts in a row that brought nothing ...
  int64_t draft_again_at = 0;                   // ... so it is asked again at this many generated tokens
  bool draft_from_prediction = false;           // this step's draft is the prediction's (counted for the client)

  int64_t pending() const { return int64_t(tokens.size()) - n_computed; }  // tokens to feed
};

}  // namespace ember
