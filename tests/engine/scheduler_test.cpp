// The scheduler's token budget: a step in which a sequence decodes keeps the
// step budget, so a prompt beside it never delays its next token by more than
// that; a step of prompts alone takes the larger prefill budget.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/kv_manager.h"
#include "engine/sequence.h"
#include "util/error.h"

using namespace ember;

namespace {

constexpr int kVocab = 100;

std::unique_ptr<Sequence> prompt_of(uint64_t id, int n) {
  GenerationRequest r;
  for (int i = 0; i < n; ++i) r.prompt.push_back(int32_t((i * 7 + int(id)) % kVocab));
  auto s = std::make_unique<Sequence>(id, r, kVocab, kVocab);
  s->tokens = s->req.prompt;
  s->n_prompt = n;
  s->out = std::make_shared<RequestStream>(id, [] {});
  return s;
}

// What the engine does once a planned step has run: the fed tokens are computed.
void ran(const std::vector<PlannedSeq>& plan) {
  for (const PlannedSeq& p : plan) p.seq->n_computed += p.n_tokens;
}

SchedulerLimits limits(int max_running, int step_tokens, int prefill_step_tokens) {
  return {.max_running = max_running, .step_tokens = step_tokens, .prefill_step_tokens = prefill_step_tokens,
          .max_logit_rows = max_running};
}

int tokens_of(const std::vector<PlannedSeq>& plan, const Sequence& s) {
  for (const PlannedSeq& p : plan)
    if (p.seq == &s) return p.n_tokens;
  return 0;
}

// A pool of 64 blocks of 16 positions without a prefix cache, and the scheduler's plan.
class Scheduling : public ::testing::Test {
 protected:
  KvManager kv{64, 16, /*prefix_cache=*/false};
  std::vector<PlannedSeq> plan;
};

}  // namespace

TEST_F(Scheduling, PromptsAloneTakeThePrefillBudgetAndShareAStepWithDecodingOnlyUpToTheStepBudget) {
  Scheduler sched(kv, limits(4, 8, 32));

  // A prompt alone: steps of 32 tokens.
  auto a = prompt_of(1, 40);
  sched.add(a.get());
  sched.plan(plan);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(tokens_of(plan, *a), 32);
  EXPECT_EQ(plan[0].logits, LogitsWanted::None);
  ran(plan);
  sched.plan(plan);
  EXPECT_EQ(tokens_of(plan, *a), 8);  // the rest of it, with its logit row
  EXPECT_EQ(plan[0].logits, LogitsWanted::Last);
  ran(plan);
  a->tokens.push_back(5);  // its first answer token: now it decodes

  // A second prompt beside a decoding sequence: the step keeps the step budget.
  auto b = prompt_of(2, 100);
  sched.add(b.get());
  sched.plan(plan);
  EXPECT_EQ(tokens_of(plan, *a), 1);
  EXPECT_EQ(tokens_of(plan, *b), 7);
  ran(plan);

  // The decoding sequence gone: the prompt alone again, in steps of 32.
  sched.remove(a.get());
  kv.release(*a);
  sched.plan(plan);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(tokens_of(plan, *b), 32);
}

TEST_F(Scheduling, WithoutAPrefillBudgetPromptsAloneKeepTheStepBudget) {
  Scheduler sched(kv, limits(2, 8, 0));
  auto a = prompt_of(1, 40);
  sched.add(a.get());
  sched.plan(plan);
  EXPECT_EQ(tokens_of(plan, *a), 8);

  EXPECT_THROW(Scheduler(kv, limits(2, 8, -1)), Error);
}
