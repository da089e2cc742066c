// The serving engine's speed, measured through its own API (no HTTP):
//
//   ember_bench_engine --model FILE [--backend cpu] [--threads N] [--batch 1,2,4,8]
//                      [--prompt 128] [--decode 64] [--doc 8022] [--step 256] [--rounds 3]
//
// 1. Continuous batching: B requests with distinct prompts submitted at once;
//    aggregate decode tok/s = tokens generated after each request's first
//    one, over the time from the last first token to the last token. Reported
//    also as a ratio to the single-sequence figure of the same round.
// 2. Prefix cache (with --doc N > 0): a cold prefill of document A, then B,
//    then A again plus a 40-token question; the return to A is reported as a
//    share of A's cold prefill time; A's cold prefill also as tokens per second.
// --step sets the tokens of one engine step (prompt chunks share it).
// Requests ignore end-of-generation tokens, so every run decodes the same count.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_factory.h"
#include "bench_util.h"
#include "engine/engine.h"
#include "model/model.h"
#include "util/error.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<int32_t> random_ids(int n, uint32_t seed, int vocab) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 12345;
  for (auto& t : v) {
    x = x * 1664525u + 1013904223u;
    t = int32_t((x >> 8) % uint32_t(std::min(vocab, 100000)));
  }
  return v;
}

struct Timing {
  Clock::time_point first, last;
  int64_t tokens = 0;
  int64_t cached = 0;
};

// Drains a stream, noting when its first and last tokens arrived.
Timing drain(RequestStream& s) {
  Timing t;
  RequestUpdate u;
  while (s.next(u)) {
    if (!u.tokens.empty()) {
      if (t.tokens == 0) t.first = Clock::now();
      t.tokens += int64_t(u.tokens.size());
      t.last = Clock::now();
    }
    if (u.finished) {
      if (u.reason == FinishReason::Error) throw Error(u.error);
      t.cached = u.cached_tokens;
    }
  }
  return t;
}

std::vector<Timing> run_all(Engine& e, const std::vector<GenerationRequest>& reqs) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back(e.submit(r));
  std::vector<Timing> out(reqs.size());
  std::vector<std::thread> th;
  for (size_t i = 0; i < reqs.size(); ++i) th.emplace_back([&, i] { out[i] = drain(*streams[i]); });
  for (auto& t : th) t.join();
  return out;
}

}  // namespace

using bench::median;
using bench::parse_list;

