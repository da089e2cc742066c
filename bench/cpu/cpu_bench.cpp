// CPU speed next to this machine's memory-bandwidth roofline, measured in the same run.
//
//   ember_bench_cpu --model FILE.gguf [--prompt 512] [--gen 128] [--threads N] [--rounds 3]
//
// Roofline: a large memcpy on all threads (bytes read + bytes written per second).
// A pure read stream on all threads is reported beside it: decode only reads.
// Decode tok/s is reported also as a share of bandwidth / weight-bytes-per-token;
// prefill as effective GFLOP/s = 2 x parameters used per token x tokens / seconds.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "bench_util.h"
#include "engine/block_allocator.h"
#include "engine/session.h"
#include "model/model.h"
#include "util/error.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using bench::median;  // for an even count of rounds, the mean of the middle two

struct Bandwidth {
  double copy;  // memcpy: bytes read + bytes written per second (the roofline's definition)
  double read;  // a pure read stream: what a decode step, which only reads weights, can at best reach
};

// Median bandwidths over a 1 GiB buffer, split across the pool's threads.
Bandwidth measure_bandwidth(ThreadPool& pool) {
  const size_t n = size_t(1) << 30;
  std::vector<uint8_t> a(n), b(n);
  pool.parallel_for(int64_t(n), [&](int64_t s, int64_t e, int) { std::memset(a.data() + s, int(s & 0x7f) + 1, size_t(e - s)); std::memset(b.data() + s, 3, size_t(e - s)); });
  std::vector<double> copy, read;
  std::vector<uint64_t> sums(size_t(pool.size()));
  for (int rep = 0; rep < 7; ++rep) {
    auto t = Clock::now();
    pool.parallel_for(int64_t(n), [&](int64_t s, int64_t e, int) { std::memcpy(b.data() + s, a.data() + s, size_t(e - s)); });
    copy.push_back(2.0 * double(n) / seconds_since(t));
    t = Clock::now();
    pool.parallel_for(int64_t(n / 8), [&](int64_t s, int64_t e, int thread) {
      const uint64_t* p = reinterpret_cast<const uint64_t*>(a.data()) + s;
      const uint64_t* end = reinterpret_cast<const uint64_t*>(a.data()) + e;
      // Sixteen independent sums over 128 bytes a step: few instructions per
      // byte, so the core keeps many loads in flight (one core's read rate is
      // bound by how many misses it has outstanding, not by the memory bus).
      uint64_t x[16] = {};
      for (; end - p >= 16; p += 16)
        for (int j = 0; j < 16; ++j) x[j] += p[j];
      for (; p < end; ++p) x[0] += *p;
      uint64_t total = 0;
      for (uint64_t v : x) total += v;
      sums[size_t(thread)] += total;
    });
    read.push_back(double(n) / seconds_since(t));
  }
  if (b[12345] != a[12345]) throw Error("memcpy check failed");
  uint64_t total = 0;
  for (uint64_t v : sums) total += v;
  if (total == 0) throw Error("read check failed");  // the buffer holds no zeros
  return {median(copy), median(read)};
}

