// The serving engine's speed, measured through its own API (no HTTP):
//
//   ember_bench_engine --model FILE [--backend cpu|cuda] [--threads N] [--batch 1,2,4,8]
//                      [--prompt 128[,2048,...]] [--decode 64] [--doc 8022] [--step 256] [--prefill-step N]
//                      [--rounds 3] [--json FILE] [--host-only] [--no-overlap]
//                      [--sample T,K,P,MINP] [--host-sampling] [--draft N]
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
//    An unmeasured pass over the batch sizes comes first, so that one-time
//    costs (CUDA Graph captures of new step shapes) stay out of the rounds.
// 2. The engine's own host time per decode step: the same kind of requests
//    (at least 256 new tokens each) through a backend that computes nothing
//    (null_backend.h), so the cost of scheduling and delivery around each step
//    shows apart from the device's.
// 3. Prefill: one cold prompt of each --prompt length (time to its first token).
// 4. Prefix cache (with --doc N > 0): a cold prefill of document A, then B,
//    then A again plus a 40-token question; the return to A is reported as a
//    share of A's cold prefill time; A's cold prefill also as tokens per second.
// --step sets the tokens of one engine step (prompt chunks share it);
// --prefill-step those of a step that holds only prompts (no sequence
// decoding: EngineOptions::prefill_step_tokens; default: --step), as
// `ember serve --prefill-step-tokens` does.
// --host-only measures 2 alone (no decoding, prefill or cache figures).
// --no-overlap runs the engine without queueing step t + 1 before it reads
// step t's picks (EngineOptions::overlap_steps), to measure what that gains.
// --sample makes every request sample (temperature T, top-k K, top-p P, min-p
// MINP; e.g. 0.7,0,0.9,0) instead of decoding greedily; --host-sampling has
// the host pick those tokens from logit rows sent back
// (EngineOptions::sample_on_backend off), to measure what picking them on the
// device gains.
// --draft N decodes with speculative decoding (EngineOptions::draft_tokens: up
// to N tokens drafted by n-gram lookup); the decode table then also gives the
// drafted tokens per generated token and the share of drafts kept. What it
// gains depends on what the model writes: an answer that repeats its context.
// Requests ignore end-of-generation tokens, so every run decodes the same count.
// 5. The GPU memory this process holds (NVML; CUDA backend only), sampled
//    after the load and after each section; the KV pool is sized to the
//    sections' requests, so the largest sample is the preset's footprint at
//    the largest batch: weights, KV blocks and the backend's scratch.
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

#include <unistd.h>

#include "backend/backend_factory.h"
#include "bench/nvml.h"
#include "bench/roofline.h"
#include "bench_util.h"
#include "engine/engine.h"
#include "engine/sampling_validation.h"
#include "null_backend.h"
#include "step_costs.h"
#include "model/model.h"
#include "util/error.h"
#include "util/process_cpu.h"

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
std::vector<GenerationRequest> decoding_requests(int n, int prompt_len, int max_tokens, uint32_t& seed, int vocab,
                                                 const SamplingParams& sampling) {
  std::vector<GenerationRequest> reqs(static_cast<size_t>(n));
  for (GenerationRequest& r : reqs) {
    r.prompt = random_ids(prompt_len, seed++, vocab);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling = sampling;
    r.sampling.seed = seed;
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

using bench::median;

// The command line.
struct Options {
  std::string path, backend_kind = "auto", batches = "1,2,4,8", prompts = "128", json_path;
  int threads = 0, decode = 64, doc = 0, rounds = 3, step = 256, prefill_step = 0, draft = 0;
  bool host_only = false, no_overlap = false, host_sampling = false;
  SamplingParams sampling;  // temperature 0: greedy
};

// Parses argv into o; false (after printing why) when the run cannot start.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") o.path = next();
    else if (a == "--backend") o.backend_kind = next();
    else if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--batch") o.batches = next();
    else if (a == "--prompt") o.prompts = next();
    else if (a == "--json") o.json_path = next();
    else if (a == "--decode") o.decode = std::stoi(next());
    else if (a == "--doc") o.doc = std::stoi(next());
    else if (a == "--step") o.step = std::max(1, std::stoi(next()));
    else if (a == "--prefill-step") o.prefill_step = std::max(1, std::stoi(next()));
    else if (a == "--rounds") o.rounds = std::max(1, std::stoi(next()));
    else if (a == "--host-only") o.host_only = true;
    else if (a == "--no-overlap") o.no_overlap = true;
    else if (a == "--host-sampling") o.host_sampling = true;
    else if (a == "--draft") {
      o.draft = std::stoi(next());
      if (o.draft < 0 || o.draft > EngineOptions::kMaxDraftTokens) {
        std::fprintf(stderr, "--draft takes 0 to %d tokens\n", EngineOptions::kMaxDraftTokens);
        return false;
      }
    }
    else if (a == "--sample") {
      const std::string v = next();
      if (std::sscanf(v.c_str(), "%f,%d,%f,%f", &o.sampling.temperature, &o.sampling.top_k, &o.sampling.top_p,
                      &o.sampling.min_p) != 4) {
        std::fprintf(stderr, "--sample takes T,K,P,MINP (e.g. 0.7,0,0.9,0), not %s\n", v.c_str());
        return false;
      }
      validate_sampling(o.sampling);
    }
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return false; }
  }
  if (o.path.empty()) {
    std::fprintf(stderr, "usage: %s --model FILE [--backend cpu|cuda] [--threads N] [--batch 1,2,4,8] [--prompt N[,N...]] "
                         "[--decode N] [--doc N] [--step N] [--rounds N] [--json FILE] [--host-only] [--no-overlap] "
                         "[--sample T,K,P,MINP] [--host-sampling] [--draft N]\n", argv[0]);
    return false;
  }
  return true;
}

