// The serving engine on the CPU backend with the `tiny` preset: continuous
// batching, the prefix cache, cancellation and preemption, each checked
// against the same requests run alone, bit for bit (tokens and a hash of
// every logit row they were sampled from).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include <chrono>

#include <cstdlib>

#include "backend/backend_factory.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "model/model.h"
#include "backend_under_test.h"
#include "random_ids.h"
#include "stream_result.h"
#include "tiny_model.h"
#include "util/error.h"
#include "util/process_cpu.h"

using namespace ember;

namespace {

using Result = StreamResult;

class Serving : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = generate_tiny_model("serving").release(); }
  static void TearDownTestSuite() { delete model_; }

  std::unique_ptr<Backend> backend(int n_blocks, int ctx = 512, int step = 64, int rows = 32) {
    return backend_under_test(*model_, n_blocks, ctx, step, rows);
  }
  int64_t vocab() const { return model_->desc().vocab; }

  // Each request run alone on a fresh engine without a prefix cache: the reference.
  std::vector<Result> alone(const std::vector<GenerationRequest>& reqs) {
    auto b = backend(64);
    return each_alone(*b, reqs);
  }

  // All requests at once, each drained on its own thread.
  std::vector<Result> together(Engine& e, const std::vector<GenerationRequest>& reqs, int cancel_every = 0) {
    return all_at_once(e, vocab(), reqs, cancel_every);
  }

  static Model* model_;
};
Model* Serving::model_ = nullptr;

GenerationRequest request(std::vector<int32_t> prompt, int max_tokens, float temp = 0, uint64_t seed = 0) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temp;
  r.sampling.top_k = temp > 0 ? 50 : 0;
  r.sampling.seed = seed;
  r.keep_logits = true;
  return r;
}

void expect_same(const Result& got, const Result& want, const std::string& what) {
  EXPECT_EQ(got.ids, want.ids) << what;
  EXPECT_EQ(got.logit_hashes, want.logit_hashes) << what << ": logits differ in some bit";
  EXPECT_EQ(got.reason, want.reason) << what;
}

}  // namespace

TEST_F(Serving, TurnTwoReusesAllOfTurnOneAndMatchesCold) {
  auto b = backend(256);
  Engine e(*b, nullptr, EngineOptions{});
  const auto a = ids(70, 1);
  auto s1 = e.submit(request(a, 12));
  const Result t1 = drain(*s1, vocab());
  ASSERT_EQ(t1.ids.size(), 12u) << t1.error;
  EXPECT_EQ(t1.cached, 0);

  std::vector<int32_t> turn2 = a;
  turn2.insert(turn2.end(), t1.ids.begin(), t1.ids.end());
  const auto question = ids(9, 2);
  turn2.insert(turn2.end(), question.begin(), question.end());
  auto s2 = e.submit(request(turn2, 10, 0.9f, 5));
  const Result t2 = drain(*s2, vocab());
  EXPECT_EQ(t2.cached, int64_t(a.size() + t1.ids.size())) << "turn 2 must reuse the prompt and every generated token of turn 1";
  e.check_accounting();

  const auto cold = alone({request(turn2, 10, 0.9f, 5)});
  expect_same(t2, cold[0], "turn 2 from the cache vs cold");
}

TEST_F(Serving, ReturnsToAAfterBWithBothResident) {
  auto b = backend(512);
  Engine e(*b, nullptr, EngineOptions{});
  const auto A = ids(150, 3), B = ids(140, 4);
  auto follow = [&](std::vector<int32_t> doc, const Result& r, int q) {
    doc.insert(doc.end(), r.ids.begin(), r.ids.end());
    const auto more = ids(7, q);
    doc.insert(doc.end(), more.begin(), more.end());
    return doc;
  };
  const Result ra = drain(*e.submit(request(A, 6)), vocab());
  const Result rb = drain(*e.submit(request(B, 6)), vocab());
  EXPECT_EQ(rb.cached, 0);
  const auto A2 = follow(A, ra, 10), B2 = follow(B, rb, 11);
  const Result ra2 = drain(*e.submit(request(A2, 6)), vocab());
  EXPECT_EQ(ra2.cached, int64_t(A.size() + ra.ids.size())) << "back to A";
  const Result rb2 = drain(*e.submit(request(B2, 6)), vocab());
  EXPECT_EQ(rb2.cached, int64_t(B.size() + rb.ids.size())) << "B stayed resident";
  const auto cold = alone({request(A2, 6), request(B2, 6)});
  expect_same(ra2, cold[0], "A2");
  expect_same(rb2, cold[1], "B2");
  e.check_accounting();
}

