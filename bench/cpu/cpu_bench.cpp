// CPU speed next to this machine's memory-bandwidth roofline, measured in the same run.
//
//   ember_bench_cpu --model FILE.gguf [--prompt 512] [--gen 128] [--threads N]
//
// Roofline: a large memcpy on all threads (bytes read + bytes written per second).
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
#include "engine/session.h"
#include "model/model.h"
#include "util/error.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Median bandwidth of copying 1 GiB between two buffers, split across the pool's threads.
double memcpy_bandwidth(ThreadPool& pool) {
  const size_t n = size_t(1) << 30;
  std::vector<uint8_t> a(n), b(n);
  pool.parallel_for(int64_t(n), [&](int64_t s, int64_t e, int) { std::memset(a.data() + s, int(s & 0x7f) + 1, size_t(e - s)); std::memset(b.data() + s, 3, size_t(e - s)); });
  std::vector<double> bw;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t = Clock::now();
    pool.parallel_for(int64_t(n), [&](int64_t s, int64_t e, int) { std::memcpy(b.data() + s, a.data() + s, size_t(e - s)); });
    bw.push_back(2.0 * double(n) / seconds_since(t));
  }
  std::sort(bw.begin(), bw.end());
  if (b[12345] != a[12345]) throw Error("memcpy check failed");
  return bw[bw.size() / 2];
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
  int prompt_len = 512, gen = 128, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") path = next();
    else if (a == "--prompt") prompt_len = std::stoi(next());
    else if (a == "--gen") gen = std::stoi(next());
    else if (a == "--threads") threads = std::stoi(next());
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (path.empty()) { std::fprintf(stderr, "usage: %s --model FILE [--prompt N] [--gen N] [--threads N]\n", argv[0]); return 2; }
  try {
    auto model = Model::load(path);
    CpuBackendOptions o;
    o.max_context = prompt_len + gen + 16;
    o.max_tokens = prompt_len;
    o.n_threads = threads;
    CpuBackend backend(*model, o);
    KvPool kv(model->desc(), (o.max_context + 15) / 16, 16);
    std::mt19937 rng(1);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    for (auto& t : prompt) t = int32_t(rng() % 100000);

    {  // warm-up: page the weights in, spin up the threads
      Session warm(backend, kv);
      warm.append(std::span<const int32_t>(prompt.data(), 8));
    }
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
    std::sort(step_s.begin(), step_s.end());
    const double decode_tps = 1.0 / step_s[step_s.size() / 2];
    const double bytes_tok = double(model->weight_bytes_per_token());
    // Peak memory of the inference itself, before the bandwidth test's 2 GiB of buffers.
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double bw = memcpy_bandwidth(backend.pool());
    const double roof = bw / bytes_tok;
    const double gflops = 2.0 * params_per_token(*model) * prompt_len / prefill_s / 1e9;
    std::printf("| model | threads | memcpy GB/s | weight GB/token | prefill %d tok/s | prefill GFLOP/s | decode tok/s (median step) | roofline tok/s | %% of roofline | peak RSS GB | KV GB |\n",
                prompt_len);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %s | %d | %.1f | %.3f | %.1f | %.1f | %.2f | %.2f | %.0f%% | %.2f | %.3f |\n", path.c_str(),
                backend.pool().size(), bw / 1e9, bytes_tok / 1e9, prompt_len / prefill_s, gflops, decode_tps, roof,
                100.0 * decode_tps / roof, ru.ru_maxrss / 1e6, kv.bytes() / 1e9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