// Tokens each request of the host-time section generates: long enough that
// submitting the requests and starting their readers (a thread each, on the
// bench's side) spread over many steps. With 64 tokens they added about as much
// per step as the engine itself at 64 sequences.
constexpr int kHostDecode = 256;

// What every section reads and adds to: the options, the model and its
// backend, what a step moves and computes, the roofline measured in this run,
// and the JSON report.
struct Run {
  Options o;
  std::vector<int> bs, prompts;
  int vocab = 0, prompt_len = 0, max_b = 0, host_decode = 0;
  // The engine's step budgets (open()): --step, at least a token and its drafts for every
  // sequence; and that of steps holding only prompts, --prefill-step, at least the step's.
  int step_tokens = 0, prefill_step_tokens = 0;
  std::unique_ptr<Model> model;
  std::unique_ptr<Backend> backend;
  bench::StepCosts costs;
  bench::Bandwidth bw;
  std::optional<double> bf16;
  uint32_t seed = 1;  // distinct prompts throughout: no cache hits
  nlohmann::json out;
  std::optional<bench::Nvml::Use> gpu_peak;  // the largest of the GPU memory samples (note_gpu_memory)

  bool on_cuda() const { return std::string(backend->name()) == "cuda"; }

  // A step's tok/s ceiling: its tokens over the time its bytes take at the measured bandwidth.
  double decode_roofline(int seqs, double context) const {
    return seqs * bench::roofline_tps(bw.gbs, bench::decode_step_bytes(costs, seqs, context));
  }
};

// Loads the model and starts its backend with room for every section's requests.
void open(Run& r) {
  const Options& o = r.o;
  r.model = Model::load(o.path);
  r.vocab = r.model->desc().vocab;
  r.bs = bench::parse_list(o.batches);
  r.prompts = bench::parse_list(o.prompts);
  if (r.bs.empty() || r.prompts.empty() || *std::min_element(r.bs.begin(), r.bs.end()) < 1 ||
      *std::min_element(r.prompts.begin(), r.prompts.end()) < 1)
    throw Error("--batch and --prompt take lists of positive numbers");
  r.max_b = *std::max_element(r.bs.begin(), r.bs.end());
  r.prompt_len = r.prompts[0];
  r.host_decode = std::max(o.decode, kHostDecode);
  const int max_prompt = *std::max_element(r.prompts.begin(), r.prompts.end());

  BackendOptions bo;
  bo.kind = o.backend_kind;
  bo.n_threads = o.threads;
  bo.limits.max_context = std::max({r.prompt_len + o.decode + 8, 8 + r.host_decode + 8, max_prompt + 8, o.doc + 64 + 8});
  r.step_tokens = std::max(o.step, r.max_b * (1 + o.draft));
  r.prefill_step_tokens = std::max(r.step_tokens, o.prefill_step);
  bo.limits.max_tokens = r.prefill_step_tokens;
  bo.limits.max_logit_rows = r.max_b * (1 + o.draft);
  r.costs = bench::step_costs(*r.model, bo.kv_type, bo.block_size);
  const int64_t positions = std::max<int64_t>({int64_t(r.max_b) * (r.prompt_len + o.decode + 32),
                                               int64_t(r.max_b) * (8 + r.host_decode + 32), 2 * (o.doc + 128),
                                               2 * (int64_t(max_prompt) + 128)});
  bo.kv_mem = uint64_t(r.costs.kv_bytes_per_position) * uint64_t(positions + 4096);
  r.backend = make_backend(*r.model, bo);
}