TEST_F(Serving, HostTierServesAReturnWhenDeviceBlocksRanOut) {
  // 24 blocks hold one ~300-token document, not two: B pushes A out to host memory.
  auto b = backend(24, 512);
  EngineOptions o;
  o.cache_host_mem = 64 * b->block_bytes();
  Engine e(*b, nullptr, o);
  const auto A = ids(300, 5), B = ids(300, 6);
  const Result ra = drain(*e.submit(request(A, 4)), vocab());
  drain(*e.submit(request(B, 4)), vocab());
  EXPECT_GT(e.stats().host_slots_used, 0);
  std::vector<int32_t> A2 = A;
  A2.insert(A2.end(), ra.ids.begin(), ra.ids.end());
  A2.push_back(77);
  const Result ra2 = drain(*e.submit(request(A2, 6)), vocab());
  EXPECT_EQ(ra2.cached, int64_t(A.size() + ra.ids.size()));
  EXPECT_GT(e.stats().restored_blocks, 0);
  expect_same(ra2, alone({request(A2, 6)})[0], "A from the host tier vs cold");
  e.check_accounting();
}

// 32 requests of different lengths, several longer than a step (chunked
// prefill), some sharing prefixes (cache hits mid-run), greedy and sampled.
std::vector<GenerationRequest> mixed_requests() {
  std::vector<GenerationRequest> reqs;
  const auto shared = ids(40, 99);
  for (int i = 0; i < 32; ++i) {
    std::vector<int32_t> p = (i % 4 == 0) ? shared : std::vector<int32_t>{};
    const auto own = ids(3 + (i * 37) % 180, 100 + i);
    p.insert(p.end(), own.begin(), own.end());
    reqs.push_back(request(p, 6 + i % 9, i % 2 ? 0.8f : 0.0f, uint64_t(i)));
  }
  return reqs;
}

EngineOptions thirty_two() {
  EngineOptions o;
  o.max_running = 32;
  return o;
}

TEST_F(Serving, ThirtyTwoConcurrentRequestsEqualEachAlone) {
  const auto reqs = mixed_requests();
  const auto ref = alone(reqs);
  auto b = backend(1024);
  Engine e(*b, nullptr, thirty_two());
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], ref[i], "request " + std::to_string(i));
  e.check_accounting();
  EXPECT_GT(e.stats().cached_tokens, 0);
}

TEST_F(Serving, CancellingHalfLeavesTheRestCorrect) {
  const auto reqs = mixed_requests();
  const auto ref = alone(reqs);
  auto b = backend(1024);
  Engine e(*b, nullptr, thirty_two());
  const auto got = together(e, reqs, /*cancel_every=*/2);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(got[i].reason == FinishReason::Cancelled || got[i].ids.size() == ref[i].ids.size(), true) << i;
      // What arrived before the cancel is a prefix of the full answer.
      ASSERT_LE(got[i].ids.size(), ref[i].ids.size());
      EXPECT_TRUE(std::equal(got[i].ids.begin(), got[i].ids.end(), ref[i].ids.begin())) << i;
    } else {
      expect_same(got[i], ref[i], "request " + std::to_string(i));
    }
  }
  e.check_accounting();
  const EngineStats st = e.stats();
  EXPECT_EQ(st.running + st.waiting, 0);
}

