// The serving engine's speed, measured through its own API (no HTTP):
//
//   ember_bench_engine --model FILE [--backend cpu|cuda] [--threads N] [--batch 1,2,4,8]
//                      [--prompt 128[,2048,...]] [--decode 64] [--doc 8022] [--step 256]
//                      [--rounds 3] [--json FILE] [--host-only]
//
// 0. The roofline, measured in the same run: the device's copy bandwidth (and
//    on CUDA the bf16 matrix rate), so every figure is also a ratio to it
//    (bench/engine/step_costs.h says what a step moves and computes).
// 1. Continuous batching: B requests with distinct prompts of the first
//    --prompt length submitted at once; aggregate decode tok/s = the tokens
//    that arrive while all B are decoding (from the last request's first token
//    to the first request's last), over that time. Long prompts are prefilled
//    one after another, so the requests may hardly overlap; where fewer than B
//    tokens arrive in that window, the window runs on to the last token
//    instead (fewer than B decode in its tail, so the figure is low, never
//    high), and stderr says so. Reported also as a ratio to the
//    single-sequence figure of the same round, and the backend's own step time.
// 2. The engine's own host time per decode step: the same kind of requests
//    through a backend that computes nothing (null_backend.h), so the cost of
//    scheduling and delivery around each step shows apart from the device's.
// 3. Prefill: one cold prompt of each --prompt length (time to its first token).
// 4. Prefix cache (with --doc N > 0): a cold prefill of document A, then B,
//    then A again plus a 40-token question; the return to A is reported as a
//    share of A's cold prefill time; A's cold prefill also as tokens per second.
// --step sets the tokens of one engine step (prompt chunks share it).
// --host-only measures 2 alone (no decoding, prefill or cache figures).
// Requests ignore end-of-generation tokens, so every run decodes the same count.
// --json writes every figure above, with the roofline and the model's costs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend_factory.h"
#include "bench/roofline.h"
#include "bench_util.h"
#include "engine/engine.h"
#include "null_backend.h"
#include "step_costs.h"
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

// n requests that decode max_tokens tokens each (end-of-generation ignored)
// after distinct random prompts of prompt_len tokens (no cache hits): seed
// moves on by n.
std::vector<GenerationRequest> decoding_requests(int n, int prompt_len, int max_tokens, uint32_t& seed, int vocab) {
  std::vector<GenerationRequest> reqs(static_cast<size_t>(n));
  for (GenerationRequest& r : reqs) {
    r.prompt = random_ids(prompt_len, seed++, vocab);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
  }
  return reqs;
}

struct Timing {
  Clock::time_point first, last;
  int64_t cached = 0;
  std::vector<Clock::time_point> arrivals;  // one per token
};