// The roofline of this run: the device's copy bandwidth, and on CUDA the bf16 matrix rate.
void measure_roofline(Run& r) {
  std::string bf16_note;
  if (r.on_cuda()) {
    std::string why;
    const auto g = bench::gpu_copy_bandwidth(why);
    if (!g) throw Error("cannot measure the GPU's copy bandwidth: " + why);
    r.bw = *g;
    r.bf16 = bench::gpu_bf16_tflops(bf16_note);
  } else {
    r.bw = bench::cpu_copy_bandwidth();
  }
  const double weight_bytes = double(r.model->weight_bytes_per_token());
  std::printf("roofline: copy %.0f GB/s (%s)", r.bw.gbs, r.bw.note.c_str());
  if (r.bf16) std::printf(", bf16 %.0f TFLOP/s", *r.bf16);
  std::printf("\nbytes per decoded token: %.3f GB of weights + %.1f KB of KV per position\n\n", weight_bytes / 1e9,
              r.costs.kv_bytes_per_position / 1e3);
  r.out["model"] = r.o.path;
  r.out["backend"] = r.backend->name();
  r.out["overlap_steps"] = !r.o.no_overlap;
  r.out["draft_tokens"] = r.o.draft;
  r.out["step_tokens"] = r.step_tokens;
  r.out["prefill_step_tokens"] = r.prefill_step_tokens;
  r.out["sampling"] = {{"temperature", r.o.sampling.temperature}, {"top_k", r.o.sampling.top_k},
                       {"top_p", r.o.sampling.top_p}, {"min_p", r.o.sampling.min_p},
                       {"on_backend", !r.o.host_sampling}};
  r.out["roofline"] = {{"copy_gbs", r.bw.gbs}, {"copy_note", r.bw.note},
                       {"bf16_tflops", r.bf16 ? nlohmann::json(*r.bf16) : nlohmann::json(nullptr)}, {"bf16_note", bf16_note}};
  r.out["weight_bytes_per_token"] = weight_bytes;
  r.out["kv_bytes_per_position"] = r.costs.kv_bytes_per_position;
}

// Samples the GPU memory this process holds (NVML), keeping the largest.
// Decode steps allocate nothing, so samples between sections see every
// allocation that stays; only a buffer freed within a section would escape.
void note_gpu_memory(Run& r) {
  if (!r.on_cuda()) return;
  const auto use = bench::Nvml::get().memory_of(getpid());
  if (use && (!r.gpu_peak || use->bytes > r.gpu_peak->bytes)) r.gpu_peak = use;
}

// Prints and records the largest sample.
void report_gpu_memory(Run& r) {
  if (!r.on_cuda()) return;
  if (!r.gpu_peak) {
    std::printf("GPU memory: n/a (no NVML)\n");
    r.out["gpu_memory_peak_bytes"] = nullptr;
    return;
  }
  const KvConfig& kv = r.backend->kv_config();
  const double kv_pool = double(kv.n_blocks) * double(kv_block_bytes(r.model->desc(), kv.block_size, kv.type));
  std::printf("GPU memory (%s): %.2f GB at most (sampled after the load and each section; KV pool %.2f GB)\n",
              r.gpu_peak->source, double(r.gpu_peak->bytes) / 1e9, kv_pool / 1e9);
  r.out["gpu_memory_peak_bytes"] = r.gpu_peak->bytes;
  r.out["gpu_memory_source"] = r.gpu_peak->source;
}

