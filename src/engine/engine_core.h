// The engine's step loop on one thread: the mechanism that runs what the
// scheduler plans. Each step: drop cancelled requests, plan, run the queued
// KV copies, one forward pass over the whole batch, then sample and deliver
// a token for every sequence that finished its pending tokens.
//
// Steps overlap with the host's work: while every running sequence decodes
// greedily with the pick made on the device, the engine queues step t + 1 (fed
// by step t's picks, which stay on the device) before it waits for step t and
// delivers its tokens (look_ahead()). A sequence that ends at step t then has
// its last token fed by step t + 1, which is exactly the step that keeps a
// finished answer in the prefix cache; without the cache that step's work for
// it is dropped.
//
// Nothing here allocates once a request is admitted: the batch, the plan and
// every sequence's token and block tables are sized up front.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend.h"
#include "engine/drafter.h"
#include "engine/kv_manager.h"
#include "engine/scheduler.h"
#include "engine/speculation.h"
#include "engine/sequence.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct EngineOptions {
  int max_running = 16;     // sequences decoding at once (--parallel)
  int step_tokens = 0;      // tokens per step; 0: the backend's limit
  // Tokens of a step in which no sequence decodes, only prompts (at most the
  // backend's limit; 0: step_tokens): a long prompt alone goes through in
  // fewer, longer steps without delaying anyone's next token.
  int prefill_step_tokens = 0;
  bool prefix_cache = true;
  bool overlap_steps = true;  // queue step t + 1 before reading step t's picks (look_ahead)
  // Sampled tokens (temperature, top-k, top-p, min-p) picked by the backend,
  // where the logits are; false: only plain greedy ones, the rest on the host.
  bool sample_on_backend = true;
  uint64_t cache_host_mem = 0;  // bytes of host memory that evicted prefixes go to before being dropped (0: none)
  // Speculative decoding (engine/drafter.h): up to this many draft tokens a
  // sequence feeds beside its next token (0: off), from `drafter` (null: the
  // n-gram lookup of ngram_drafter.h). The backend's step must have a logit row
  // for each of them (StepLimits::max_logit_rows).
  int draft_tokens = 0;
  std::shared_ptr<Drafter> drafter;
  // A request's predicted output (GenerationRequest::prediction) drafts up to
  // this many tokens a step, also where draft_tokens is 0 (0: predictions are
  // not used). Rows as for draft_tokens.
  int prediction_tokens = 16;
  static constexpr int kMaxDraftTokens = 32;
};

struct EngineStats {
  int running = 0, waiting = 0;
  int blocks_total = 0, blocks_free = 0;
  // Blocks the prefix cache holds, counted only while no request is live (-1
  // otherwise: the count walks the cache, which a decode step should not pay
  // for). Then blocks_total - blocks_free - blocks_cached is 0 unless blocks leak.
  int blocks_cached = -1;
  int64_t cached_tokens = 0;  // tokens held by the prefix cache (device and host)
  int host_slots = 0, host_slots_used = 0;  // the prefix cache's host tier, in blocks
  int64_t restored_blocks = 0;              // blocks brought back from the host tier
  int64_t steps = 0, preemptions = 0;
  int64_t steps_ahead = 0;  // steps queued before the host had read the step before them (look_ahead)
  int64_t draft_tokens = 0, accepted_tokens = 0;  // speculative decoding: tokens drafted, and kept
  // CPU time of the thread that runs the steps (scheduling, the backend's
  // submissions and waits, delivery into the streams), filled by Engine;
  // what the engine itself costs the host, apart from the threads reading
  // its streams. -1 where the system cannot say.
  double step_thread_cpu_seconds = -1;
};

class EngineCore {
 public:
  // `tok` (may be null) detokenizes, ends generation at its end-of-generation ids and serves stop strings.
  EngineCore(Backend& backend, const Tokenizer* tok, const EngineOptions& opt);
  ~EngineCore();

  // Throws ember::Error when the request can never run (empty prompt, ids
  // outside the vocabulary, no room in the context, bad sampling parameters).
  void validate(const GenerationRequest& req) const;
  // Validates and queues a request; the stream receives its output.
  void add(GenerationRequest req, std::shared_ptr<RequestStream> out);
  // Ends every live request with an error (after a failed step) and frees its blocks.
  void cancel_all(const std::string& why);
  // Runs one step; false when there was nothing to do.
  bool step();
  bool idle() const { return live_.empty() && !in_flight_; }

  EngineStats stats() const;
  // Every KV block is free, cached, or held by a live sequence, with matching reference counts.
  void check_accounting() const;
  const Backend& backend() const { return backend_; }

 private:
  // Samples the sequence's next token from its logit row, or takes picked_id
  // (the backend's pick) when logits is null; then streams and finishes it.
  // True while the sequence goes on decoding (false: finishing, ended or
  // retired). `took`, when given, receives the token (-1 when none was taken).
  // `guess`: the draft's token at this position (-1: none); a prediction's
  // token the answer takes is counted for the client before the answer can end.
  bool deliver(Sequence& s, const float* logits, int32_t picked_id, int32_t* took = nullptr, int32_t guess = -1);
  // A drafting sequence's step: its tokens from each position's logit row (or
  // the backend's pick from it) in turn, while the draft agrees with them.
  void verify(Sequence& s, int n_draft, const float* rows, const int32_t* ids);
  // Whether the backend picks the sequence's tokens (SeqStep::pick), and how, with the next draw.
  bool picks_on_backend(const Sequence& s) const;
  Pick backend_pick(Sequence& s);
  // Ends the request's stream; flush_text releases text held back for stop strings.
  void finish(Sequence& s, FinishReason reason, bool flush_text, std::string error = {});
  void flush_held_text(Sequence& s);
  // Ends the stream of a sequence the engine gives up on: with its own reason when its answer was
  // already complete (finishing), else with `reason` and `why`.
  void abandon(Sequence& s, FinishReason reason, const std::string& why);  // text held back for stop strings goes out
  void retire(Sequence& s);  // releases its blocks and forgets it (and drops it from the steps in flight)
  // Plans, and submits, the step that follows the one in flight when it is
  // certain to be every running sequence's next token, picked by the backend; false otherwise.
  bool look_ahead();
  // Waits for the step in flight and delivers its tokens.
  void collect();
  // Waits out whatever is queued on the backend, its results unread (cancel_all, the destructor).
  void drain();

  Backend& backend_;
  const Tokenizer* tok_;
  EngineOptions opt_;
  KvManager kv_;
  Scheduler sched_;
  std::unique_ptr<DraftPlanner> drafts_;  // with speculative decoding
  std::vector<std::unique_ptr<Sequence>> live_;
  // The step in flight (submitted, not yet collected) and the one queued behind
  // it; a retired sequence's entries become null.
  std::vector<PlannedSeq> plan_, next_plan_;
  StepBatch batch_, next_batch_;
  bool in_flight_ = false;
  int sampling_vocab_;  // ids the sampler may pick: the tokenizer's (padding rows of the embedding are masked)
  uint64_t next_id_ = 0;
  int64_t steps_ = 0, steps_ahead_ = 0;
  int64_t draft_tokens_ = 0, accepted_tokens_ = 0;
};

}  // namespace ember
