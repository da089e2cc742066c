// Speculative decoding (engine/drafter.h, engine/speculation.h): a draft
// changes how many tokens a step yields, never which. Each request's tokens,
// and the logit rows they were picked from, must be bit for bit those of the
// same request decoded one token a step, whether the drafts are all right,
// all wrong or right for a while; greedy and seeded sampling, penalties, stop
// ids, several requests at once, a KV pool small enough to preempt, and the
// prefix cache afterwards. On the CPU backend; scripts/test-cuda.sh runs it on
// the GPU (EMBER_TEST_BACKEND=cuda) with EMBER_CUDA_BATCH_INVARIANT=1, since
// there one-token steps otherwise sum in another order than longer ones.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <random>

#include "engine/engine.h"
#include "engine/model_drafter.h"
#include "engine/ngram_drafter.h"
#include "engine/pick.h"
#include "engine/prediction.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "backend_under_test.h"
#include "random_ids.h"
#include "stream_result.h"
#include "tiny_model.h"

using namespace ember;

namespace {

using Result = StreamResult;

GenerationRequest request(std::vector<int32_t> prompt, int max_tokens, float temp = 0, uint64_t seed = 0) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temp;
  r.sampling.top_k = temp > 0 ? 40 : 0;
  r.sampling.top_p = temp > 0 ? 0.95f : 1.0f;
  r.sampling.seed = seed;
  r.keep_logits = true;
  return r;
}

// Knows each request's answer (from a run without drafts) and drafts it, with
// every `wrong_every`-th position of the answer replaced by another token
// (0: never), so that drafts are right, wrong, or right up to some point.
class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(int wrong_every, int vocab) : wrong_every_(wrong_every), vocab_(vocab) {}
  const char* name() const override { return "oracle"; }
  void learn(const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer) {
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), answer.begin(), answer.end());
    known_.push_back(std::move(all));
  }
  void propose(std::span<DraftRequest> requests) override {
    std::lock_guard lock(m_);
    ++calls_;
    for (DraftRequest& r : requests) {
      r.n = 0;
      for (const auto& k : known_) {
        if (k.size() <= r.tokens.size() || !std::equal(r.tokens.begin(), r.tokens.end(), k.begin())) continue;
        const size_t at = r.tokens.size();
        const int n = int(std::min<size_t>(size_t(r.max_tokens), k.size() - at));
        for (int i = 0; i < n; ++i) {
          const bool wrong = wrong_every_ > 0 && (at + size_t(i)) % size_t(wrong_every_) == 0;
          r.out[i] = wrong ? (k[at + size_t(i)] + 1) % vocab_ : k[at + size_t(i)];
        }
        r.n = n;
        break;
      }
    }
  }
  void forget(uint64_t) override { ++forgotten_; }
  int calls() const { return calls_; }
  int forgotten() const { return forgotten_; }

 private:
  int wrong_every_, vocab_;
  std::vector<std::vector<int32_t>> known_;
  std::mutex m_;
  int calls_ = 0, forgotten_ = 0;
};

class Speculation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = generate_tiny_model("speculation").release(); }
  static void TearDownTestSuite() { delete model_; }

  std::unique_ptr<Backend> backend(int n_blocks) { return backend_under_test(*model_, n_blocks, 512, 64, 48); }
  int vocab() const { return int(model_->desc().vocab); }

  // Each request alone, one token a step: the reference.
  std::vector<Result> plain(const std::vector<GenerationRequest>& reqs) {
    auto b = backend(64);
    return each_alone(*b, reqs);
  }
  std::vector<Result> together(Engine& e, const std::vector<GenerationRequest>& reqs) { return all_at_once(e, vocab(), reqs); }

  static Model* model_;
};
Model* Speculation::model_ = nullptr;

void expect_same(const Result& got, const Result& want, const std::string& what) {
  ASSERT_TRUE(got.error.empty()) << what << ": " << got.error;
  EXPECT_EQ(got.ids, want.ids) << what;
  EXPECT_EQ(got.logit_hashes, want.logit_hashes) << what << ": logits differ in some bit";
  EXPECT_EQ(got.reason, want.reason) << what;
}

EngineOptions drafting(std::shared_ptr<Drafter> d, int k, int running = 8) {
  EngineOptions o;
  o.max_running = running;
  o.draft_tokens = k;
  o.drafter = std::move(d);
  return o;
}