int main(int argc, char** argv) {
  std::string path, backend_kind = "auto", batches = "1,2,4,8";
  int threads = 0, prompt_len = 128, decode = 64, doc = 0, rounds = 3, step = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") path = next();
    else if (a == "--backend") backend_kind = next();
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--batch") batches = next();
    else if (a == "--prompt") prompt_len = std::stoi(next());
    else if (a == "--decode") decode = std::stoi(next());
    else if (a == "--doc") doc = std::stoi(next());
    else if (a == "--step") step = std::max(1, std::stoi(next()));
    else if (a == "--rounds") rounds = std::max(1, std::stoi(next()));
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: %s --model FILE [--backend cpu] [--threads N] [--batch 1,2,4,8] [--prompt N] [--decode N] [--doc N] [--step N] [--rounds N]\n", argv[0]);
    return 2;
  }
  try {
    auto model = Model::load(path);
    const int vocab = model->desc().vocab;
    const std::vector<int> bs = parse_list(batches);
    const int max_b = *std::max_element(bs.begin(), bs.end());

    BackendOptions bo;
    bo.kind = backend_kind;
    bo.n_threads = threads;
    bo.limits.max_context = std::max(prompt_len + decode + 8, doc + 64 + 8);
    bo.limits.max_tokens = std::max(step, max_b);
    bo.limits.max_logit_rows = max_b;
    const uint64_t per_pos = kv_block_bytes(model->desc(), bo.block_size, bo.kv_type) / uint64_t(bo.block_size);
    bo.kv_mem = per_pos * uint64_t(std::max<int64_t>(int64_t(max_b) * (prompt_len + decode + 32), 2 * (doc + 128)) + 4096);
    auto backend = make_backend(*model, bo);
    EngineOptions eo;
    eo.max_running = max_b;
    Engine engine(*backend, nullptr, eo);

    {  // warm-up: page the weights in, start the threads
      GenerationRequest w;
      w.prompt = random_ids(16, 999, vocab);
      w.max_tokens = 4;
      run_all(engine, {w});
    }
    engine.wait_idle();

    // The backend alone: one decode step of B sequences (one token each, at
    // position 63 of its own blocks), median of 9, rounds interleaved over B.
    // Beside the engine's figures it shows what the scheduling, sampling and
    // delivery around each step cost.
    {
      const int bs_kv = backend->kv_config().block_size;
      const int per_seq = (64 + bs_kv - 1) / bs_kv;
      if (max_b * per_seq <= backend->kv_config().n_blocks) {
        std::vector<std::vector<int32_t>> tables(static_cast<size_t>(max_b));
        for (int s = 0; s < max_b; ++s)
          for (int i = 0; i < per_seq; ++i) tables[size_t(s)].push_back(s * per_seq + i);
        std::vector<int32_t> toks(static_cast<size_t>(max_b), 42);
        std::vector<std::vector<double>> step_s(bs.size());
        for (int rep = 0; rep < 9; ++rep)
          for (size_t bi = 0; bi < bs.size(); ++bi) {
            StepBatch batch;
            for (int s = 0; s < bs[bi]; ++s)
              batch.seqs.push_back({&toks[size_t(s)], 1, 63, tables[size_t(s)].data(), per_seq, LogitsWanted::Last});
            const auto t0 = Clock::now();
            backend->forward(batch);
            step_s[bi].push_back(since(t0, Clock::now()));
          }
        std::printf("| sequences | backend step ms (median of 9) | tok/s | vs 1 sequence |\n|---|---|---|---|\n");
        const double one = median(step_s[0]);
        for (size_t bi = 0; bi < bs.size(); ++bi) {
          const double ms = median(step_s[bi]);
          std::printf("| %d | %.3f | %.1f | %.2fx |\n", bs[bi], 1e3 * ms, bs[bi] / ms, (bs[bi] / ms) / (1.0 / one));
        }
        std::printf("\n");
      }
    }

    std::printf("## %s, %s backend, %d threads\n\n", path.c_str(), backend->name(), threads);
    std::printf("| sequences | aggregate decode tok/s (median of %d) | per sequence | vs 1 sequence |\n|---|---|---|---|\n", rounds);
    std::vector<std::vector<double>> rates(bs.size());
    uint32_t seed = 1;
    for (int round = 0; round < rounds; ++round) {
      for (size_t bi = 0; bi < bs.size(); ++bi) {
        std::vector<GenerationRequest> reqs;
        for (int i = 0; i < bs[bi]; ++i) {
          GenerationRequest r;
          r.prompt = random_ids(prompt_len, seed++, vocab);  // distinct: no cache hits
          r.max_tokens = decode;
          r.ignore_eos = true;
          reqs.push_back(r);
        }
        const auto t = run_all(engine, reqs);
        Clock::time_point start = t[0].first, end = t[0].last;
        int64_t tokens = 0;
        for (const Timing& x : t) {
          start = std::max(start, x.first);
          end = std::max(end, x.last);
          tokens += x.tokens - 1;
        }
        rates[bi].push_back(double(tokens) / since(start, end));
        std::fprintf(stderr, "round %d, %d sequences: %.2f tok/s\n", round + 1, bs[bi], rates[bi].back());
      }
    }
    const double base = median(rates[0]);
    for (size_t bi = 0; bi < bs.size(); ++bi) {
      const double r = median(rates[bi]);
      std::printf("| %d | %.2f | %.2f | %.2fx |\n", bs[bi], r, r / bs[bi], r / base);
    }

    if (doc > 0) {
      auto one = [&](std::vector<int32_t> prompt) {
        GenerationRequest r;
        r.prompt = std::move(prompt);
        r.max_tokens = 1;
        r.ignore_eos = true;
        auto s = engine.submit(r);
        const auto t0 = Clock::now();
        const Timing t = drain(*s);
        return std::pair{since(t0, t.first), t.cached};
      };
      const auto A = random_ids(doc, 7777, vocab), B = random_ids(doc, 8888, vocab);
      auto q = random_ids(40, 4242, vocab);
      std::vector<int32_t> A2 = A;
      A2.insert(A2.end(), q.begin(), q.end());
      const auto [cold_a, c0] = one(A);
      const auto [cold_b, c1] = one(B);
      const auto [back_a, reused] = one(A2);
      std::printf("\n| prefix cache, %d-token documents | seconds | tokens from the cache |\n|---|---|---|\n", doc);
      std::printf("| A cold | %.2f | %lld |\n| B cold | %.2f | %lld |\n| A + 40-token question | %.3f | %lld |\n", cold_a, (long long)c0,
                  cold_b, (long long)c1, back_a, (long long)reused);
      std::printf("\nreturn to A: %.2f%% of A's cold prefill\n", 100.0 * back_a / cold_a);
      std::printf("prefill: %d tokens in %.3f s, %.0f tok/s (steps of %d tokens)\n", doc, cold_a, double(doc) / cold_a, step);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