// The backend alone: one decode step of B sequences (one token each, at
// position 63 of its own blocks, greedy picks as the engine asks for them),
// median of 9, rounds interleaved over B. Beside the engine's figures it shows
// what the scheduling, sampling and delivery around each step cost. Each
// sequence feeds its own random token: with one token for all, a MoE step
// would route every sequence to the same experts and read far fewer.
void backend_steps(Run& r) {
  Backend& backend = *r.backend;
  const int bs_kv = backend.kv_config().block_size;
  const int per_seq = (64 + bs_kv - 1) / bs_kv;
  if (r.max_b * per_seq > backend.kv_config().n_blocks) return;
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(r.max_b));
  for (int s = 0; s < r.max_b; ++s)
    for (int i = 0; i < per_seq; ++i) tables[size_t(s)].push_back(s * per_seq + i);
  const std::vector<int32_t> toks = random_ids(r.max_b, 4242, r.vocab);
  std::vector<std::vector<double>> step_s(r.bs.size());
  for (int rep = 0; rep < 9; ++rep)
    for (size_t bi = 0; bi < r.bs.size(); ++bi) {
      StepBatch batch;
      for (int s = 0; s < r.bs[bi]; ++s)
        batch.seqs.push_back({&toks[size_t(s)], 1, 63, tables[size_t(s)].data(), per_seq, LogitsWanted::LastPicked, -1, {}});
      const auto t0 = Clock::now();
      backend.forward(batch);
      step_s[bi].push_back(since(t0, Clock::now()));
    }
  std::printf("| sequences | backend step ms (median of 9) | tok/s | vs 1 sequence | %% of roofline |\n|---|---|---|---|---|\n");
  const double one = median(step_s[0]);
  for (size_t bi = 0; bi < r.bs.size(); ++bi) {
    const double sec = median(step_s[bi]), tps = r.bs[bi] / sec, pct = 100 * tps / r.decode_roofline(r.bs[bi], 64);
    std::printf("| %d | %.3f | %.1f | %.2fx | %.1f |\n", r.bs[bi], 1e3 * sec, tps, tps / (1.0 / one), pct);
    r.out["backend_step"].push_back({{"sequences", r.bs[bi]}, {"ms", 1e3 * sec}, {"tok_s", tps}, {"pct_roofline", pct}});
  }
  std::printf("\n");
}