// The engine's stats once it is idle: they are published after the step that
// finished a stream, so a reader woken by the stream's end could see the step before it.
EngineStats settled_stats(Engine& e) {
  e.wait_idle();
  return e.stats();
}

}  // namespace

TEST(NgramDrafter, DraftsWhatFollowedTheLongestMatch) {
  NgramDrafter d(2, 4);
  int32_t out[8];
  // "1 2 3" occurred with 4 5 6 after it; later "2 3" with 9 after it: the longer match wins.
  std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 2, 3, 9, 8, 1, 2, 3};
  ASSERT_EQ(d.draft(t, 3, out), 3);
  EXPECT_EQ(std::vector<int32_t>(out, out + 3), (std::vector<int32_t>{4, 5, 6}));
  // At most max_tokens, and never past the end of what is there.
  ASSERT_EQ(d.draft(t, 1, out), 1);
  EXPECT_EQ(out[0], 4);
  std::vector<int32_t> tail = {5, 6, 7, 5, 6};  // "5 6" before, followed by 7, 5, 6 (the sequence's own end)
  ASSERT_EQ(d.draft(tail, 8, out), 3);
  EXPECT_EQ(std::vector<int32_t>(out, out + 3), (std::vector<int32_t>{7, 5, 6}));
  // Among equal matches, the one with more tokens after it, then the most recent.
  std::vector<int32_t> eq = {1, 2, 7, 7, 7, 1, 2, 8, 1, 2};
  ASSERT_EQ(d.draft(eq, 4, out), 4);
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), (std::vector<int32_t>{7, 7, 7, 1}));
  ASSERT_EQ(d.draft(eq, 2, out), 2);
  EXPECT_EQ(std::vector<int32_t>(out, out + 2), (std::vector<int32_t>{8, 1}));
}

TEST(NgramDrafter, NoDraftWithoutAMatchOfTheShortestLength) {
  NgramDrafter d(2, 4);
  int32_t out[4];
  std::vector<int32_t> t = {1, 2, 3, 4, 9, 3};  // "3" occurred, "9 3" did not
  EXPECT_EQ(d.draft(t, 4, out), 0);
  EXPECT_EQ(d.draft({}, 4, out), 0);
  EXPECT_EQ(d.draft(std::vector<int32_t>{5, 5}, 4, out), 0);  // the only "5 5" is the last two tokens themselves
  std::vector<int32_t> rep = {5, 5, 5};
  ASSERT_EQ(d.draft(rep, 4, out), 1);  // "5 5" at 0..1, followed by the last 5
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(d.draft(rep, 0, out), 0);
  EXPECT_THROW(NgramDrafter(1, 2), Error);
  EXPECT_THROW(NgramDrafter(3, 2), Error);
}

TEST(NgramDrafter, TheIndexGivesTheScansDraftsAsTheSequenceGrows) {
  // Sequences over small vocabularies (many repeats) grown a few tokens at a
  // time, as decoding grows them: each step's indexed draft is the full scan's.
  for (int vocab : {3, 12, 60}) {
    NgramDrafter d(2, 4);
    std::mt19937 rng{uint32_t(vocab)};
    std::vector<int32_t> t;
    t.reserve(600);
    int drafted = 0;
    while (t.size() < 600) {
      const size_t add = 1 + rng() % 5;
      for (size_t i = 0; i < add; ++i) t.push_back(int32_t(rng() % uint32_t(vocab)));
      int32_t want[8], got[8];
      const int max = 1 + int(rng() % 8);
      const int n = d.draft(t, max, want);
      DraftRequest r;
      r.seq_id = 7;
      r.tokens = t;
      r.capacity = 600;
      r.max_tokens = max;
      r.out = got;
      d.propose(std::span(&r, 1));
      ASSERT_EQ(r.n, n) << "vocabulary " << vocab << ", " << t.size() << " tokens";
      EXPECT_TRUE(std::equal(want, want + n, got)) << "vocabulary " << vocab << ", " << t.size() << " tokens";
      drafted += n;
    }
    EXPECT_GT(drafted, 0);
    d.forget(7);
  }
}