TEST_F(Serving, SmallPoolCompletesEverythingThroughPreemption) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 10; ++i) reqs.push_back(request(ids(40 + 9 * i, 200 + i), 40, i % 2 ? 0.7f : 0.f, uint64_t(i)));
  const auto ref = alone(reqs);
  // 24 blocks of 16 positions: any one request fits (at most 171 positions,
  // 11 blocks), all ten at once need about 90.
  auto b = backend(24, 512);
  EngineOptions o;
  o.max_running = 10;
  Engine e(*b, nullptr, o);
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], ref[i], "request " + std::to_string(i));
  EXPECT_GT(e.stats().preemptions, 0);
  e.check_accounting();
}

TEST_F(Serving, IdleEngineUsesNoCpu) {
  auto b = backend(64);
  Engine e(*b, nullptr, EngineOptions{});
  drain(*e.submit(request(ids(20, 1), 8)), vocab());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the workers' short spin
  const double before = own_process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // Nobody spins: the engine thread and the pool's workers sleep on condition variables.
  EXPECT_LT(own_process_cpu_seconds() - before, 0.05) << "CPU seconds used by an idle engine in one second";
}

TEST_F(Serving, StepThreadCpuTimeIsCountedAndStillWhileIdle) {
  auto b = backend(64);
  Engine e(*b, nullptr, EngineOptions{});
  const double process0 = own_process_cpu_seconds();
  const double start = e.stats().step_thread_cpu_seconds;
  ASSERT_GE(start, 0.0) << "the step thread's CPU clock is readable on Linux";
  drain(*e.submit(request(ids(20, 1), 8)), vocab());
  const double worked = e.stats().step_thread_cpu_seconds;
  EXPECT_GT(worked, start) << "the thread that ran the steps spent CPU time";
  EXPECT_LE(worked - start, own_process_cpu_seconds() - process0 + 1e-3) << "a part of the process's CPU time";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(e.stats().step_thread_cpu_seconds - worked, 0.02) << "the step thread sleeps while no request is live";
}

// A backend that poisons the logits of every sequence whose prompt starts with
// a marker id: the engine must end that sequence alone, with an error.
class PoisoningBackend final : public Backend {
 public:
  PoisoningBackend(Backend& inner, int32_t marker) : inner_(inner), marker_(marker) {}
  const char* name() const override { return "poisoning"; }
  const Model& model() const override { return inner_.model(); }
  const StepLimits& limits() const override { return inner_.limits(); }
  const KvConfig& kv_config() const override { return inner_.kv_config(); }
  void copy_kv_block(int s, int d, int n) override { inner_.copy_kv_block(s, d, n); }
  void read_kv_block(int b, void* h) override { inner_.read_kv_block(b, h); }
  void write_kv_block(int b, const void* h) override { inner_.write_kv_block(b, h); }
  const float* forward(const StepBatch& batch) override {
    const float* l = inner_.forward(batch);
    const int64_t V = model().desc().vocab;
    buf_.assign(l, l + batch.logit_rows() * V);
    ids_.assign(inner_.picked_ids(), inner_.picked_ids() + batch.picked_rows());
    int64_t row = 0, id = 0;
    for (const SeqStep& s : batch.seqs) {
      const bool poison = s.pos == 0 && s.tokens[0] == marker_;
      if (s.logits == LogitsWanted::LastPicked) {  // a pick made where the logits are: it saw the NaN
        if (poison) ids_[size_t(id)] = kPickNonFinite;
        ++id;
        continue;
      }
      const int64_t rows = s.logits == LogitsWanted::All ? s.n_tokens : s.logits == LogitsWanted::Last ? 1 : 0;
      if (rows && poison) buf_[size_t(row * V + 7)] = std::nanf("");
      row += rows;
    }
    return buf_.data();
  }
  const int32_t* picked_ids() const override { return ids_.data(); }

 private:
  Backend& inner_;
  int32_t marker_;
  std::vector<float> buf_;
  std::vector<int32_t> ids_;
};