// Drains a stream, noting when its first and last tokens arrived.
Timing drain(RequestStream& s) {
  Timing t;
  RequestUpdate u;
  while (s.next(u)) {
    if (!u.tokens.empty()) {
      const Clock::time_point now = Clock::now();
      if (t.arrivals.empty()) t.first = now;
      t.last = now;
      t.arrivals.insert(t.arrivals.end(), u.tokens.size(), now);
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
  std::string path, backend_kind = "auto", batches = "1,2,4,8", prompts_arg = "128", json_path;
  int threads = 0, decode = 64, doc = 0, rounds = 3, step = 256;
  bool host_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") path = next();
    else if (a == "--backend") backend_kind = next();
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--batch") batches = next();
    else if (a == "--prompt") prompts_arg = next();
    else if (a == "--json") json_path = next();
    else if (a == "--decode") decode = std::stoi(next());
    else if (a == "--doc") doc = std::stoi(next());
    else if (a == "--step") step = std::max(1, std::stoi(next()));
    else if (a == "--rounds") rounds = std::max(1, std::stoi(next()));
    else if (a == "--host-only") host_only = true;
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: %s --model FILE [--backend cpu|cuda] [--threads N] [--batch 1,2,4,8] [--prompt N[,N...]] "
                         "[--decode N] [--doc N] [--step N] [--rounds N] [--json FILE] [--host-only]\n", argv[0]);
    return 2;
  }
  try {
    auto model = Model::load(path);
    const int vocab = model->desc().vocab;
    const std::vector<int> bs = parse_list(batches);
    const std::vector<int> prompts = parse_list(prompts_arg);
    if (bs.empty() || prompts.empty() || *std::min_element(bs.begin(), bs.end()) < 1 ||
        *std::min_element(prompts.begin(), prompts.end()) < 1)
      throw Error("--batch and --prompt take lists of positive numbers");
    const int max_b = *std::max_element(bs.begin(), bs.end());
    const int prompt_len = prompts[0], max_prompt = *std::max_element(prompts.begin(), prompts.end());

    BackendOptions bo;
    bo.kind = backend_kind;
    bo.n_threads = threads;
    bo.limits.max_context = std::max({prompt_len + decode + 8, max_prompt + 8, doc + 64 + 8});
    bo.limits.max_tokens = std::max(step, max_b);
    bo.limits.max_logit_rows = max_b;
    const bench::StepCosts costs = bench::step_costs(*model, bo.kv_type, bo.block_size);
    bo.kv_mem = uint64_t(costs.kv_bytes_per_position) *
                uint64_t(std::max<int64_t>({int64_t(max_b) * (prompt_len + decode + 32), 2 * (doc + 128),
                                            2 * (int64_t(max_prompt) + 128)}) + 4096);
    auto backend = make_backend(*model, bo);
    const double weight_bytes = double(model->weight_bytes_per_token());

    // The roofline of this run: the device's copy bandwidth, and on CUDA the bf16 matrix rate.
    nlohmann::json out;
    bench::Bandwidth bw;
    std::optional<double> bf16;
    std::string bf16_note;
    if (std::string(backend->name()) == "cuda") {
      std::string why;
      const auto g = bench::gpu_copy_bandwidth(why);
      if (!g) throw Error("cannot measure the GPU's copy bandwidth: " + why);
      bw = *g;
      bf16 = bench::gpu_bf16_tflops(bf16_note);
    } else {
      bw = bench::cpu_copy_bandwidth();
    }
    std::printf("roofline: copy %.0f GB/s (%s)", bw.gbs, bw.note.c_str());
    if (bf16) std::printf(", bf16 %.0f TFLOP/s", *bf16);
    std::printf("\nbytes per decoded token: %.3f GB of weights + %.1f KB of KV per position\n\n",
                weight_bytes / 1e9, costs.kv_bytes_per_position / 1e3);
    out["model"] = path;
    out["backend"] = backend->name();
    out["roofline"] = {{"copy_gbs", bw.gbs}, {"copy_note", bw.note},
                       {"bf16_tflops", bf16 ? nlohmann::json(*bf16) : nlohmann::json(nullptr)}, {"bf16_note", bf16_note}};
    out["weight_bytes_per_token"] = weight_bytes;
    out["kv_bytes_per_position"] = costs.kv_bytes_per_position;
    // A step's tok/s ceiling: its tokens over the time its bytes take at the measured bandwidth.
    auto decode_roofline = [&](int seqs, double context) {
      return seqs * bench::roofline_tps(bw.gbs, bench::decode_step_bytes(costs, seqs, context));
    };
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

    uint32_t seed = 1;  // distinct prompts throughout: no cache hits
    if (!host_only) {  // the device's figures
      // The backend alone: one decode step of B sequences (one token each, at
      // position 63 of its own blocks, greedy picks as the engine asks for them),
      // median of 9, rounds interleaved over B. Beside the engine's figures it
      // shows what the scheduling, sampling and delivery around each step cost.
      // Each sequence feeds its own random token: with one token for all, a MoE
      // step would route every sequence to the same experts and read far fewer.
      {
        const int bs_kv = backend->kv_config().block_size;
        const int per_seq = (64 + bs_kv - 1) / bs_kv;
        if (max_b * per_seq <= backend->kv_config().n_blocks) {
          std::vector<std::vector<int32_t>> tables(static_cast<size_t>(max_b));
          for (int s = 0; s < max_b; ++s)
            for (int i = 0; i < per_seq; ++i) tables[size_t(s)].push_back(s * per_seq + i);
          const std::vector<int32_t> toks = random_ids(max_b, 4242, vocab);
          std::vector<std::vector<double>> step_s(bs.size());
          for (int rep = 0; rep < 9; ++rep)
            for (size_t bi = 0; bi < bs.size(); ++bi) {
              StepBatch batch;
              for (int s = 0; s < bs[bi]; ++s)
                batch.seqs.push_back({&toks[size_t(s)], 1, 63, tables[size_t(s)].data(), per_seq, LogitsWanted::LastArgmax});
              const auto t0 = Clock::now();
              backend->forward(batch);
              step_s[bi].push_back(since(t0, Clock::now()));
            }
          std::printf("| sequences | backend step ms (median of 9) | tok/s | vs 1 sequence | %% of roofline |\n|---|---|---|---|---|\n");
          const double one = median(step_s[0]);
          for (size_t bi = 0; bi < bs.size(); ++bi) {
            const double sec = median(step_s[bi]), tps = bs[bi] / sec, pct = 100 * tps / decode_roofline(bs[bi], 64);
            std::printf("| %d | %.3f | %.1f | %.2fx | %.1f |\n", bs[bi], 1e3 * sec, tps, tps / (1.0 / one), pct);
            out["backend_step"].push_back({{"sequences", bs[bi]}, {"ms", 1e3 * sec}, {"tok_s", tps}, {"pct_roofline", pct}});
          }
          std::printf("\n");
        }
      }

      std::printf("## %s, %s backend, %d threads\n\n", path.c_str(), backend->name(), threads);
      std::printf("| sequences | aggregate decode tok/s (median of %d) | per sequence | vs 1 sequence | %% of roofline |\n"
                  "|---|---|---|---|---|\n", rounds);
      std::vector<std::vector<double>> rates(bs.size());
      for (int round = 0; round < rounds; ++round) {
        for (size_t bi = 0; bi < bs.size(); ++bi) {
          const auto t = run_all(engine, decoding_requests(bs[bi], prompt_len, decode, seed, vocab));
          // The window in which every request is decoding: from the last first token to the first last token.
          Clock::time_point start = t[0].first, all_end = t[0].last, last_end = t[0].last;
          for (const Timing& x : t) {
            start = std::max(start, x.first);
            all_end = std::min(all_end, x.last);
            last_end = std::max(last_end, x.last);
          }
          auto arrived = [&](Clock::time_point end) {
            int64_t n = 0;
            for (const Timing& x : t)
              n += std::count_if(x.arrivals.begin(), x.arrivals.end(), [&](Clock::time_point a) { return a > start && a <= end; });
            return n;
          };
          Clock::time_point end = all_end;
          int64_t tokens = arrived(end);
          const bool tail = tokens < bs[bi];
          if (tail) tokens = arrived(end = last_end);
          if (tokens == 0 || !(end > start)) {  // every token came in one delivery: the client was not scheduled in time
            std::fprintf(stderr, "round %d, %d sequences: no token arrived after the last first one; not measured\n", round + 1, bs[bi]);
            continue;
          }
          rates[bi].push_back(double(tokens) / since(start, end));
          std::fprintf(stderr, "round %d, %d sequences: %.2f tok/s%s\n", round + 1, bs[bi], rates[bi].back(),
                       tail ? " (the requests hardly overlapped: measured up to the last token)" : "");
        }
      }
      auto median_or_nan = [](const std::vector<double>& v) { return v.empty() ? std::nan("") : median(v); };
      const double base = median_or_nan(rates[0]);
      const double context = prompt_len + decode / 2.0;  // the average context while decoding
      for (size_t bi = 0; bi < bs.size(); ++bi) {
        const double r = median_or_nan(rates[bi]), roof = decode_roofline(bs[bi], context);
        std::printf("| %d | %.2f | %.2f | %.2fx | %.1f |\n", bs[bi], r, r / bs[bi], r / base, 100 * r / roof);
        out["decode"].push_back({{"sequences", bs[bi]}, {"prompt", prompt_len}, {"new_tokens", decode}, {"tok_s", r},
                                 {"roofline_tok_s", roof}, {"pct_roofline", 100 * r / roof}});
      }
    }

    // The engine's own cost per decode step on the host: B requests driven
    // through a backend that computes nothing (null_backend.h); 8-token prompts,
    // so that nearly every step is a decode step.
    {
      bench::NullBackend null(*backend);
      Engine host_engine(null, nullptr, eo);
      std::printf("\n| sequences | engine host time per decode step, us (null backend, median of %d) | per token, us |\n"
                  "|---|---|---|\n", rounds);
      for (int b : bs) {
        std::vector<double> per_step;
        for (int round = 0; round < rounds; ++round) {
          const auto reqs = decoding_requests(b, 8, decode, seed, vocab);
          const int64_t steps0 = host_engine.stats().steps;
          const auto t0 = Clock::now();
          run_all(host_engine, reqs);
          host_engine.wait_idle();
          const int64_t steps = host_engine.stats().steps - steps0;
          if (steps > 0) per_step.push_back(since(t0, Clock::now()) / double(steps));
        }
        if (per_step.empty()) continue;
        const double us = 1e6 * median(per_step);
        std::printf("| %d | %.1f | %.2f |\n", b, us, us / b);
        out["host_step"].push_back({{"sequences", b}, {"us_per_step", us}, {"us_per_token", us / b}});
      }
    }

    if (!host_only) {
      // Prefill: one cold prompt of each length, its time to first token.
      std::printf("\n| prompt tokens | prefill s (median of %d) | tok/s | TFLOP/s | %% of bf16 rate |\n|---|---|---|---|---|\n",
                  rounds);
      for (int n : prompts) {
        std::vector<double> secs;
        for (int round = 0; round < rounds; ++round) {
          GenerationRequest r;
          r.prompt = random_ids(n, seed++, vocab);
          r.max_tokens = 1;
          r.ignore_eos = true;
          auto st = engine.submit(r);
          const auto t0 = Clock::now();
          secs.push_back(since(t0, drain(*st).first));
        }
        const double sec = median(secs), tflops = n * bench::prefill_flops_per_token(costs, n) / sec / 1e12;
        std::printf("| %d | %.3f | %.0f | %.1f | %s |\n", n, sec, n / sec, tflops,
                    bf16 ? std::to_string(int(std::lround(100 * tflops / *bf16))).c_str() : "-");
        out["prefill"].push_back({{"tokens", n}, {"seconds", sec}, {"tok_s", n / sec}, {"tflops", tflops},
                                  {"pct_bf16", bf16 ? nlohmann::json(100 * tflops / *bf16) : nlohmann::json(nullptr)}});
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
        out["prefix_cache"] = {{"document", doc}, {"a_cold_s", cold_a}, {"b_cold_s", cold_b}, {"return_s", back_a},
                               {"reused", reused}};
      }
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << out.dump(2) << "\n";
      if (!f) throw Error("cannot write " + json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