TEST_F(Speculation, RightDraftsAreAllKeptAndChangeNoBit) {
  const std::vector<GenerationRequest> reqs = {request(ids(20, 1), 24), request(ids(33, 2), 17, 0.8f, 7)};
  const auto want = plain(reqs);
  auto oracle = std::make_shared<OracleDrafter>(0, vocab());
  for (size_t i = 0; i < reqs.size(); ++i) oracle->learn(reqs[i].prompt, want[i].ids);
  auto b = backend(64);
  Engine e(*b, nullptr, drafting(oracle, 4));
  for (size_t i = 0; i < reqs.size(); ++i) {
    const int64_t steps = settled_stats(e).steps;
    expect_same(drain(*e.submit(reqs[i]), vocab()), want[i], "request " + std::to_string(i));
    // 1 prompt step, then 5 tokens a step; the finishing step feeds the last token.
    EXPECT_LE(settled_stats(e).steps - steps, 2 + (reqs[i].max_tokens + 4) / 5) << "drafts were not used";
  }
  const EngineStats st = settled_stats(e);
  EXPECT_GT(st.draft_tokens, 0);
  EXPECT_EQ(st.accepted_tokens, st.draft_tokens) << "a right draft was dropped";
  EXPECT_EQ(oracle->forgotten(), 2);
  e.check_accounting();
}

TEST_F(Speculation, WrongDraftsAreAllDroppedAndChangeNoBit) {
  const std::vector<GenerationRequest> reqs = {request(ids(20, 3), 20), request(ids(9, 4), 20, 1.1f, 3)};
  const auto want = plain(reqs);
  auto oracle = std::make_shared<OracleDrafter>(1, vocab());  // every drafted token wrong
  for (size_t i = 0; i < reqs.size(); ++i) oracle->learn(reqs[i].prompt, want[i].ids);
  auto b = backend(64);
  Engine e(*b, nullptr, drafting(oracle, 3));
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(drain(*e.submit(reqs[i]), vocab()), want[i], "request " + std::to_string(i));
  // Drafts that bring nothing make a sequence wait 2, 4, then 8 tokens before
  // it is asked again (its steps meanwhile queued ahead): a few drafts of 3
  // over 40 tokens, not one every step (about 110).
  const EngineStats st = settled_stats(e);
  EXPECT_GE(st.draft_tokens, 15);
  EXPECT_LE(st.draft_tokens, 40);
  EXPECT_EQ(st.accepted_tokens, 0);
  e.check_accounting();
}

TEST_F(Speculation, DraftsRightForAWhileComposeWithBatchingAndPreemption) {
  // 12 requests at once, greedy and sampled, some with penalties, on a pool of
  // 40 blocks: sequences are preempted and resumed from the cache, drafts are
  // cut short where blocks run out, and each draft goes wrong at some point.
  // Half the requests keep no logits, so outside drafting steps the backend
  // picks their tokens (with draws taken when the step is planned).
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r = request(ids(20 + 13 * i, 10 + i), 24 + i % 5, i % 3 == 0 ? 0.0f : 0.9f, uint64_t(i));
    if (i % 4 == 1) r.sampling.repetition_penalty = 1.3f;
    if (i % 4 == 2) r.sampling.presence_penalty = 0.5f;
    r.keep_logits = i % 2 == 0;
    reqs.push_back(std::move(r));
  }
  const auto want = plain(reqs);
  for (int wrong_every : {3, 5}) {
    auto oracle = std::make_shared<OracleDrafter>(wrong_every, vocab());
    for (size_t i = 0; i < reqs.size(); ++i) oracle->learn(reqs[i].prompt, want[i].ids);
    auto b = backend(40);
    Engine e(*b, nullptr, drafting(oracle, 6, 8));
    const auto got = together(e, reqs);
    for (size_t i = 0; i < reqs.size(); ++i)
      expect_same(got[i], want[i], "wrong every " + std::to_string(wrong_every) + ", request " + std::to_string(i));
    const EngineStats st = settled_stats(e);
    EXPECT_GT(st.accepted_tokens, 0);
    EXPECT_LT(st.accepted_tokens, st.draft_tokens);
    EXPECT_GT(st.preemptions, 0) << "the pool was meant to be too small for every sequence at once";
    e.check_accounting();
  }
}

TEST_F(Speculation, StopIdInsideADraftEndsTheAnswerThere) {
  GenerationRequest r = request(ids(25, 5), 30);
  const Result full = plain({r})[0];
  ASSERT_EQ(full.ids.size(), 30u);
  r.stop_ids = {full.ids[9]};
  const Result want = plain({r})[0];
  ASSERT_LE(want.ids.size(), 10u);
  auto oracle = std::make_shared<OracleDrafter>(0, vocab());
  oracle->learn(r.prompt, full.ids);  // drafts run on past the stop id
  auto b = backend(64);
  Engine e(*b, nullptr, drafting(oracle, 8));
  expect_same(drain(*e.submit(r), vocab()), want, "stop id");
  e.check_accounting();
}