TEST_F(Serving, BadLogitsEndOnlyTheirSequence) {
  auto cpu = backend(256);
  PoisoningBackend b(*cpu, 4242);
  EngineOptions o;
  o.max_running = 4;
  auto good = ids(30, 8);
  auto bad = good;
  bad[0] = 4242;
  // Greedy and sampled requests picked by the backend (no logit row comes back), then sampled ones
  // picked by the host sampler from the rows sent back.
  for (const auto& [temperature, on_backend] : {std::pair{0.0f, true}, std::pair{0.7f, true}, std::pair{0.7f, false}}) {
    o.sample_on_backend = on_backend;
    Engine e(b, nullptr, o);  // a fresh cache each time, so the poisoned prompt is computed again
    std::vector<GenerationRequest> reqs = {request(good, 8), request(bad, 8), request(ids(12, 9), 8)};
    for (auto& r : reqs) {
      r.sampling.temperature = temperature;
      r.keep_logits = false;  // else greedy requests would be sampled on the host too
    }
    const auto got = together(e, reqs);
    EXPECT_EQ(got[1].reason, FinishReason::Error) << temperature << (on_backend ? " on the backend" : " on the host");
    EXPECT_NE(got[1].error.find("NaN"), std::string::npos) << got[1].error;
    const auto ref = alone({reqs[0], reqs[2]});
    expect_same(got[0], ref[0], "the sequence beside the poisoned one");
    expect_same(got[2], ref[1], "the other sequence beside the poisoned one");
    e.check_accounting();
  }
}

TEST_F(Serving, RejectsRequestsThatCanNeverRun) {
  auto b = backend(64, 64);
  Engine e(*b, nullptr, EngineOptions{});
  EXPECT_THROW(e.submit(request({}, 4)), Error);
  EXPECT_THROW(e.submit(request(ids(64, 1), 4)), Error);  // no room for a new token
  EXPECT_THROW(e.submit(request({1, 2, int32_t(vocab())}, 4)), Error);
  GenerationRequest bad = request({1, 2}, 4);
  bad.sampling.top_p = 0;
  EXPECT_THROW(e.submit(bad), Error);
  // A request that hits the context ends with "length", not an error.
  const Result r = drain(*e.submit(request(ids(60, 2), 100)), vocab());
  EXPECT_EQ(r.reason, FinishReason::Length);
  EXPECT_EQ(r.ids.size(), 4u);
  e.check_accounting();
}

TEST_F(Serving, BatchOfDifferentLengthsEqualsEachSequenceAlone) {
  // The backend itself: one step with several sequences of different lengths
  // gives, bit for bit, the logits each gives in a step of its own. Steps of
  // up to 64 tokens (every decode step a CUDA Graph holds): longer ones may
  // multiply on the CUDA tensor cores, whose sums depend on the step's size.
  auto b = backend(64, 256, 256, 128);
  const std::vector<std::vector<int32_t>> seqs = {ids(5, 1), ids(33, 2), ids(1, 3), ids(25, 4)};
  const int64_t V = vocab();
  std::vector<std::vector<float>> alone_rows;
  int next_block = 0;
  std::vector<std::vector<int32_t>> tables;
  for (const auto& s : seqs) {
    std::vector<int32_t> t;
    for (size_t p = 0; p < s.size(); p += 16) t.push_back(next_block++);
    tables.push_back(t);
    StepBatch one;
    one.seqs.push_back({s.data(), int(s.size()), 0, t.data(), int(t.size()), LogitsWanted::All, -1, {}});
    const float* l = b->forward(one);
    alone_rows.emplace_back(l, l + int64_t(s.size()) * V);
  }
  StepBatch all;
  for (size_t i = 0; i < seqs.size(); ++i)
    all.seqs.push_back({seqs[i].data(), int(seqs[i].size()), 0, tables[i].data(), int(tables[i].size()), LogitsWanted::All, -1, {}});
  const float* l = b->forward(all);
  for (size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(std::memcmp(l, alone_rows[i].data(), alone_rows[i].size() * 4), 0) << "sequence " << i;
    l += alone_rows[i].size();
  }
  StepBatch empty_seq = all;
  empty_seq.seqs[1].n_tokens = 0;
  EXPECT_THROW(b->forward(empty_seq), Error);

  // Rows only picked from (LastPicked) between rows that come back: the rows
  // that come back keep their order and bits, and each pick is greedy_id() of
  // the row the backend did not return, over the first pick_vocab ids.
  for (const int pick_vocab : {0, 1000}) {
    StepBatch mixed = all;
    mixed.pick_vocab = pick_vocab;
    mixed.seqs[0].logits = LogitsWanted::LastPicked;
    mixed.seqs[1].logits = LogitsWanted::Last;
    mixed.seqs[2].logits = LogitsWanted::LastPicked;
    mixed.seqs[3].logits = LogitsWanted::All;
    const float* m = b->forward(mixed);
    const int32_t* picks = b->picked_ids();
    auto last_row = [&](size_t i) { return alone_rows[i].data() + (int64_t(seqs[i].size()) - 1) * V; };
    const int n = pick_vocab > 0 ? pick_vocab : int(V);
    EXPECT_EQ(picks[0], greedy_id(last_row(0), n)) << pick_vocab;
    EXPECT_EQ(picks[1], greedy_id(last_row(2), n)) << pick_vocab;
    if (pick_vocab > 0) {
      EXPECT_LT(picks[0], pick_vocab);
    }
    EXPECT_EQ(std::memcmp(m, last_row(1), size_t(V) * 4), 0) << "the Last row after an argmax row";
    EXPECT_EQ(std::memcmp(m + V, alone_rows[3].data(), alone_rows[3].size() * 4), 0) << "the All rows";
  }
}