// Weight elements a token multiplies with (matrices and active experts; no embedding lookup).
double params_per_token(const Model& m) {
  const ModelDesc& d = m.desc();
  const Weights& w = m.weights();
  double n = double(w.output.k) * double(w.output.rows);
  for (const auto& L : w.layers) {
    for (const Matrix* x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.router})
      if (x->present()) n += double(x->k) * double(x->rows);
    for (const ExpertMatrices* e : {&L.gate_exps, &L.up_exps, &L.down_exps})
      if (e->present()) n += double(d.n_experts_used) * double(e->experts[0].k) * double(e->experts[0].rows);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int prompt_len = 512, gen = 128, threads = 0, rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") path = next();
    else if (a == "--prompt") prompt_len = std::stoi(next());
    else if (a == "--gen") gen = std::stoi(next());
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--rounds") rounds = std::max(1, std::stoi(next()));
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (path.empty()) { std::fprintf(stderr, "usage: %s --model FILE [--prompt N] [--gen N] [--threads N] [--rounds N]\n", argv[0]); return 2; }
  try {
    auto model = Model::load(path);
    StepLimits o;
    o.max_context = prompt_len + gen + 16;
    o.max_tokens = prompt_len;
    KvConfig kvc;
    kvc.n_blocks = (o.max_context + 15) / 16;
    CpuBackend backend(*model, o, kvc, threads);  // F16 KV, the engine's default
    BlockAllocator kv(kvc.n_blocks);
    std::mt19937 rng(1);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    for (auto& t : prompt) t = int32_t(rng() % 100000);

    {  // warm-up: page the weights in, spin up the threads
      Session warm(backend, kv);
      warm.append(std::span<const int32_t>(prompt.data(), 8));
    }
    // Rounds of (prefill, decode, memcpy bandwidth), so each decode figure has
    // a bandwidth measured next to it: on a shared machine the bandwidth moves
    // from minute to minute. Each figure reported is the median over rounds.
    const double bytes_tok = double(model->weight_bytes_per_token());
    std::vector<double> bws, reads, prefill_tps, decode_tps, shares, read_shares;
    double peak_rss_gb = 0;
    for (int round = 0; round < rounds; ++round) {
      Session s(backend, kv);
      auto t0 = Clock::now();
      const float* logits = s.append(prompt);
      const double prefill_s = seconds_since(t0);
      std::vector<double> step_s;
      for (int i = 0; i < gen; ++i) {
        const int32_t id = int32_t(std::max_element(logits, logits + model->desc().vocab) - logits);
        const auto t = Clock::now();
        logits = s.append(std::span<const int32_t>(&id, 1));
        step_s.push_back(seconds_since(t));
      }
      if (round == 0) {  // peak memory of the inference itself, before the copy buffers
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        peak_rss_gb = ru.ru_maxrss / 1e6;
      }
      const Bandwidth band = measure_bandwidth(backend.pool());  // right after this round's decode
      const double bw = band.copy;
      const double tps = 1.0 / median(step_s);
      bws.push_back(bw);
      prefill_tps.push_back(prompt_len / prefill_s);
      decode_tps.push_back(tps);
      reads.push_back(band.read);
      shares.push_back(tps / (bw / bytes_tok));
      read_shares.push_back(tps / (band.read / bytes_tok));
      std::fprintf(stderr, "round %d: memcpy %.1f GB/s, read %.1f GB/s, prefill %.1f tok/s, decode %.2f tok/s (%.0f%% of roofline, %.0f%% of the read stream)\n",
                   round + 1, bw / 1e9, band.read / 1e9, prompt_len / prefill_s, tps, 100.0 * shares.back(), 100.0 * read_shares.back());
    }
    const double bw = median(bws), tps = median(decode_tps), ptps = median(prefill_tps);
    const double gflops = 2.0 * params_per_token(*model) * ptps / 1e9;
    std::printf("| model | threads | rounds | memcpy GB/s | weight GB/token | prefill %d tok/s | prefill GFLOP/s | decode tok/s (median step) | roofline tok/s | %% of roofline (range) | read GB/s | %% of read stream | peak RSS GB | KV GB |\n",
                prompt_len);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %s | %d | %d | %.1f | %.3f | %.1f | %.1f | %.2f | %.2f | %.0f%% (%.0f-%.0f%%) | %.1f | %.0f%% | %.2f | %.3f |\n", path.c_str(),
                backend.pool().size(), rounds, bw / 1e9, bytes_tok / 1e9, ptps, gflops, tps, bw / bytes_tok,
                100.0 * median(shares), 100.0 * *std::min_element(shares.begin(), shares.end()),
                100.0 * *std::max_element(shares.begin(), shares.end()), median(reads) / 1e9, 100.0 * median(read_shares),
                peak_rss_gb, double(backend.block_bytes()) * kvc.n_blocks / 1e9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