TEST_F(Speculation, NextTurnReusesAllOfADraftedAnswer) {
  const auto a = ids(40, 6);
  const GenerationRequest r1 = request(a, 21);
  const Result t1_want = plain({r1})[0];
  auto oracle = std::make_shared<OracleDrafter>(4, vocab());
  oracle->learn(a, t1_want.ids);
  auto b = backend(64);
  Engine e(*b, nullptr, drafting(oracle, 5));
  const Result t1 = drain(*e.submit(r1), vocab());
  expect_same(t1, t1_want, "turn 1");
  std::vector<int32_t> turn2 = a;
  turn2.insert(turn2.end(), t1.ids.begin(), t1.ids.end());
  const auto q = ids(5, 7);
  turn2.insert(turn2.end(), q.begin(), q.end());
  const GenerationRequest r2 = request(turn2, 12, 0.7f, 9);
  const Result t2 = drain(*e.submit(r2), vocab());
  EXPECT_EQ(t2.cached, int64_t(a.size() + t1.ids.size())) << "the drafted answer must be in the cache, and only it";
  expect_same(t2, plain({r2})[0], "turn 2");
  e.check_accounting();
}

TEST_F(Speculation, NgramDraftsOnTheTinyModelChangeNoBit) {
  // The tiny model's own answers: what repeats in them gets drafted.
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = ids(12, 20 + i);
    for (int k = 0; k < 3; ++k) p.insert(p.end(), p.begin(), p.begin() + 12);  // a prompt that repeats itself
    reqs.push_back(request(p, 40, i % 2 ? 0.0f : 0.6f, uint64_t(i)));
  }
  const auto want = plain(reqs);
  auto b = backend(64);
  EngineOptions o;
  o.max_running = 4;
  o.draft_tokens = 4;
  Engine e(*b, nullptr, o);
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], want[i], "request " + std::to_string(i));
  const EngineStats st = settled_stats(e);
  EXPECT_GT(st.draft_tokens, 0) << "a prompt that repeats itself offers matches";
  EXPECT_GT(st.accepted_tokens, 0);
  e.check_accounting();
}

TEST_F(Speculation, WithoutThePrefixCacheAndWithCancellationsNothingChanges) {
  // Without the cache a sequence ends, and leaves, inside the step that
  // verifies its draft; every third request is cancelled after 2 tokens.
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 9; ++i) {
    GenerationRequest r = request(ids(15 + 7 * i, 60 + i), 18 + i, i % 2 ? 0.7f : 0.0f, uint64_t(i));
    r.keep_logits = i % 3 != 1;
    reqs.push_back(std::move(r));
  }
  const auto want = plain(reqs);
  auto oracle = std::make_shared<OracleDrafter>(4, vocab());
  for (size_t i = 0; i < reqs.size(); ++i) oracle->learn(reqs[i].prompt, want[i].ids);
  auto b = backend(64);
  EngineOptions o = drafting(oracle, 5, 4);
  o.prefix_cache = false;
  Engine e(*b, nullptr, o);
  const auto got = all_at_once(e, vocab(), reqs, 3);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i % 3 == 0) {  // cancelled: what came before the cancellation is the plain answer's start
      ASSERT_LE(got[i].ids.size(), want[i].ids.size());
      EXPECT_TRUE(std::equal(got[i].ids.begin(), got[i].ids.end(), want[i].ids.begin())) << "request " << i;
      continue;
    }
    expect_same(got[i], want[i], "request " + std::to_string(i));
  }
  EXPECT_GT(settled_stats(e).accepted_tokens, 0);
  EXPECT_EQ(oracle->forgotten(), 9);
  e.check_accounting();
}

