// The decode loop allocates nothing after load: every heap allocation in this
// test binary is counted, and decode steps (forward + sampling) must add none.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine_core.h"
#include "engine/model_drafter.h"
#include "engine/ngram_drafter.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "model/model.h"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t al = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace ember;

class DecodeAllocation : public ::testing::TestWithParam<std::string> {};

std::unique_ptr<Model> peer_model(const std::string& type) {
  return Model::load((std::filesystem::path(EMBER_SHARED_DIR) / "testdata/peer-gguf-qwen3" / ("qwen3-tiny-" + type + ".gguf")).string());
}

TEST_P(DecodeAllocation, DecodeStepsAllocateNothing) {
  auto model = peer_model(GetParam());
  StepLimits o;
  o.max_context = 256;
  o.max_tokens = 32;
  KvConfig kvc;
  kvc.n_blocks = o.max_context / 16;
  CpuBackend backend(*model, o, kvc, 2);
  BlockAllocator kv(kvc.n_blocks);
  Session session(backend, kv);
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = 40;
  sp.top_p = 0.9f;
  sp.repetition_penalty = 1.1f;
  Sampler sampler(sp, model->desc().vocab);
  const std::vector<int32_t> prompt = {1656, 1561, 821, 2457, 734, 945, 1019, 547};
  const float* logits = session.append(prompt);
  int32_t id = sampler.sample(logits, session.tokens());
  logits = session.append(std::span<const int32_t>(&id, 1));  // first decode step may warm caches

  const long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) {  // crosses several KV blocks
    id = sampler.sample(logits, session.tokens());
    logits = session.append(std::span<const int32_t>(&id, 1));
  }
  EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations during 100 decode steps";
  EXPECT_EQ(session.length(), 8 + 1 + 100);
}

// An engine over the CPU backend with three requests of 150 tokens after
// prompts that differ in one token, stepped past their prefill and first
// decode steps. all_greedy: plain greedy requests (the backend picks their
// ids, and the engine queues each step ahead); else one greedy, two sampled.
// draft: speculative decoding with drafts of up to that many tokens, by
// n-gram lookup or from `drafter`.
struct ThreeRequests {
  static StepLimits limits(int draft) {
    StepLimits o;
    o.max_context = 256;
    o.max_tokens = 32;
    o.max_logit_rows = 4 * (1 + draft);
    return o;
  }
  static KvConfig kv() {
    KvConfig k;
    k.n_blocks = 64;
    return k;
  }
  static EngineOptions options(int draft, std::shared_ptr<Drafter> drafter) {
    EngineOptions eo;
    eo.max_running = 4;
    eo.draft_tokens = draft;
    eo.drafter = std::move(drafter);
    return eo;
  }
  ThreeRequests(const std::string& type, bool all_greedy, int draft = 0, std::shared_ptr<Drafter> drafter = nullptr,
                const std::vector<std::vector<int32_t>>& predictions = {})
      : model(peer_model(type)),
        backend(*model, limits(std::max(draft, predictions.empty() ? 0 : EngineOptions().prediction_tokens)), kv(), 2),
        core(backend, nullptr, options(draft, std::move(drafter))) {
    for (int r = 0; r < 3; ++r) {
      GenerationRequest req;
      if (!predictions.empty()) req.prediction = predictions[size_t(r)];
      req.prompt = {1656, 1561, 821, 2457, 734, int32_t(945 + r), 1019, 547};
      req.max_tokens = 150;
      req.ignore_eos = all_greedy;
      req.sampling.temperature = r == 0 || all_greedy ? 0.0f : 0.8f;
      req.sampling.top_k = all_greedy ? 0 : 40;
      req.sampling.seed = uint64_t(r);
      streams.push_back(std::make_shared<RequestStream>(uint64_t(r), nullptr));
      core.add(req, streams.back());
    }
    for (int i = 0; i < 3; ++i) core.step();  // prefill and the first decode steps
  }
  std::unique_ptr<Model> model;
  CpuBackend backend;
  EngineCore core;
  std::vector<std::shared_ptr<RequestStream>> streams;
};

