// Steps queued ahead (EngineCore::look_ahead): while every running sequence
// decodes with its pick made by the backend, the engine queues step
// t + 1, fed by step t's picks, before it reads them. What each request
// receives must not change.
//
// 1. The pipeline's bookkeeping, on a backend whose picks follow from the
//    token fed and its position alone (so every answer is known in advance):
//    stop ids, lengths, failed picks, cancellation, preemption, with and
//    without the prefix cache.
// 2. The tiny preset on the backend under test (EMBER_TEST_BACKEND, else cpu):
//    the same requests with and without queueing ahead give the same tokens;
//    sampled requests picked by the backend (engine/pick.h) give the host
//    sampler's tokens, with and without queueing ahead.
#include <gtest/gtest.h>


#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_factory.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "model/model.h"
#include "random_ids.h"
#include "tiny_model.h"
#include "util/error.h"

using namespace ember;

namespace {

struct Answer {
  std::vector<int32_t> ids;
  FinishReason reason = FinishReason::None;
  std::string error;
};

Answer drain(RequestStream& s, int cancel_after = -1) {
  Answer a;
  RequestUpdate u;
  while (s.next(u)) {
    a.ids.insert(a.ids.end(), u.tokens.begin(), u.tokens.end());
    if (cancel_after >= 0 && int(a.ids.size()) >= cancel_after) s.cancel();
    if (u.finished) {
      a.reason = u.reason;
      a.error = u.error;
    }
  }
  return a;
}

// All requests at once, each drained on its own thread; every third cancelled after two tokens when asked.
std::vector<Answer> run_together(Engine& e, const std::vector<GenerationRequest>& reqs, bool cancel_some = false) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back(e.submit(r));
  std::vector<Answer> out(reqs.size());
  std::vector<std::thread> th;
  for (size_t i = 0; i < reqs.size(); ++i)
    th.emplace_back([&, i] { out[i] = drain(*streams[i], cancel_some && i % 3 == 0 ? 2 : -1); });
  for (auto& t : th) t.join();
  return out;
}

GenerationRequest greedy(std::vector<int32_t> prompt, int max_tokens, std::vector<int32_t> stop_ids = {}) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.stop_ids = std::move(stop_ids);
  r.keep_logits = false;  // plain greedy: the backend makes the pick
  return r;
}

Model* g_model = nullptr;

class StepOverlap : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { g_model = generate_tiny_model("overlap").release(); }
  static void TearDownTestSuite() {
    delete g_model;
    g_model = nullptr;
  }
};

// ---- 1. The bookkeeping, on picks known in advance ----

// The pick after `token` at position `pos`; fails (a NaN row) at some (token, position) pairs.
int32_t chain_pick(int32_t token, int64_t pos) {
  if (pos % 23 == 0 && token % 4 == 0) return kPickNonFinite;
  return int32_t(10 + (uint32_t(token) * 31u + uint32_t(pos) * 17u) % 1000u);
}

// What a request receives from chain picks: tokens up to a stop id, its
// length, or a failed pick.
Answer expected(const GenerationRequest& r) {
  Answer a;
  int32_t token = r.prompt.back();
  for (int64_t pos = int64_t(r.prompt.size()) - 1;; ++pos) {
    const int32_t id = chain_pick(token, pos);
    if (id < 0) {
      a.reason = FinishReason::Error;
      return a;
    }
    a.ids.push_back(id);
    if (std::find(r.stop_ids.begin(), r.stop_ids.end(), id) != r.stop_ids.end()) {
      a.reason = FinishReason::Stop;
      return a;
    }
    if (int(a.ids.size()) == r.max_tokens) {
      a.reason = FinishReason::Length;
      return a;
    }
    token = id;
  }
}

// Picks by chain_pick; no logits, no KV. Counts the sequences fed by picks
// of the step before, and checks each is the pick that step made.
class ChainBackend final : public Backend {
 public:
  ChainBackend(const Model& m, int n_blocks) : model_(m) {
    lim_.max_tokens = 64;
    lim_.max_logit_rows = 32;
    lim_.max_context = 512;
    kv_.n_blocks = n_blocks;
    kv_.block_size = 16;
  }
  const char* name() const override { return "chain"; }
  const Model& model() const override { return model_; }
  const StepLimits& limits() const override { return lim_; }
  const KvConfig& kv_config() const override { return kv_; }
  void copy_kv_block(int, int, int) override {}
  void read_kv_block(int, void*) override {}
  void write_kv_block(int, const void*) override {}