TEST_F(Speculation, EveryTokensPickIsTheRowsOwnPick) {
  // LogitsWanted::AllPicked against All: two sequences of 5 and 3 tokens, a
  // LastPicked one between them; the picks come in batch order. Greedy, then
  // sampled with a draw for each token.
  auto b = backend(16);
  const std::vector<int32_t> a = ids(5, 90), c = ids(3, 91), m = ids(2, 92);
  const int32_t tables[3][1] = {{0}, {1}, {2}};
  auto batch = [&](LogitsWanted w) {
    StepBatch sb;
    sb.seqs.push_back({a.data(), 5, 0, tables[0], 1, w, -1, {}});
    sb.seqs.push_back({m.data(), 2, 0, tables[2], 1, LogitsWanted::LastPicked, -1, {}});
    sb.seqs.push_back({c.data(), 3, 0, tables[1], 1, w, -1, {}});
    return sb;
  };
  const float* rows = b->forward(batch(LogitsWanted::All));
  const std::vector<float> all(rows, rows + 8 * int64_t(vocab()));  // kept past the next forward()
  std::vector<int32_t> want;
  for (int r = 0; r < 8; ++r) want.push_back(greedy_id(rows + int64_t(r) * vocab(), vocab()));
  const int32_t middle = b->picked_ids()[0];
  b->forward(batch(LogitsWanted::AllPicked));
  const int32_t* got = b->picked_ids();
  EXPECT_EQ(std::vector<int32_t>(got, got + 5), std::vector<int32_t>(want.begin(), want.begin() + 5));
  EXPECT_EQ(got[5], middle);
  EXPECT_EQ(std::vector<int32_t>(got + 6, got + 9), std::vector<int32_t>(want.begin() + 5, want.end()));
  StepBatch sampled = batch(LogitsWanted::AllPicked);
  sampled.seqs[0].pick.temperature = 0.7f;
  EXPECT_THROW(b->forward(sampled), Error) << "a sampled AllPicked row needs its own draw";
  const double draws[8] = {0.05, 0.93, 0.41, 0.67, 0.18, 0.5, 0.77, 0.29};
  Pick p;
  p.temperature = 1.3f;  // flat enough that the draws reach past the top token
  p.top_k = 50;
  for (int s : {0, 2}) {
    sampled.seqs[size_t(s)].pick = p;
    sampled.seqs[size_t(s)].draws = draws + (s ? 5 : 0);
  }
  b->forward(sampled);
  got = b->picked_ids();
  PickScratch scratch(vocab());
  std::vector<int32_t> want_sampled;
  for (int r = 0; r < 8; ++r) {
    Pick pr = p;
    pr.draw = draws[r];
    want_sampled.push_back(pick_id(all.data() + int64_t(r) * vocab(), vocab(), pr, scratch));
  }
  EXPECT_EQ(std::vector<int32_t>(got, got + 5), std::vector<int32_t>(want_sampled.begin(), want_sampled.begin() + 5));
  EXPECT_EQ(got[5], middle);
  EXPECT_EQ(std::vector<int32_t>(got + 6, got + 9), std::vector<int32_t>(want_sampled.begin() + 5, want_sampled.end()));
  EXPECT_NE(want_sampled, want) << "the draws never left the greedy token: the sampled picks were not tested";
}

// A draft model on a backend of its own, with `n_blocks` KV blocks there.
std::shared_ptr<ModelDrafter> draft_model(std::unique_ptr<Model> m, int n_blocks, int vocab) {
  auto b = backend_under_test(*m, n_blocks, 512, 64, 16);
  return std::make_shared<ModelDrafter>(std::move(m), std::move(b), vocab);
}

TEST_F(Speculation, TheModelAsItsOwnDraftModelIsAlwaysRight) {
  // The same weights compute the same positions to the same bits: every greedy draft token is the model's pick.
  const std::vector<GenerationRequest> reqs = {request(ids(30, 40), 40), request(ids(70, 41), 33), request(ids(12, 42), 50)};
  const auto want = plain(reqs);
  auto b = backend(64);
  Engine e(*b, nullptr, drafting(draft_model(generate_tiny_model("speculation-self"), 64, vocab()), 5, 3));
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], want[i], "request " + std::to_string(i));
  const EngineStats st = settled_stats(e);
  EXPECT_GT(st.draft_tokens, 80);
  EXPECT_EQ(st.accepted_tokens, st.draft_tokens);
  e.check_accounting();
}

