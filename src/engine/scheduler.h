// Which sequences run in the next step, with how many tokens: the policy half
// of the engine (engine_core.cpp is the mechanism that runs the plan).
//
// Every step is formed anew:
//   1. each running sequence with one token to feed (decoding, or finishing)
//      gets it, oldest first; when no block is left for a new position, the
//      most recently admitted sequence is preempted (its KV goes into the
//      prefix cache, from where it is evicted only if blocks are needed, and it
//      waits to be admitted again);
//   2. the rest of the token budget goes to prompts, oldest first: sequences
//      already prefilling continue, then waiting ones are admitted while there
//      are free sequence slots and blocks, each in chunks of what fits, so a
//      long prompt never stalls the others' decoding. A step in which no
//      sequence decodes has the larger prefill budget: with no one waiting on
//      a token, a prompt goes through in fewer, longer steps, which a GPU runs
//      at a far higher rate.
// Waiting sequences are admitted in arrival order only: a later request never
// overtakes an earlier one that is waiting for blocks.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv_manager.h"
#include "engine/sequence.h"
#include "engine/step_batch.h"

namespace ember {

struct SchedulerLimits {
  int max_running = 16;   // sequences admitted at once
  int step_tokens = 256;  // new tokens per step, all sequences together
  int prefill_step_tokens = 0;  // ... in a step where no sequence decodes (at most the backend's; 0: step_tokens)
  int max_logit_rows = 16;
};

struct PlannedSeq {
  Sequence* seq;
  int n_tokens;
  LogitsWanted logits;
  int n_draft = 0;  // of n_tokens, those of a draft after the next token (speculation.h); then logits All
};

class Scheduler {
 public:
  Scheduler(KvManager& kv, const SchedulerLimits& lim);

  void add(Sequence* s);     // a new request, waiting
  void remove(Sequence* s);  // a finished or cancelled one, whatever its state (blocks already released)
  // Forms the next step into `plan` (cleared first). Empty when there is nothing to run.
  void plan(std::vector<PlannedSeq>& plan);

  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  int64_t preemptions() const { return preemptions_; }

 private:
  void preempt(Sequence* s, std::vector<PlannedSeq>& plan);
  void enqueue_waiting(Sequence* s);
  KvManager& kv_;
  SchedulerLimits lim_;
  std::vector<Sequence*> running_;  // in admission order
  std::deque<Sequence*> waiting_;   // in arrival order
  int64_t preemptions_ = 0;
};

}  // namespace ember