// Continuous batching: aggregate decode tok/s of B requests submitted at once
// (the file's header says which window counts), median over rounds.
void engine_decode(Run& r, Engine& engine) {
  const Options& o = r.o;
  std::printf("## %s, %s backend, %d threads\n\n", o.path.c_str(), r.backend->name(), o.threads);
  // Two CPU figures: the whole process's (the bench's reader threads, one a
  // request woken at every token, among them), and the engine's step thread
  // alone: what serving costs the host apart from its clients (on the CPU
  // backend, its worker threads are the process's).
  std::printf("| sequences | aggregate decode tok/s (median of %d) | per sequence | vs 1 sequence | %% of roofline | process CPU, cores | CPU us per token | engine thread CPU, cores |\n"
              "|---|---|---|---|---|---|---|---|\n", o.rounds);
  // One unmeasured pass per batch size first: the backend meets every step
  // shape the rounds will (on CUDA capturing a graph for each, once per
  // process), so the rounds time steady decoding.
  for (int b : r.bs) run_all(engine, decoding_requests(b, r.prompt_len, o.decode, r.seed, r.vocab, o.sampling));
  std::vector<std::vector<double>> rates(r.bs.size()), cores(r.bs.size()), cpu_per_token(r.bs.size()),
      engine_cores(r.bs.size());
  std::vector<int64_t> drafted(r.bs.size()), accepted(r.bs.size());  // speculative decoding, over the rounds
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t bi = 0; bi < r.bs.size(); ++bi) {
      const int b = r.bs[bi];
      const auto reqs = decoding_requests(b, r.prompt_len, o.decode, r.seed, r.vocab, o.sampling);
      // The process's CPU time over the whole round (prefill included, and the
      // bench's own reader threads: an upper bound on the engine's). The step
      // thread's clock is read inside the process's window (after its first
      // read, before its last), so that the thread's share cannot exceed it.
      const double cpu0 = own_process_cpu_seconds();
      const EngineStats st0 = engine.stats();
      const auto wall0 = Clock::now();
      const auto t = run_all(engine, reqs);
      const EngineStats st1 = engine.stats();
      const double cpu = own_process_cpu_seconds() - cpu0;
      const double wall = since(wall0, Clock::now());
      drafted[bi] += st1.draft_tokens - st0.draft_tokens;
      accepted[bi] += st1.accepted_tokens - st0.accepted_tokens;
      cores[bi].push_back(cpu / wall);
      if (st0.step_thread_cpu_seconds >= 0 && st1.step_thread_cpu_seconds >= 0)
        engine_cores[bi].push_back((st1.step_thread_cpu_seconds - st0.step_thread_cpu_seconds) / wall);
      cpu_per_token[bi].push_back(1e6 * cpu / (double(b) * o.decode));
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
      const bool tail = tokens < b;
      if (tail) tokens = arrived(end = last_end);
      if (tokens == 0 || !(end > start)) {  // every token came in one delivery: the client was not scheduled in time
        std::fprintf(stderr, "round %d, %d sequences: no token arrived after the last first one; not measured\n", round + 1, b);
        continue;
      }
      rates[bi].push_back(double(tokens) / since(start, end));
      std::fprintf(stderr, "round %d, %d sequences: %.2f tok/s%s\n", round + 1, b, rates[bi].back(),
                   tail ? " (the requests hardly overlapped: measured up to the last token)" : "");
    }
  }
  auto median_or_nan = [](const std::vector<double>& v) { return v.empty() ? std::nan("") : median(v); };
  const double base = median_or_nan(rates[0]);
  const double context = r.prompt_len + o.decode / 2.0;  // the average context while decoding
  for (size_t bi = 0; bi < r.bs.size(); ++bi) {
    const double rate = median_or_nan(rates[bi]), roof = r.decode_roofline(r.bs[bi], context);
    const double c = median_or_nan(cores[bi]), us = median_or_nan(cpu_per_token[bi]);
    const double ec = median_or_nan(engine_cores[bi]);
    std::printf("| %d | %.2f | %.2f | %.2fx | %.1f | %.3f | %.1f | %.3f |\n", r.bs[bi], rate, rate / r.bs[bi], rate / base,
                100 * rate / roof, c, us, ec);
    r.out["decode"].push_back({{"sequences", r.bs[bi]}, {"prompt", r.prompt_len}, {"new_tokens", o.decode}, {"tok_s", rate},
                               {"roofline_tok_s", roof}, {"pct_roofline", 100 * rate / roof}, {"process_cpu_cores", c},
                               {"cpu_us_per_token", us}, {"drafted", drafted[bi]}, {"accepted", accepted[bi]},
                               {"engine_thread_cpu_cores", std::isfinite(ec) ? nlohmann::json(ec) : nlohmann::json(nullptr)}});
  }
  if (o.draft > 0) {
    std::printf("\n| sequences | drafted tokens per generated token | drafts kept |\n|---|---|---|\n");
    for (size_t bi = 0; bi < r.bs.size(); ++bi) {
      const double generated = double(r.bs[bi]) * o.decode * o.rounds;
      std::printf("| %d | %.2f | %.1f%% |\n", r.bs[bi], double(drafted[bi]) / generated,
                  drafted[bi] ? 100.0 * double(accepted[bi]) / double(drafted[bi]) : 0.0);
    }
  }
}