TEST_F(Speculation, ADraftModelOfOtherWeightsChangesNoBit) {
  // Other weights guess mostly wrong; 24 draft blocks hold about two sequences,
  // so the draft model drops the state of those not drafting and catches up later.
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(request(ids(40 + 25 * i, 50 + i), 30, i % 2 ? 0.0f : 0.8f, uint64_t(i)));
  const auto want = plain(reqs);
  auto b = backend(128);
  auto drafter = draft_model(generate_tiny_model("speculation-other", 12), 24, vocab());
  Engine e(*b, nullptr, drafting(drafter, 4, 6));
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], want[i], "request " + std::to_string(i));
  EXPECT_GT(settled_stats(e).draft_tokens, 0);
  EXPECT_GT(drafter->starved(), 0) << "the draft model's pool was meant to be too small for every sequence";
  EXPECT_GT(drafter->dropped(), 0) << "no sequence's draft positions were dropped for another's";
  e.check_accounting();
}

TEST_F(Speculation, DraftTokensOutOfRangeAreRefused) {
  auto b = backend(16);
  for (int which = 0; which < 2; ++which)
    for (int n : {-1, EngineOptions::kMaxDraftTokens + 1}) {
      EngineOptions o;
      (which ? o.prediction_tokens : o.draft_tokens) = n;
      EXPECT_THROW(Engine(*b, nullptr, o), Error) << (which ? "prediction tokens " : "draft tokens ") << n;
    }
}

// Predicted outputs (engine/prediction.h): the answer followed along the
// prediction, lost where it leaves it, found again after three tokens back on
// it; a draft no longer than the run of tokens that followed the prediction (2 at least).
TEST(Prediction, FollowsTheAnswerLosesItAndFindsItAgain) {
  const std::vector<int32_t> pred = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
  const std::vector<int32_t> prompt = {1, 2, 3};
  std::vector<int32_t> t = prompt;
  PredictionCursor c;
  int32_t out[8];
  auto draft = [&](int max) {
    const int n = draft_from_prediction(pred, t, int64_t(prompt.size()), c, max, out);
    return std::vector<int32_t>(out, out + n);
  };
  t.push_back(10);  // the answer's first token, as predicted: a run of one, a draft of two
  EXPECT_EQ(draft(3), (std::vector<int32_t>{11, 12}));
  t.insert(t.end(), {11, 12});  // two of the draft kept
  EXPECT_EQ(draft(2), (std::vector<int32_t>{13, 14}));
  t.push_back(99);  // the edit: off the prediction
  EXPECT_TRUE(draft(4).empty());
  t.insert(t.end(), {15, 16});  // back on it, but only two tokens of it
  EXPECT_TRUE(draft(4).empty());
  t.push_back(17);  // three: found, and followed from there (a run of three)
  EXPECT_EQ(draft(4), (std::vector<int32_t>{18, 19, 20}));
  t.insert(t.end(), {18, 19, 20, 21});
  EXPECT_TRUE(draft(4).empty()) << "nothing predicted past the prediction's end";
  // An answer that starts elsewhere: found once three of its tokens are on the prediction.
  PredictionCursor fresh;
  std::vector<int32_t> u = prompt;
  u.insert(u.end(), {50, 51, 14, 15});
  EXPECT_EQ(draft_from_prediction(pred, u, int64_t(prompt.size()), fresh, 8, out), 0);
  u.push_back(16);
  ASSERT_EQ(draft_from_prediction(pred, u, int64_t(prompt.size()), fresh, 2, out), 2);
  EXPECT_EQ(std::vector<int32_t>(out, out + 2), (std::vector<int32_t>{17, 18}));
}

TEST(Prediction, ARepeatedPassageRejoinsNearestAfterWhereItLeft) {
  // The prediction holds the same three tokens twice; an answer that left it
  // after the second copy's start rejoins the second copy, not the first.
  const std::vector<int32_t> pred = {5, 6, 7, 8, 40, 41, 5, 6, 7, 9, 42};
  std::vector<int32_t> t = {1, 5, 6, 7, 8, 40, 41};  // prompt {1}, then the prediction's first six tokens
  PredictionCursor c;
  int32_t out[4];
  EXPECT_EQ(draft_from_prediction(pred, t, 1, c, 1, out), 1);
  EXPECT_EQ(out[0], 5);
  t.insert(t.end(), {77, 5, 6, 7});  // an inserted token, then the repeated three
  ASSERT_EQ(draft_from_prediction(pred, t, 1, c, 2, out), 2);
  EXPECT_EQ(std::vector<int32_t>(out, out + 2), (std::vector<int32_t>{9, 42}));
}