// The same through the serving engine: a step (schedule, forward, sample,
// deliver to the request's stream) of a running request allocates nothing,
// with other requests decoding beside it and blocks filling up.
TEST_P(DecodeAllocation, EngineStepsAllocateNothing) {
  ThreeRequests t(GetParam(), false);
  const long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.core.step());  // crosses several KV blocks per request
  EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations during 100 engine steps";
  EXPECT_EQ(t.core.stats().running, 3);
}

// Plain greedy requests: each step is queued before the host reads the one
// before it (EngineCore::look_ahead), and that path allocates nothing either.
TEST_P(DecodeAllocation, EngineStepsQueuedAheadAllocateNothing) {
  ThreeRequests t(GetParam(), true);
  const long before = g_allocations.load();
  const int64_t ahead = t.core.stats().steps_ahead;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.core.step());
  EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations during 100 engine steps";
  EXPECT_EQ(t.core.stats().steps_ahead - ahead, 100) << "every step queued ahead";
  EXPECT_EQ(t.core.stats().running, 3);
}

// 30 more steps of speculative decoding (planning drafts, verifying them,
// delivering several tokens a step) allocate nothing, and draft at least `drafts` tokens.
void expect_drafting_allocates_nothing(ThreeRequests& t, int64_t drafts) {
  const long before = g_allocations.load();
  const int64_t drafted = t.core.stats().draft_tokens;
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(t.core.step());
  EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations during 30 engine steps";
  EXPECT_GE(t.core.stats().draft_tokens - drafted, drafts) << "too few drafts: the test measured too little of drafting";
  EXPECT_EQ(t.core.stats().running, 3);
}

// The n-gram drafter, and where it finds nothing a guess that the last token
// repeats (so that drafts are made whatever the model writes): wrong drafts
// and the waits after them are measured too.
class NgramOrRepeat final : public Drafter {
 public:
  const char* name() const override { return "ngram-or-repeat"; }
  void propose(std::span<DraftRequest> requests) override {
    ngram_.propose(requests);
    for (DraftRequest& r : requests)
      if (r.n == 0) {
        std::fill_n(r.out, r.max_tokens, r.tokens.back());
        r.n = r.max_tokens;
      }
  }
  void forget(uint64_t id) override { ngram_.forget(id); }

 private:
  NgramDrafter ngram_;
};

TEST_P(DecodeAllocation, EngineStepsWithDraftsAllocateNothing) {
  ThreeRequests t(GetParam(), true, 4, std::make_shared<NgramOrRepeat>());
  expect_drafting_allocates_nothing(t, 8);
}

// Drafts from a draft model (here the model itself on a backend of its own):
// once a sequence's first draft has set up its state there, further drafts
// allocate nothing either.
TEST_P(DecodeAllocation, EngineStepsWithADraftModelAllocateNothing) {
  auto draft = peer_model(GetParam());
  auto draft_backend = std::make_unique<CpuBackend>(*draft, ThreeRequests::limits(0), ThreeRequests::kv(), 2);
  const int vocab = int(draft->desc().vocab);
  auto drafter = std::make_shared<ModelDrafter>(std::move(draft), std::move(draft_backend), vocab);
  ThreeRequests t(GetParam(), false, 3, drafter);
  expect_drafting_allocates_nothing(t, 31);
}

// Drafts from each request's predicted output (here the answer itself, from a
// run without one), with drafts otherwise off.
TEST_P(DecodeAllocation, EngineStepsWithPredictionsAllocateNothing) {
  std::vector<std::vector<int32_t>> answers;
  {
    ThreeRequests plain(GetParam(), true);
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(plain.core.step());
    for (auto& s : plain.streams) {
      RequestUpdate u;
      ASSERT_TRUE(s->next(u));
      answers.push_back(u.tokens);
    }
  }
  ThreeRequests t(GetParam(), true, 0, nullptr, answers);
  expect_drafting_allocates_nothing(t, 30);
}

INSTANTIATE_TEST_SUITE_P(Types, DecodeAllocation, ::testing::Values("F32", "Q8_0", "Q4_K_M", "IQ4_XS"));