// The engine's own cost per decode step on the host: B requests driven through
// a backend that computes nothing (null_backend.h); 8-token prompts, so that
// nearly every step is a decode step, and host_decode new tokens each.
void host_steps(Run& r, const EngineOptions& eo) {
  bench::NullBackend null(*r.backend);
  Engine host_engine(null, nullptr, eo);
  std::printf("\n| sequences | engine host time per decode step, us (null backend, %d new tokens, median of %d) | per token, us |\n"
              "|---|---|---|\n", r.host_decode, r.o.rounds);
  for (int b : r.bs) {
    std::vector<double> per_step;
    for (int round = 0; round < r.o.rounds; ++round) {
      const auto reqs = decoding_requests(b, 8, r.host_decode, r.seed, r.vocab, r.o.sampling);
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
    r.out["host_step"].push_back({{"sequences", b}, {"new_tokens", r.host_decode}, {"us_per_step", us}, {"us_per_token", us / b}});
  }
}

// Prefill: one cold prompt of each length, its time to first token.
void prefill(Run& r, Engine& engine) {
  std::printf("\n| prompt tokens | prefill s (median of %d) | tok/s | TFLOP/s | %% of bf16 rate |\n|---|---|---|---|---|\n",
              r.o.rounds);
  for (int n : r.prompts) {
    std::vector<double> secs;
    for (int round = 0; round < r.o.rounds; ++round) {
      GenerationRequest q;
      q.prompt = random_ids(n, r.seed++, r.vocab);
      q.max_tokens = 1;
      q.ignore_eos = true;
      auto st = engine.submit(q);
      const auto t0 = Clock::now();
      secs.push_back(since(t0, drain(*st).first));
    }
    const double sec = median(secs), tflops = n * bench::prefill_flops_per_token(r.costs, n) / sec / 1e12;
    std::printf("| %d | %.3f | %.0f | %.1f | %s |\n", n, sec, n / sec, tflops,
                r.bf16 ? std::to_string(int(std::lround(100 * tflops / *r.bf16))).c_str() : "-");
    r.out["prefill"].push_back({{"tokens", n}, {"seconds", sec}, {"tok_s", n / sec}, {"tflops", tflops},
                                {"pct_bf16", r.bf16 ? nlohmann::json(100 * tflops / *r.bf16) : nlohmann::json(nullptr)}});
  }
}

// Prefix cache: a cold prefill of document A, then B, then A again plus a
// 40-token question; the return to A as a share of A's cold prefill.
void prefix_cache(Run& r, Engine& engine) {
  const int doc = r.o.doc;
  auto one = [&](std::vector<int32_t> prompt) {
    GenerationRequest q;
    q.prompt = std::move(prompt);
    q.max_tokens = 1;
    q.ignore_eos = true;
    auto s = engine.submit(q);
    const auto t0 = Clock::now();
    const Timing t = drain(*s);
    return std::pair{since(t0, t.first), t.cached};
  };
  const auto A = random_ids(doc, 7777, r.vocab), B = random_ids(doc, 8888, r.vocab);
  auto question = random_ids(40, 4242, r.vocab);
  std::vector<int32_t> A2 = A;
  A2.insert(A2.end(), question.begin(), question.end());
  const auto [cold_a, c0] = one(A);
  const auto [cold_b, c1] = one(B);
  const auto [back_a, reused] = one(A2);
  std::printf("\n| prefix cache, %d-token documents | seconds | tokens from the cache |\n|---|---|---|\n", doc);
  std::printf("| A cold | %.2f | %lld |\n| B cold | %.2f | %lld |\n| A + 40-token question | %.3f | %lld |\n", cold_a,
              (long long)c0, cold_b, (long long)c1, back_a, (long long)reused);
  std::printf("\nreturn to A: %.2f%% of A's cold prefill\n", 100.0 * back_a / cold_a);
  std::printf("prefill: %d tokens in %.3f s, %.0f tok/s (steps of %d tokens)\n", doc, cold_a, double(doc) / cold_a,
              r.prefill_step_tokens);
  std::fflush(stdout);
  r.out["prefix_cache"] = {{"document", doc}, {"a_cold_s", cold_a}, {"b_cold_s", cold_b}, {"return_s", back_a},
                           {"reused", reused}};
}

}  // namespace

int main(int argc, char** argv) {
  Run r;
  try {
    if (!parse_options(argc, argv, r.o)) return 2;
    open(r);
    measure_roofline(r);
    EngineOptions eo;
    eo.max_running = r.max_b;
    eo.overlap_steps = !r.o.no_overlap;
    eo.sample_on_backend = !r.o.host_sampling;
    eo.draft_tokens = r.o.draft;
    eo.step_tokens = r.step_tokens;
    eo.prefill_step_tokens = r.prefill_step_tokens;
    Engine engine(*r.backend, nullptr, eo);
    {  // warm-up: page the weights in, start the threads
      GenerationRequest w;
      w.prompt = random_ids(16, 999, r.vocab);
      w.max_tokens = 4;
      run_all(engine, {w});
    }
    engine.wait_idle();
    note_gpu_memory(r);
    if (!r.o.host_only) {
      backend_steps(r);
      note_gpu_memory(r);
      engine_decode(r, engine);
      note_gpu_memory(r);
    }
    host_steps(r, eo);
    if (!r.o.host_only) {
      prefill(r, engine);
      note_gpu_memory(r);
      if (r.o.doc > 0) {
        prefix_cache(r, engine);
        note_gpu_memory(r);
      }
      report_gpu_memory(r);
    }
    if (!r.o.json_path.empty()) {
      std::ofstream f(r.o.json_path);
      f << r.out.dump(2) << "\n";
      if (!f) throw Error("cannot write " + r.o.json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