TEST(Prediction, ALostAnswerIsLookedForWithinAWindow) {
  // Three tokens that occur once in a long prediction: found 3,000 tokens
  // after where the answer left it, not 9,000 after (the search is bounded).
  for (const int64_t at : {int64_t(3000), int64_t(9000)}) {
    std::vector<int32_t> pred(12000, 7);
    pred[size_t(at)] = 1;
    pred[size_t(at) + 1] = 2;
    pred[size_t(at) + 2] = 3;
    pred[size_t(at) + 3] = 4;
    PredictionCursor c;
    const std::vector<int32_t> t = {9, 9, 1, 2, 3};  // prompt {9}: the answer left the prediction at its first token
    int32_t out[2];
    const int n = draft_from_prediction(pred, t, 1, c, 2, out);
    if (at == 3000) {
      ASSERT_EQ(n, 2);
      EXPECT_EQ(out[0], 4);
    } else {
      EXPECT_EQ(n, 0);
    }
  }
}

// An answer that is not on its prediction is looked for again only every few
// tokens, so the steps between are queued ahead (a sequence that may draft is
// not), for it and for the requests beside it.
TEST_F(Speculation, ALostPredictionLeavesStepsQueuedAhead) {
  std::vector<GenerationRequest> reqs = {request(ids(20, 71), 40), request(ids(24, 72), 40)};
  for (auto& r : reqs) r.keep_logits = false;  // picked on the backend: steps may be queued ahead
  const auto want = plain(reqs);
  reqs[0].prediction = ids(60, 73);  // unrelated to the answer
  auto b = backend(64);
  Engine e(*b, nullptr, EngineOptions{});
  const auto got = together(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(got[i], want[i], "request " + std::to_string(i));
  const EngineStats st = settled_stats(e);
  EXPECT_GT(st.steps_ahead, st.steps / 2) << st.steps_ahead << " of " << st.steps << " steps queued ahead";
  e.check_accounting();
}

// A request's prediction drafts with drafts otherwise off: the answer is the
// plain one bit for bit, greedy and sampled, every drafted token counted for the
// client as kept or dropped; requests without a prediction beside it draft nothing.
TEST_F(Speculation, APredictionDraftsAndChangesNoBit) {
  std::vector<GenerationRequest> reqs = {request(ids(20, 61), 40), request(ids(31, 62), 36, 0.8f, 9),
                                         request(ids(17, 63), 30), request(ids(26, 64), 33, 0.8f, 4)};
  for (size_t i = 2; i < reqs.size(); ++i) reqs[i].keep_logits = false;  // the backend picks (AllPicked)
  const auto want = plain(reqs);
  for (const Result& w : want) ASSERT_GE(w.ids.size(), 30u);
  // Request 0 and 2 predict their answer exactly; 1 and 3 an edited one: three tokens
  // replaced at 8, two inserted at 20, and the end cut.
  auto edited = [&](std::vector<int32_t> a) {
    for (size_t j = 8; j < 11; ++j) a[j] = (a[j] + 7) % vocab();
    a.insert(a.begin() + 20, {3, 4});
    a.resize(a.size() - 4);
    return a;
  };
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].prediction = i % 2 ? edited(want[i].ids) : want[i].ids;
  std::vector<GenerationRequest> with_bystander = reqs;
  with_bystander.push_back(request(ids(22, 65), 25));  // no prediction
  const auto want_all = [&] {
    auto w = want;
    w.push_back(plain({with_bystander.back()})[0]);
    return w;
  }();
  for (int together = 0; together < 2; ++together) {
    auto b = backend(64);
    EngineOptions o;
    o.max_running = 8;
    o.prediction_tokens = 6;
    Engine e(*b, nullptr, o);
    std::vector<Result> got;
    if (together) {
      got = this->together(e, with_bystander);
    } else {
      for (const auto& r : with_bystander) got.push_back(drain(*e.submit(r), vocab()));
    }
    int64_t kept = 0, dropped = 0;
    for (size_t i = 0; i < with_bystander.size(); ++i) {
      const std::string what = std::string(together ? "together" : "alone") + ", request " + std::to_string(i);
      expect_same(got[i], want_all[i], what);
      kept += got[i].prediction_kept;
      dropped += got[i].prediction_dropped;
      if (i < reqs.size()) {
        EXPECT_GT(got[i].prediction_kept, int64_t(got[i].ids.size()) / (i % 2 ? 3 : 2)) << what;
        if (i % 2 == 0) EXPECT_EQ(got[i].prediction_dropped, 0) << what << ": an exact prediction lost a token";
        else EXPECT_GT(got[i].prediction_dropped, 0) << what << ": the edits were drafted and dropped";
      } else {
        EXPECT_EQ(got[i].prediction_kept + got[i].prediction_dropped, 0) << what;
      }
    }
    const EngineStats st = settled_stats(e);
    EXPECT_EQ(st.draft_tokens, kept + dropped) << "a request without a prediction drafted";
    EXPECT_EQ(st.accepted_tokens, kept);
    e.check_accounting();
  }
  // Predictions not used: no drafts.
  auto b = backend(64);
  EngineOptions off;
  off.prediction_tokens = 0;
  Engine e(*b, nullptr, off);
  expect_same(drain(*e.submit(reqs[0]), vocab()), want[0], "predictions off");
  EXPECT_EQ(settled_stats(e).draft_tokens, 0);
  GenerationRequest bad = reqs[0];
  bad.prediction.push_back(vocab());
  EXPECT_THROW(e.submit(bad), Error) << "a predicted id outside the vocabulary";
}