  void submit(const StepBatch& batch) override {
    fed_.assign(batch.seqs.size(), -1);
    for (size_t i = 0; i < batch.seqs.size(); ++i)
      if (batch.seqs[i].picked_row >= 0) {
        ++fed_by_picks;
        const int32_t pick = last_ids_.at(size_t(batch.seqs[i].picked_row));
        fed_[i] = pick >= 0 && pick < model_.desc().vocab ? pick : 0;  // a failed pick feeds token 0
      }
    Backend::submit(batch);
    fed_.clear();
  }
  const float* forward(const StepBatch& batch) override {
    check_step_batch(batch, lim_, kv_, model_.desc().vocab);
    ids_.clear();
    for (size_t i = 0; i < batch.seqs.size(); ++i) {
      const SeqStep& s = batch.seqs[i];
      if (s.logits == LogitsWanted::Last || s.logits == LogitsWanted::All) throw Error("chain backend: no logit rows");
      // The default submit() hands forward() each pick as an ordinary token, in the batch's order.
      if (i < fed_.size() && fed_[i] >= 0 && (s.n_tokens != 1 || s.tokens[0] != fed_[i]))
        throw Error("chain backend: sequence " + std::to_string(i) + " was not fed the pick of the step before");
      if (s.logits == LogitsWanted::LastPicked) ids_.push_back(chain_pick(s.tokens[s.n_tokens - 1], s.pos + s.n_tokens - 1));
    }
    last_ids_ = ids_;
    return nullptr;
  }
  const int32_t* picked_ids() const override { return ids_.data(); }

  int64_t fed_by_picks = 0;

 private:
  const Model& model_;
  StepLimits lim_;
  KvConfig kv_;
  std::vector<int32_t> ids_, last_ids_, fed_;  // fed_: per sequence of the step submitted, the pick it must be fed (-1: none)
};

// Twenty greedy requests: prompts from 1 to 150 tokens (several chunked), lengths
// 3..40, some stopping at an id their answer reaches, several failing at a pick.
std::vector<GenerationRequest> chain_requests() {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 20; ++i) {
    GenerationRequest r = greedy(ids(1 + (i * 53) % 150, 300 + i), 3 + (i * 7) % 38);
    const Answer a = expected(r);
    if (i % 4 == 1 && a.ids.size() > 4) r.stop_ids = {a.ids[a.ids.size() / 2]};
    reqs.push_back(r);
  }
  return reqs;
}

void expect_answers(const std::vector<Answer>& got, const std::vector<GenerationRequest>& reqs, bool cancelled_some,
                    const std::string& what) {
  int failed = 0, stopped = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Answer want = expected(reqs[i]);
    failed += want.reason == FinishReason::Error;
    stopped += want.reason == FinishReason::Stop;
    if (cancelled_some && i % 3 == 0 && got[i].reason == FinishReason::Cancelled) {
      ASSERT_LE(got[i].ids.size(), want.ids.size()) << what << " request " << i;
      EXPECT_TRUE(std::equal(got[i].ids.begin(), got[i].ids.end(), want.ids.begin())) << what << " request " << i;
      continue;
    }
    EXPECT_EQ(got[i].ids, want.ids) << what << " request " << i;
    EXPECT_EQ(got[i].reason, want.reason) << what << " request " << i << ": " << got[i].error;
  }
  // The requests reach every ending (else the test would not cover them).
  EXPECT_GT(failed, 0) << what;
  EXPECT_GT(stopped, 0) << what;
}

TEST_F(StepOverlap, QueuedStepsDeliverEveryAnswerAsPlanned) {
  const auto reqs = chain_requests();
  for (const bool cache : {true, false})
    for (const bool cancel : {false, true}) {
      const std::string what = std::string(cache ? "cache" : "no cache") + (cancel ? ", cancelling" : "");
      ChainBackend b(*g_model, 512);
      EngineOptions o;
      o.max_running = 8;  // twelve wait while eight run
      o.prefix_cache = cache;
      Engine e(b, nullptr, o);
      const auto got = run_together(e, reqs, cancel);
      expect_answers(got, reqs, cancel, what);
      e.check_accounting();
      const EngineStats st = e.stats();
      EXPECT_GT(st.steps_ahead, st.steps / 4) << what << ": " << st.steps_ahead << " of " << st.steps << " steps queued ahead";
      EXPECT_GE(b.fed_by_picks, st.steps_ahead) << what;
    }
}

TEST_F(StepOverlap, NoStepIsQueuedAheadWhenTurnedOff) {
  const auto reqs = chain_requests();
  ChainBackend b(*g_model, 512);
  EngineOptions o;
  o.max_running = 8;
  o.overlap_steps = false;
  Engine e(b, nullptr, o);
  expect_answers(run_together(e, reqs), reqs, false, "no overlap");
  EXPECT_EQ(e.stats().steps_ahead, 0);
  EXPECT_EQ(b.fed_by_picks, 0);
}