TEST(GreedyId, LowestIdOfTheLargestFiniteLogit) {
  const float inf = INFINITY;
  EXPECT_EQ(greedy_id(std::vector<float>{1, 3, 2, 3}.data(), 4), 1);
  EXPECT_EQ(greedy_id(std::vector<float>{1, 3, 2, 9}.data(), 3), 1);  // only the first n count
  EXPECT_EQ(greedy_id(std::vector<float>{-inf, -2, -inf}.data(), 3), 1);
  EXPECT_EQ(greedy_id(std::vector<float>{-inf, -inf}.data(), 2), kPickAllMasked);
  EXPECT_EQ(greedy_id(std::vector<float>{1, std::nanf(""), 5}.data(), 3), kPickNonFinite);
  EXPECT_EQ(greedy_id(std::vector<float>{1, inf}.data(), 2), kPickNonFinite);
}

// Greedy requests without penalties, grammar or kept logits get their ids from
// the backend's argmax: the same tokens as the host sampler picks from the
// logit rows (keep_logits sends them there), in a batch that mixes both kinds
// and sampled requests.
TEST_F(Serving, BackendGreedyPicksEqualTheHostSampler) {
  auto b = backend(256);
  EngineOptions o;
  o.max_running = 8;
  Engine e(*b, nullptr, o);
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    reqs.push_back(request(ids(10 + 7 * i, 30 + i), 12, i % 3 == 2 ? 0.8f : 0.f, uint64_t(i)));
    reqs.back().keep_logits = i % 3 == 1;  // 0, 3: backend argmax; 1, 4: host greedy; 2, 5: sampled by the backend
  }
  const auto got = together(e, reqs);
  for (int i = 0; i < 6; i += 3) {
    auto host = reqs[size_t(i)];
    host.keep_logits = true;
    const auto ref = alone({host});
    EXPECT_EQ(got[size_t(i)].ids, ref[0].ids) << "request " << i;
    EXPECT_EQ(got[size_t(i)].reason, FinishReason::Length) << "request " << i;
  }
  const auto ref = alone({reqs[1], reqs[2], reqs[4], reqs[5]});
  expect_same(got[1], ref[0], "host greedy beside backend picks");
  expect_same(got[2], ref[1], "sampled beside backend picks");
  expect_same(got[4], ref[2], "host greedy beside backend picks");
  expect_same(got[5], ref[3], "sampled beside backend picks");
  e.check_accounting();
}