// The shipped trained model, with its tokenizer: text, end of generation and
// stop strings through drafts of both kinds (its draft model, and n-gram
// lookup over a prompt that repeats a passage).
TEST_F(Speculation, TrainedModelTextAndStopStringsAreTheSame) {
  const std::string root = EMBER_SOURCE_DIR;
  auto base = Model::load(root + "/models/ember-doc-base-Q8_0.gguf");
  const Tokenizer tok = Tokenizer::from_gguf(*base->gguf());
  std::ifstream f(root + "/tests/data/trained/val-sample.txt");
  std::string passage(700, '\0');
  f.read(passage.data(), std::streamsize(passage.size()));
  passage.resize(size_t(f.gcount()));
  const std::string prompts[] = {passage + "\n\n" + passage.substr(0, 160), passage.substr(300)};
  std::vector<GenerationRequest> reqs;
  for (const std::string& p : prompts)
    for (int kind = 0; kind < 3; ++kind) {
      GenerationRequest r;
      r.prompt = tok.encode(p);
      r.max_tokens = 80;
      r.sampling.temperature = kind > 0 ? 0.8f : 0.0f;
      r.sampling.seed = 5;
      // Greedy (0) and sampled without logits kept (2): the backend picks, in
      // a drafting step every token's id (AllPicked, sampled with a draw each).
      // Sampled with logits kept (1): the host picks in both runs.
      r.keep_logits = kind == 1;
      reqs.push_back(std::move(r));
    }
  auto run = [&](EngineOptions o, const std::vector<GenerationRequest>& rs) {
    auto b = backend_under_test(*base, 256, 512, 64, 32);
    Engine e(*b, &tok, o);
    auto out = all_at_once(e, base->desc().vocab, rs);
    e.check_accounting();
    return std::make_pair(out, settled_stats(e));
  };
  EngineOptions plain_opt;
  plain_opt.max_running = 4;
  auto want = run(plain_opt, reqs).first;
  // A stop string from late in the sampled plain answers: the drafted runs must stop at the same place.
  for (size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].sampling.temperature > 0 && want[i].text.size() > 60) reqs[i].stop = {want[i].text.substr(want[i].text.size() * 2 / 3, 5)};
  want = run(plain_opt, reqs).first;
  int stopped = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(want[i].error.empty()) << want[i].error;
    stopped += !reqs[i].stop.empty() && want[i].reason == FinishReason::Stop;
  }
  EXPECT_GT(stopped, 0) << "no answer ended at its stop string";

  EngineOptions ngram = plain_opt;
  ngram.draft_tokens = 6;
  EngineOptions model = plain_opt;
  model.draft_tokens = 4;
  auto draft = Model::load(root + "/models/ember-doc-draft-Q8_0.gguf");
  auto draft_backend = backend_under_test(*draft, 256, 512, 64, 16);
  model.drafter = std::make_shared<ModelDrafter>(std::move(draft), std::move(draft_backend), int(base->desc().vocab));
  for (const auto& [name, o] : {std::pair{"n-gram", ngram}, std::pair{"draft model", model}}) {
    const auto [got, st] = run(o, reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
      expect_same(got[i], want[i], std::string(name) + ", request " + std::to_string(i));
      EXPECT_EQ(got[i].text, want[i].text) << name << ", request " << i;
    }
    EXPECT_GT(st.accepted_tokens, 0) << name;
  }
}