// A pool too small for all of them: a step is queued ahead only when every
// sequence has a block for its next position without preempting anyone.
TEST_F(StepOverlap, SmallPoolPreemptsOnlyInPlannedSteps) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 10; ++i) reqs.push_back(greedy(ids(40 + 9 * i, 500 + i), 60));
  ChainBackend b(*g_model, 24);  // any one request fits (at most 181 positions, 12 blocks), all ten need about 90
  EngineOptions o;
  o.max_running = 10;
  Engine e(b, nullptr, o);
  const auto got = run_together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Answer want = expected(reqs[i]);
    EXPECT_EQ(got[i].ids, want.ids) << "request " << i;
    EXPECT_EQ(got[i].reason, want.reason) << "request " << i;
  }
  const EngineStats st = e.stats();
  EXPECT_GT(st.preemptions, 0);
  EXPECT_GT(st.steps_ahead, 0);
  e.check_accounting();
}

// ---- 2. A real model: queueing ahead changes no token ----

std::unique_ptr<Backend> real_backend(int n_blocks) {
  StepLimits l;
  l.max_context = 512;
  l.max_tokens = 64;
  l.max_logit_rows = 32;
  KvConfig kv;
  kv.n_blocks = n_blocks;
  kv.block_size = 16;
  kv.type = KvType::F16;
  const char* kind = std::getenv("EMBER_TEST_BACKEND");
  return make_backend(*g_model, kind && *kind ? kind : "cpu", l, kv, 2);
}

// The requests together on an engine of six slots over `b`; the steps it queued ahead into *ahead.
std::vector<Answer> run_engine(Backend& b, EngineOptions o, const std::vector<GenerationRequest>& reqs, int64_t* ahead) {
  o.max_running = 6;
  Engine e(b, nullptr, o);
  auto got = run_together(e, reqs);
  e.check_accounting();
  if (ahead) *ahead = e.stats().steps_ahead;
  return got;
}

TEST_F(StepOverlap, RealModelGivesTheSameTokensWithAndWithoutQueueingAhead) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(greedy(ids(2 + (i * 29) % 90, 700 + i), 8 + (i * 5) % 25));
  auto b = real_backend(256);
  auto run = [&](const std::vector<GenerationRequest>& rs, bool overlap, bool cache, int64_t* ahead) {
    EngineOptions o;
    o.prefix_cache = cache;
    o.overlap_steps = overlap;
    return run_engine(*b, o, rs, ahead);
  };
  auto ref = run(reqs, false, true, nullptr);
  // Stop ids that the answers reach half way, so some sequences end early by a pick.
  for (size_t i = 0; i < reqs.size(); i += 3) reqs[i].stop_ids = {ref[i].ids[ref[i].ids.size() / 2]};
  ref = run(reqs, false, true, nullptr);
  for (const bool cache : {true, false}) {
    int64_t ahead = 0;
    const auto got = run(reqs, true, cache, &ahead);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i << (cache ? "" : ", no cache");
      EXPECT_EQ(got[i].reason, ref[i].reason) << "request " << i << ": " << got[i].error;
    }
    EXPECT_GT(ahead, 0);
  }
  int stopped = 0;
  for (const Answer& a : ref) stopped += a.reason == FinishReason::Stop;
  EXPECT_GT(stopped, 0);
}

TEST_F(StepOverlap, RealModelSampledByTheBackendGivesTheHostSamplersTokens) {
  // Each filter alone and together, a temperature that keeps most of the
  // vocabulary and one that keeps a few tokens, each request its own seed.
  struct Filters {
    float temperature;
    int top_k;
    float top_p, min_p;
  };
  const Filters filters[] = {{1.0f, 0, 1.0f, 0.0f},   {0.8f, 40, 1.0f, 0.0f}, {0.7f, 0, 0.9f, 0.0f},
                             {1.2f, 0, 1.0f, 0.05f}, {0.6f, 20, 0.8f, 0.02f}, {3.0f, 0, 0.95f, 0.0f}};
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r = greedy(ids(2 + (i * 37) % 80, 900 + i), 12 + (i * 7) % 20);
    const Filters& f = filters[i % 6];
    r.sampling.temperature = f.temperature;
    r.sampling.top_k = f.top_k;
    r.sampling.top_p = f.top_p;
    r.sampling.min_p = f.min_p;
    r.sampling.seed = 4000 + uint64_t(i);
    reqs.push_back(r);
  }
  auto b = real_backend(256);
  auto run = [&](bool on_backend, bool overlap, int64_t* ahead) {
    EngineOptions o;
    o.sample_on_backend = on_backend;
    o.overlap_steps = overlap;
    return run_engine(*b, o, reqs, ahead);
  };
  int64_t ahead = 0;
  const auto host = run(false, true, &ahead);
  EXPECT_EQ(ahead, 0) << "host-sampled steps are never queued ahead";
  for (const bool overlap : {false, true}) {
    const auto got = run(true, overlap, &ahead);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids, host[i].ids) << "request " << i << (overlap ? ", queued ahead" : "");
      EXPECT_EQ(got[i].reason, host[i].reason) << "request " << i << ": " << got[i].error;
    }
    if (overlap) {
      EXPECT_GT(ahead, 0);
    }
  }
}

}  // namespace
